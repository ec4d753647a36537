package embedded

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// DueLeases walks the in-memory expiry index from the cursor: the cost is
// the leases returned, whatever the number of live ones.
func (s *Store) DueLeases(_ context.Context, after *server.LeaseRef, limit int) ([]server.LeaseRef, error) {
	if limit <= 0 {
		limit = server.DefaultPageSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UnixNano()
	var from deadlineItem
	if after != nil {
		from = deadlineItem{at: after.ExpiresAt.UnixNano(), id: after.LeaseID}
	}
	var out []server.LeaseRef
	walk := func(it deadlineItem) bool {
		if it.at > now || len(out) == limit {
			return false
		}
		if after != nil && !lessDeadline(from, it) {
			return true // the cursor itself
		}
		out = append(out, server.LeaseRef{LeaseID: it.id, LicenseID: it.e.lease.LicenseID, ExpiresAt: it.e.lease.ExpiresAt})
		return true
	}
	if after == nil {
		s.idx.expiry.Ascend(walk)
	} else {
		s.idx.expiry.AscendGreaterOrEqual(from, walk)
	}
	return out, nil
}

// ExpireLeases ends the given leases that are still due, in one
// transaction. A lease another write holds (a release, a renewal, another
// cleaner) is skipped: its fate is being decided elsewhere, and if it is
// still due afterwards the next pass takes it.
func (s *Store) ExpireLeases(_ context.Context, refs []server.LeaseRef) ([]server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var (
		es   []*entry
		ends []ending
	)
	for _, ref := range refs {
		e := s.idx.leases[ref.LeaseID]
		if e == nil || e.busy || (ref.LicenseID != "" && ref.LicenseID != e.lease.LicenseID) {
			continue
		}
		if now.Before(e.lease.ExpiresAt) {
			continue // a heartbeat won the race
		}
		e.busy = true // already here: a lease named twice is taken once
		es = append(es, e)
		ends = append(ends, expiring(e, now))
	}
	if len(es) == 0 {
		return nil, nil
	}

	var expired []server.Lease
	err := s.writeBusy(es, func(tx *bolt.Tx) error {
		expired = expired[:0]
		for _, end := range ends {
			ok, err := endLease(tx, end)
			if err != nil {
				return err
			}
			if ok {
				expired = append(expired, cloneLease(end.rec.Lease))
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("expire leases", err) // nothing removed (invariant 6)
	}
	// Stored as ended (now, or already before): the seats are gone.
	for _, e := range es {
		s.idx.removeLease(e)
	}
	return expired, nil
}
