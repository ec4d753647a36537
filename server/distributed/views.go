package distributed

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Views read the record and overlay the newer values the live state holds
// (peek, rebuild.go).

// readLease reads the record of a lease. ErrLeaseNotFound if none.
func (s *Store) readLease(ctx context.Context, leaseID string) (server.Lease, error) {
	r, err := s.rec.Lease(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	s.leaseInfo.Put(r.ID, infoOf(&r.Lease))
	return r.Lease, nil
}

// tenantLease reads the record of a lease of the tenant: ErrLeaseNotFound
// for another tenant's, as for none.
func (s *Store) tenantLease(ctx context.Context, tenantID, leaseID string) (server.Lease, error) {
	l, err := s.readLease(ctx, leaseID)
	if err == nil && l.TenantID != tenantID {
		return server.Lease{}, server.ErrLeaseNotFound
	}
	return l, err
}

// leaseInfoOf returns the fixed fields of a lease, cached.
func (s *Store) leaseInfoOf(ctx context.Context, leaseID string) (*leaseInfo, error) {
	if i, ok := s.leaseInfo.Get(leaseID); ok {
		return i, nil
	}
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return nil, err
	}
	return infoOf(&l), nil
}

func (s *Store) GetLease(ctx context.Context, tenantID, leaseID string) (server.Lease, error) {
	l, err := s.tenantLease(ctx, tenantID, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	if l.State != server.LeaseActive {
		return l, nil
	}
	vals, _, err := s.peek(ctx, l.LicenseID, leaseID)
	if err != nil {
		return server.Lease{}, s.fail("get lease", err)
	}
	if v, ok := vals[leaseID]; ok {
		l = overlay(l, v)
	}
	return l, nil
}

// ListLeases lists a license's leases, its grants' included (a grant's
// id: that grant's only).
func (s *Store) ListLeases(ctx context.Context, tenantID, licenseID string, state server.LeaseState, p server.Page) ([]server.Lease, string, error) {
	if _, err := s.rec.TenantPool(ctx, tenantID, licenseID); err != nil {
		return nil, "", err
	}
	pools := []string{licenseID}
	if !server.IsGrantID(licenseID) {
		var err error
		if pools, err = s.rec.PoolsOf(ctx, licenseID, true); err != nil {
			return nil, "", err
		}
	}
	page, next, err := s.rec.ListSessions(ctx, pools, state, p)
	if err != nil {
		return nil, "", err
	}
	active := map[string][]string{} // pool -> its active leases of the page
	for _, l := range page {
		if l.State == server.LeaseActive {
			active[l.LicenseID] = append(active[l.LicenseID], l.ID)
		}
	}
	for pool, ids := range active {
		vals, _, err := s.peek(ctx, pool, ids...)
		if err != nil {
			return nil, "", s.fail("list leases", err)
		}
		for i, l := range page {
			if v, ok := vals[l.ID]; ok && l.LicenseID == pool {
				page[i] = overlay(l, v)
			}
		}
	}
	return page, next, nil
}

func (s *Store) SeatsInUse(ctx context.Context, tenantID, licenseID string) (int, error) {
	var c live.Count
	err := s.withLiveState(ctx, licenseID, func() (err error) {
		c, err = s.live.Count(ctx, licenseID)
		return err
	})
	if err != nil {
		return 0, s.fail("seats in use", err)
	}
	if c.TenantID != tenantID || c.Deleted {
		return 0, server.ErrLicenseNotFound
	}
	return c.InUse, nil
}

// seatsInUseFanOut bounds the live-state counts SeatsInUseOf runs at once.
const seatsInUseFanOut = 8

func (s *Store) SeatsInUseOf(ctx context.Context, tenantID string, licenseIDs []string) (map[string]int, error) {
	var (
		mu  sync.Mutex
		out = make(map[string]int, len(licenseIDs))
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(seatsInUseFanOut)
	for _, id := range licenseIDs {
		g.Go(func() error {
			n, err := s.SeatsInUse(gctx, tenantID, id)
			if server.ErrorCode(err) == server.ENOTFOUND {
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			out[id] = n
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}
