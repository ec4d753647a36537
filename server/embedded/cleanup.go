package embedded

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// DueLeases walks the in-memory expiry index from the cursor: the cost is
// the leases returned (and the renewals it re-files, deadlines.go),
// whatever the number of live ones.
func (s *Store) DueLeases(_ context.Context, after *server.LeaseRef, limit int) ([]server.LeaseRef, error) {
	if limit <= 0 {
		limit = server.DefaultPageSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []ref
	now := s.now().UnixNano()
	if after == nil {
		rs = s.idx.due(now, false, 0, "", limit)
	} else {
		rs = s.idx.due(now, true, unixNano(after.ExpiresAt), after.LeaseID, limit)
	}
	out := make([]server.LeaseRef, len(rs))
	for i, r := range rs {
		out[i] = server.LeaseRef{
			LeaseID:   textID(s.idx.slots.text(r)),
			LicenseID: s.idx.licenseOf(r).lic.ID,
			ExpiresAt: timeOf(s.idx.slots.at(r).deadline),
		}
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
		rs   []ref
		ends []ending
	)
	for _, lr := range refs {
		r, ok := s.idx.lookup(lr.LeaseID)
		if !ok {
			continue
		}
		sl := s.idx.slots.at(r)
		if sl.busy() || (lr.LicenseID != "" && lr.LicenseID != s.idx.licenseOf(r).lic.ID) {
			continue
		}
		if sl.live(now.UnixNano()) {
			continue // a heartbeat won the race
		}
		sl.flags |= flagBusy // already here: a lease named twice is taken once
		rs = append(rs, r)
		ends = append(ends, s.expiring(r, now))
	}
	if len(rs) == 0 {
		return nil, nil
	}

	var expired []server.Lease
	err := s.writeBusy(rs, func(tx *bolt.Tx) error {
		expired = expired[:0]
		for _, end := range ends {
			ok, err := endLease(tx, end)
			if err != nil {
				return err
			}
			if ok {
				expired = append(expired, end.lease)
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("expire leases", err) // nothing removed (invariant 6)
	}
	// Stored as ended (now, or already before): the seats are gone.
	for _, r := range rs {
		s.idx.remove(r)
	}
	return expired, nil
}
