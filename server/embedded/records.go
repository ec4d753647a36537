package embedded

import (
	"bytes"
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// UsageEvents lists a pool's usage events (a license's base pool, or a
// grant's) by end time. A deleted license's history stays readable.
func (s *Store) UsageEvents(_ context.Context, tenantID, licenseID string) ([]server.UsageEvent, error) {
	if _, err := s.historyOf(tenantID, licenseID, ""); err != nil {
		return nil, err
	}
	return scanAll[server.UsageEvent](s, "usage events", bucketUsage, prefix(licenseID))
}

// CleanupEvents lists a pool's cleanup events by cleanup time.
func (s *Store) CleanupEvents(_ context.Context, tenantID, licenseID string) ([]server.CleanupEvent, error) {
	if _, err := s.historyOf(tenantID, licenseID, ""); err != nil {
		return nil, err
	}
	return scanAll[server.CleanupEvent](s, "cleanup events", bucketCleanupLicense, prefix(licenseID))
}

func (s *Store) AppendAudit(_ context.Context, e server.AuditEntry) error {
	err := s.commit.write(func(tx *bolt.Tx) error {
		p := auditPut(tx, e)
		return p.b.Put(p.k, p.v)
	})
	if err != nil {
		return s.fail("append audit", err)
	}
	return nil
}

func (s *Store) AuditLog(_ context.Context, tenantID string, p server.Page) ([]server.AuditEntry, string, error) {
	var out []server.AuditEntry
	var next string
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, next, err = scanPage(tx.Bucket(bucketAudit).Cursor(), prefix(tenantID), p, false, func(_, v []byte) (server.AuditEntry, bool, error) {
			e, err := decode[server.AuditEntry](v)
			return e, true, err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail("audit log", err)
	}
	return out, next, nil
}

func (s *Store) ListUsageEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.UsageEvent, string, error) {
	return listEvents(s, "usage events", bucketUsageTenant, bucketUsage, r, p, func(e *server.UsageEvent) string { return e.Feature })
}

func (s *Store) ListCleanupEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.CleanupEvent, string, error) {
	return listEvents(s, "cleanup events", bucketCleanupTenant, bucketCleanupLicense, r, p, func(e *server.CleanupEvent) string { return e.Feature })
}

func (s *Store) ListAuditEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.AuditEntry, string, error) {
	return listRange(s, "audit events", r.TenantID, []string{r.TenantID}, bucketAudit, r, p, func(*server.AuditEntry) bool { return true })
}

// listEvents is an event list: of the tenant (byTenant), or of a
// license's pools or one grant's (byPool), only of r.Feature when set.
func listEvents[T any](s *Store, what string, byTenant, byPool []byte, r server.EventRange, p server.Page, featureOf func(*T) string) ([]T, string, error) {
	keep := func(e *T) bool { return r.Feature == "" || featureOf(e) == r.Feature }
	if r.LicenseID == "" {
		return listRange(s, what, r.TenantID, []string{r.TenantID}, byTenant, r, p, keep)
	}
	ids, err := s.historyOf(r.TenantID, r.LicenseID, r.Feature)
	if err != nil {
		return nil, "", err
	}
	return listRange(s, what, r.LicenseID, ids, byPool, r, p, keep)
}

// listRange reads one page of scanRange over the scopes ids of bucket,
// walked as one under scope.
func listRange[T any](s *Store, what, scope string, ids []string, bucket []byte, r server.EventRange, p server.Page, keep func(*T) bool) ([]T, string, error) {
	var (
		out  []T
		next string
	)
	err := s.view(func(tx *bolt.Tx) error {
		c, _ := poolsCursor(scope, ids, func() cursor { return tx.Bucket(bucket).Cursor() })
		var err error
		out, next, err = scanRange(c, scope, r, p, func(v []byte) (T, bool, error) {
			e, err := decode[T](v)
			return e, err == nil && keep(&e), err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail(what, err)
	}
	return out, next, nil
}

// historyOf checks that the license (or grant) is, or was, the tenant's,
// and returns the pools whose history is its: a license's own and its
// grants' (deleted ones too), a grant's own; only the grants of feature
// when set.
func (s *Store) historyOf(tenantID, licenseID, feature string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.idx.licenses[licenseID]
	if p == nil || p.creating || p.lic.TenantID != tenantID {
		return nil, server.ErrLicenseNotFound
	}
	pools := []*license{p}
	if p.parent == nil {
		pools = p.pools()
	}
	if feature != "" {
		pools = slices.DeleteFunc(pools, func(p *license) bool { return p.parent == nil || p.grant.Feature != feature })
	}
	return poolIDs(pools), nil
}

// readOne decodes the value at id in bucket; missing when there is none.
func readOne[T any](s *Store, what string, bucket []byte, id string, missing error) (T, error) {
	var out T
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get([]byte(id))
		if v == nil {
			return missing
		}
		var err error
		out, err = decode[T](v)
		return err
	})
	if err != nil {
		var zero T
		return zero, s.fail(what, err)
	}
	return out, nil
}

// scanAll decodes every value under pfx, in key order.
func scanAll[T any](s *Store, what string, bucket, pfx []byte) ([]T, error) {
	var out []T
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
			item, err := decode[T](v)
			if err != nil {
				return err
			}
			out = append(out, item)
		}
		return nil
	})
	if err != nil {
		return nil, s.fail(what, err)
	}
	return out, nil
}
