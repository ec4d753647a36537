package embedded

import (
	"bytes"
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// UsageEvents lists a license's usage events by end time. A deleted
// license's history stays readable.
func (s *Store) UsageEvents(_ context.Context, tenantID, licenseID string) ([]server.UsageEvent, error) {
	if err := s.historyOf(tenantID, licenseID); err != nil {
		return nil, err
	}
	return scanAll[server.UsageEvent](s, "usage events", bucketUsage, prefix(licenseID))
}

// CleanupEvents lists a license's cleanup events by cleanup time.
func (s *Store) CleanupEvents(_ context.Context, tenantID, licenseID string) ([]server.CleanupEvent, error) {
	if err := s.historyOf(tenantID, licenseID); err != nil {
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
	bucket, scope := bucketUsageTenant, r.TenantID
	if r.LicenseID != "" {
		if err := s.historyOf(r.TenantID, r.LicenseID); err != nil {
			return nil, "", err
		}
		bucket, scope = bucketUsage, r.LicenseID
	}
	return listRange[server.UsageEvent](s, "usage events", bucket, scope, r, p)
}

func (s *Store) ListCleanupEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.CleanupEvent, string, error) {
	bucket, scope := bucketCleanupTenant, r.TenantID
	if r.LicenseID != "" {
		if err := s.historyOf(r.TenantID, r.LicenseID); err != nil {
			return nil, "", err
		}
		bucket, scope = bucketCleanupLicense, r.LicenseID
	}
	return listRange[server.CleanupEvent](s, "cleanup events", bucket, scope, r, p)
}

func (s *Store) ListAuditEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.AuditEntry, string, error) {
	return listRange[server.AuditEntry](s, "audit events", bucketAudit, r.TenantID, r, p)
}

// listRange reads one page of scanRange.
func listRange[T any](s *Store, what string, bucket []byte, scope string, r server.EventRange, p server.Page) ([]T, string, error) {
	var (
		out  []T
		next string
	)
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, next, err = scanRange(tx.Bucket(bucket), scope, r, p, decode[T])
		return err
	})
	if err != nil {
		return nil, "", s.fail(what, err)
	}
	return out, next, nil
}

// historyOf checks that the license is, or was, the tenant's.
func (s *Store) historyOf(tenantID, licenseID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic := s.idx.licenses[licenseID]
	if lic == nil || lic.creating || lic.lic.TenantID != tenantID {
		return server.ErrLicenseNotFound
	}
	return nil
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
