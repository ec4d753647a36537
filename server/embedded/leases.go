package embedded

import (
	"context"
	"crypto/subtle"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

func (s *Store) Acquire(_ context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		lic := s.idx.keys[req.LicenseKey]
		if lic == nil {
			return server.AcquireResult{}, server.ErrLicenseNotFound
		}
		if lic.busy || lic.creating {
			s.wait()
			continue
		}
		now := s.now()
		if err := lic.lic.CheckUsable(now); err != nil {
			return server.AcquireResult{}, err
		}
		borrowing := req.BorrowFor > 0
		dedupe := server.DedupeKey(lic.lic.LeasingStrategy, req.Fingerprint, req.User, req.Hostname)
		if borrowing {
			dedupe = "" // a borrowed lease is never shared
		}
		if e := lic.match(req.IdempotencyKey, dedupe, borrowing, now); e != nil {
			if e.busy {
				s.wait()
				continue
			}
			return s.renew(e, req.TokenHash, now)
		}
		if borrowing {
			if err := lic.lic.CheckBorrow(req.BorrowFor, lic.borrowedCount(now)); err != nil {
				return server.AcquireResult{}, err
			}
		}
		if n, limit := lic.liveCount(now), lic.lic.SeatLimit(); n >= limit {
			return server.AcquireResult{}, server.SeatsExhausted(n, limit)
		}
		if _, dup := s.idx.leases[req.LeaseID]; dup {
			return server.AcquireResult{}, server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "lease id already exists")
		}
		displaced, ok := lic.toDisplace(now)
		if !ok {
			s.wait()
			continue
		}
		return s.grant(lic, req, dedupe, now, displaced)
	}
}

// grant takes a seat for a new lease: counted in memory at once, so that
// concurrent acquisitions see it, and taken back if the write fails. The
// lapsed leases whose seats it takes (displaced) are recorded expired in
// the same transaction: an observed end is final, so none of them can
// revive or count again once another client holds its seat.
func (s *Store) grant(lic *license, req server.AcquireRequest, dedupe string, now time.Time, displaced []*entry) (server.AcquireResult, error) {
	e := &entry{lic: lic, rev: 1, lease: server.Lease{
		ID:              req.LeaseID,
		LicenseID:       lic.lic.ID,
		TenantID:        lic.lic.TenantID,
		TokenHash:       req.TokenHash,
		Fingerprint:     req.Fingerprint,
		User:            req.User,
		Hostname:        req.Hostname,
		Metadata:        nilIfEmpty(req.Metadata),
		IdempotencyKey:  req.IdempotencyKey,
		DedupeKey:       dedupe,
		State:           server.LeaseActive,
		AcquiredAt:      now,
		LastHeartbeatAt: now,
		ExpiresAt:       now.Add(lic.lic.LeaseTTL),
	}}
	if req.BorrowFor > 0 {
		e.lease.Borrowed, e.lease.ExpiresAt = true, now.Add(req.BorrowFor)
	}
	ends := make([]ending, len(displaced))
	for i, d := range displaced {
		ends[i] = expiring(d, now)
	}
	s.idx.addLease(e)
	rec := e.record()
	err := s.writeBusy(append(displaced, e), func(tx *bolt.Tx) error {
		for _, end := range ends {
			if _, err := endLease(tx, end); err != nil {
				return err
			}
		}
		return insertLease(tx, rec)
	})
	if err != nil {
		s.idx.removeLease(e)
		return server.AcquireResult{}, s.fail("acquire", err)
	}
	for _, d := range displaced {
		s.idx.removeLease(d)
	}
	return s.result(e, now, false), nil
}

// renew hands an existing lease back with a new token and deadline (a
// borrowed lease keeps its deadline). Like grant, it applies in memory
// first (the lease keeps its seat throughout) and undoes the change if the
// write fails.
func (s *Store) renew(e *entry, tokenHash string, now time.Time) (server.AcquireResult, error) {
	prev := e.lease
	e.lease.TokenHash = tokenHash
	e.lease.LastHeartbeatAt = now
	if !e.lease.Borrowed {
		s.idx.setDeadline(e, now.Add(e.lic.lic.LeaseTTL))
	}
	e.rev++
	rec := e.record()
	err := s.writeBusy([]*entry{e}, func(tx *bolt.Tx) error {
		_, err := updateLease(tx, rec)
		return err
	})
	if err != nil {
		s.idx.setDeadline(e, prev.ExpiresAt)
		e.lease = prev
		return server.AcquireResult{}, s.fail("acquire", err)
	}
	delete(s.idx.dirty, e) // the write carried every heartbeat so far
	return s.result(e, now, true), nil
}

func (s *Store) result(e *entry, now time.Time, existing bool) server.AcquireResult {
	return server.AcquireResult{
		Lease:      cloneLease(e.lease),
		License:    cloneLicense(e.lic.lic),
		SeatsInUse: e.lic.liveCount(now),
		Existing:   existing,
	}
}

func (s *Store) Heartbeat(_ context.Context, leaseID, tokenHash string) (server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.ownLease(leaseID, tokenHash)
	if err != nil {
		return server.Lease{}, err
	}
	if e == nil {
		return server.Lease{}, s.endedError(leaseID, tokenHash)
	}
	now := s.now()
	lic := e.lic
	if !now.Before(e.lease.ExpiresAt) && !s.revivable(e, now) {
		return server.Lease{}, s.observeExpiry(e, now)
	}
	if e.lease.Borrowed {
		return server.Lease{}, server.ErrLeaseBorrowed
	}
	if err := lic.lic.CheckUsable(now); err != nil {
		return server.Lease{}, err
	}
	e.lease.LastHeartbeatAt = now
	s.idx.setDeadline(e, now.Add(lic.lic.LeaseTTL))
	e.rev++
	s.idx.dirty[e] = struct{}{} // write-behind: the flusher stores it
	return cloneLease(e.lease), nil
}

// revivable reports whether a lease past its deadline may come back: within
// the license's revival window and only if a seat is free (invariant 3).
func (s *Store) revivable(e *entry, now time.Time) bool {
	l := &e.lic.lic
	return !e.lease.Borrowed && l.RevivalWindow > 0 &&
		now.Before(e.lease.ExpiresAt.Add(l.RevivalWindow)) &&
		e.lic.liveCount(now) < l.SeatLimit()
}

func (s *Store) Release(_ context.Context, leaseID, tokenHash string) (server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.ownLease(leaseID, tokenHash)
	if err != nil {
		return server.Lease{}, err
	}
	if e == nil {
		// Ended already: releasing a released lease is a no-op.
		if err := s.endedError(leaseID, tokenHash); server.ErrorReason(err) != server.ReasonLeaseReleased {
			return server.Lease{}, err
		}
		return s.storedLease(leaseID)
	}
	now := s.now()
	if !e.lease.Live(now) {
		return server.Lease{}, s.observeExpiry(e, now)
	}
	return s.end(e, releasing(e, now))
}

// observeExpiry answers a call that found the lease past its deadline
// (and not revived): the expiry is recorded before the caller is told, so
// that the lease never revives (observed ends are final).
func (s *Store) observeExpiry(e *entry, now time.Time) error {
	if _, err := s.end(e, expiring(e, now)); err != nil {
		return err
	}
	return server.ErrLeaseExpired
}

func (s *Store) Revoke(_ context.Context, tenantID, leaseID string) (server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		e := s.idx.leases[leaseID]
		if e == nil {
			l, err := s.storedLease(leaseID)
			if err == nil && l.TenantID != tenantID {
				return server.Lease{}, server.ErrLeaseNotFound
			}
			return l, err // already ended: unchanged
		}
		if e.lease.TenantID != tenantID {
			return server.Lease{}, server.ErrLeaseNotFound
		}
		if e.busy {
			s.wait()
			continue
		}
		return s.end(e, revoking(e, s.now()))
	}
}

// end stores the end of a lease, then frees its seat in memory: a failed
// write frees nothing.
func (s *Store) end(e *entry, end ending) (server.Lease, error) {
	err := s.writeBusy([]*entry{e}, func(tx *bolt.Tx) error {
		_, err := endLease(tx, end)
		return err
	})
	if err != nil {
		return server.Lease{}, s.fail("end lease", err)
	}
	s.idx.removeLease(e)
	return cloneLease(end.rec.Lease), nil
}

func (s *Store) GetLease(_ context.Context, tenantID, leaseID string) (server.Lease, error) {
	s.mu.Lock()
	e := s.idx.leases[leaseID]
	var l server.Lease
	if e != nil {
		l = cloneLease(e.lease)
	}
	s.mu.Unlock()
	if e == nil {
		var err error
		if l, err = s.storedLease(leaseID); err != nil {
			return server.Lease{}, err
		}
	}
	if l.TenantID != tenantID {
		return server.Lease{}, server.ErrLeaseNotFound
	}
	return l, nil
}

func (s *Store) SeatsInUse(_ context.Context, tenantID, licenseID string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, err := s.license(tenantID, licenseID)
	if err != nil {
		return 0, err
	}
	return lic.liveCount(s.now()), nil
}

func (s *Store) SeatsInUseOf(_ context.Context, tenantID string, licenseIDs []string) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make(map[string]int, len(licenseIDs))
	for _, id := range licenseIDs {
		if lic, err := s.license(tenantID, id); err == nil {
			out[id] = lic.liveCount(now)
		}
	}
	return out, nil
}

// ownLease finds an active lease by id and checks the token before
// anything else about it is revealed. It waits out writes in flight. A nil
// entry with no error means the lease exists but has ended (or never held
// a seat); the caller asks the disk. Call with s.mu held.
func (s *Store) ownLease(leaseID, tokenHash string) (*entry, error) {
	for {
		e := s.idx.leases[leaseID]
		if e == nil {
			return nil, nil
		}
		if !tokenMatches(e.lease, tokenHash) {
			return nil, server.ErrLeaseToken
		}
		if !e.busy {
			return e, nil
		}
		s.wait()
	}
}

// endedError is the error a heartbeat on a lease that is not active in
// memory gets, after the same token check.
func (s *Store) endedError(leaseID, tokenHash string) error {
	l, err := s.storedLease(leaseID)
	if err != nil {
		return err
	}
	if !tokenMatches(l, tokenHash) {
		return server.ErrLeaseToken
	}
	return l.State.EndError()
}

// storedLease reads a lease from disk. Safe with or without s.mu held:
// database reads never wait for the lock.
func (s *Store) storedLease(id string) (server.Lease, error) {
	rec, err := readOne[leaseRecord](s, "get lease", bucketLeases, id, server.ErrLeaseNotFound)
	return rec.Lease, err
}

func tokenMatches(l server.Lease, tokenHash string) bool {
	return subtle.ConstantTimeCompare([]byte(l.TokenHash), []byte(tokenHash)) == 1
}
