package embedded

import (
	"context"
	"crypto/subtle"
	"slices"
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
		if req.Feature != "" {
			res, again, err := s.acquireFeature(lic, req, now)
			if again {
				s.wait()
				continue
			}
			return res, err
		}
		ns := now.UnixNano()
		if err := lic.lic.CheckUsable(now); err != nil {
			return server.AcquireResult{}, err
		}
		borrowing := req.BorrowFor > 0
		dedupe := server.DedupeKey(lic.lic.LeasingStrategy, req.Fingerprint, req.User, req.Hostname)
		if borrowing {
			dedupe = "" // a borrowed lease is never shared
		}
		var replaced []ref // a lease of the same keys whose seat this request takes (replaces)
		if r, ok := s.idx.match(lic, req.IdempotencyKey, dedupe, borrowing, ns); ok {
			if s.idx.slots.at(r).busy() {
				s.wait()
				continue
			}
			if !s.replaces(lic, "", r, &req) {
				return s.renew(r, req.TokenHash, now)
			}
			replaced = []ref{r}
		}
		// The site policy, in the same step as the count. Its
		// SEATS_EXHAUSTED is the count's own, answered below.
		id := server.Identity{User: req.User, Host: req.Hostname}
		pools := []*license{lic}
		v, judged := s.judgePolicy(lic, "", id, pools, &counting{now: ns, gone: replaced}, nil)
		if judged && !v.Grant && v.Reason != server.ReasonSeatsExhausted {
			return server.AcquireResult{}, v.Err("")
		}
		if borrowing {
			if err := lic.lic.CheckBorrow(now, req.BorrowFor, s.idx.borrowedCount(lic, ns), s.idx.returnedCount(lic, ns)); err != nil {
				return server.AcquireResult{}, err
			}
		}
		if n, limit := s.idx.liveCount(lic, ns)-len(replaced), lic.lic.SeatLimit(); n >= limit {
			return server.AcquireResult{}, server.SeatsExhausted(n, limit)
		}
		if _, dup := s.idx.lookup(req.LeaseID); dup {
			return server.AcquireResult{}, server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "lease id already exists")
		}
		// A lapsed lease of the same keys ends with this grant: it could
		// otherwise revive beside the new lease (invariant 4).
		keyed, ok := s.idx.lapsed(lic, req.IdempotencyKey, dedupe, borrowing, ns)
		if !ok {
			s.wait()
			continue
		}
		ending := append(keyed, replaced...)
		// So do the lapsed leases in the way of the policy's caps and
		// reservations, and those whose seats it needs.
		if judged {
			held, ok := s.policyEnds(lic, "", id, pools, lic, v, ns, ending)
			if !ok {
				s.wait()
				continue
			}
			ending = append(ending, held...)
		}
		displaced, ok := s.idx.toDisplace(lic, ns, ending)
		if !ok {
			s.wait()
			continue
		}
		return s.grant(lic, req, dedupe, v.Reservation, now, append(ending, displaced...), replaced)
	}
}

// grant takes a seat for a new lease: counted in memory at once, so that
// concurrent acquisitions see it, and taken back if the write fails. The
// lapsed leases whose seats or keys it takes (displaced) are recorded
// expired in the same transaction: an observed end is final, so none of
// them can revive or count again once another client holds its seat, or
// its client holds a new lease. reservation is the site-policy
// reservation whose seat the lease takes ("": a shared seat). Those of
// displaced that are replaced (live leases of the same keys and another
// identity, policy.go) end as revoked, the others as expired.
func (s *Store) grant(lic *license, req server.AcquireRequest, dedupe, reservation string, now time.Time, displaced, replaced []ref) (server.AcquireResult, error) {
	l := server.Lease{
		ID:              req.LeaseID,
		TokenHash:       req.TokenHash,
		Fingerprint:     req.Fingerprint,
		User:            req.User,
		Hostname:        req.Hostname,
		Metadata:        req.Metadata,
		IdempotencyKey:  req.IdempotencyKey,
		DedupeKey:       dedupe,
		AcquiredAt:      now,
		LastHeartbeatAt: now,
		ExpiresAt:       now.Add(lic.lic.LeaseTTL),
		Reservation:     reservation,
	}
	if req.BorrowFor > 0 {
		l.Borrowed, l.ExpiresAt = true, now.Add(req.BorrowFor)
	}
	if req.Feature != "" {
		l.Feature, l.Version = req.Feature, req.Version
	}
	ends := make([]ending, len(displaced))
	for i, d := range displaced {
		if slices.Contains(replaced, d) {
			ends[i] = s.replacing(d, now, l.ID)
		} else {
			ends[i] = s.expiring(d, now)
		}
	}
	sl, text := compact(&l, 1)
	r := s.idx.add(lic, sl, text)
	w := s.idx.activeWrite(r)
	var borrowed *server.Event
	if l.Borrowed {
		bl := s.idx.lease(r)
		e := server.EventOfLease(server.EventLeaseBorrowed, &bl, now)
		borrowed = &e
	}
	err := s.writeBusy(append(displaced, r), func(tx *bolt.Tx) error {
		for _, end := range ends {
			if _, err := endLease(tx, end); err != nil {
				return err
			}
		}
		if borrowed != nil {
			if err := putEvent(tx, *borrowed); err != nil {
				return err
			}
		}
		return insertLease(tx, w)
	})
	if err != nil {
		s.idx.remove(r)
		return server.AcquireResult{}, s.fail("acquire", err)
	}
	for _, d := range displaced {
		s.idx.remove(d)
	}
	return s.result(r, now, false), nil
}

// renew hands an existing lease back with a new token and deadline (a
// borrowed lease keeps its deadline); a lingering one is taken back by its
// client (server/linger.go), audited in the same write. Like grant, it
// applies in memory first (the lease keeps its seat throughout) and undoes
// the change if the write fails.
func (s *Store) renew(r ref, tokenHash string, now time.Time) (server.AcquireResult, error) {
	sl := s.idx.slots.at(r)
	prev, prevText := *sl, s.idx.slots.text(r)
	var reclaim *server.AuditEntry
	if sl.lingering() {
		reclaim = systemAudit(s.idx.lease(r), server.AuditLeaseReclaim, now, nil)
		sl.flags &^= flagLingering
	}
	s.idx.setToken(r, tokenHash)
	sl.beat = now.UnixNano()
	if !sl.borrowed() {
		s.idx.setDeadline(r, now.Add(s.idx.licenseOf(r).lic.LeaseTTL))
	}
	sl.rev++
	w := s.idx.activeWrite(r)
	err := s.writeBusy([]ref{r}, func(tx *bolt.Tx) error {
		if reclaim != nil {
			if err := putAll(auditPut(tx, *reclaim)); err != nil {
				return err
			}
		}
		_, err := updateLease(tx, w)
		return err
	})
	if err != nil {
		s.idx.moveDeadline(s.idx.licenseOf(r), r, prev.deadline)
		sl.token, sl.beat, sl.rev = prev.token, prev.beat, prev.rev
		sl.flags = sl.flags&^(flagTokenText|flagLingering) | prev.flags&(flagTokenText|flagLingering)
		s.idx.slots.setText(r, prevText)
		return server.AcquireResult{}, s.fail("acquire", err)
	}
	sl.flags &^= flagDirty // the write carried every heartbeat so far
	return s.result(r, now, true), nil
}

// result is Acquire's answer; a lease of a grant names its license and
// the grant, and counts the grant's seats.
func (s *Store) result(r ref, now time.Time, existing bool) server.AcquireResult {
	pool := s.idx.licenseOf(r)
	res := server.AcquireResult{
		Lease:      s.idx.lease(r),
		License:    answerLicense(pool.lic),
		SeatsInUse: s.idx.liveCount(pool, now.UnixNano()),
		Existing:   existing,
	}
	if pool.parent != nil {
		g := pool.grant
		res.License, res.Grant = answerLicense(pool.parent.lic), &g
	}
	return res
}

func (s *Store) Heartbeat(_ context.Context, leaseID, tokenHash string) (server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, found, err := s.ownLease(leaseID, tokenHash)
	if err != nil {
		return server.Lease{}, err
	}
	if !found {
		return server.Lease{}, s.endedError(leaseID, tokenHash)
	}
	now := s.now()
	sl := s.idx.slots.at(r)
	lic := s.idx.licenseOf(r)
	if sl.lingering() {
		return server.Lease{}, server.ErrLeaseReleased // released: changes nothing, never revived
	}
	if !sl.live(now.UnixNano()) && !s.revivable(r, now) {
		return server.Lease{}, s.observeExpiry(r, now)
	}
	if sl.borrowed() {
		return server.Lease{}, server.ErrLeaseBorrowed
	}
	if err := lic.lic.CheckUsable(now); err != nil {
		return server.Lease{}, err
	}
	sl.beat = now.UnixNano()
	s.idx.setDeadline(r, now.Add(lic.lic.LeaseTTL))
	sl.rev++
	s.idx.markDirty(r) // write-behind: the flusher stores it
	return s.idx.ownLease(r, tokenHash), nil
}

// revivable reports whether a lease past its deadline may come back: within
// the license's revival window, only if a seat is free (invariant 3), and
// only if the license's site policy would let it take that seat
// (revivalAllowed): a revival never breaks a cap or a reservation.
func (s *Store) revivable(r ref, now time.Time) bool {
	sl, lic := s.idx.slots.at(r), s.idx.licenseOf(r)
	l := &lic.lic
	return !sl.borrowed() && l.RevivalWindow > 0 &&
		now.UnixNano() < sl.deadline+int64(l.RevivalWindow) &&
		s.idx.liveCount(lic, now.UnixNano()) < l.SeatLimit() &&
		s.revivalAllowed(lic, r, now.UnixNano())
}

func (s *Store) Release(_ context.Context, leaseID, tokenHash string) (server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, found, err := s.ownLease(leaseID, tokenHash)
	if err != nil {
		return server.Lease{}, err
	}
	if !found {
		// Ended already: releasing a released lease is a no-op.
		if err := s.endedError(leaseID, tokenHash); server.ErrorReason(err) != server.ReasonLeaseReleased {
			return server.Lease{}, err
		}
		return s.storedLease(leaseID)
	}
	now := s.now()
	sl := s.idx.slots.at(r)
	switch {
	case sl.lingering() && sl.live(now.UnixNano()):
		return s.idx.lease(r), nil // released already: unchanged
	case sl.lingering():
		return s.end(r, s.expiring(r, now)) // its linger lapsed: it ends, released
	case !sl.live(now.UnixNano()):
		return server.Lease{}, s.observeExpiry(r, now)
	case sl.borrowed():
		if !s.idx.licenseOf(r).lic.AllowEarlyReturn {
			return server.Lease{}, server.BorrowedNotReturnable(time.Unix(0, sl.deadline))
		}
		return s.returnEarly(r, now)
	}
	if d := s.lingerOf(r); d > 0 {
		return s.linger(r, now, d)
	}
	return s.end(r, s.releasing(r, now))
}

// lingerOf is how long a release of lease r lingers under its license's
// site policy now (0: it ends).
func (s *Store) lingerOf(r ref) time.Duration {
	pool := s.idx.licenseOf(r)
	return pool.licenseOf().lic.Policy.LingerFor(pool.feature())
}

// linger releases lease r without ending it (server/linger.go): it keeps
// its seat until now+d, its release written at once (the write-behind
// would give it slack after a crash). Applied in memory first, undone if
// the write fails, as renew.
func (s *Store) linger(r ref, now time.Time, d time.Duration) (server.Lease, error) {
	sl := s.idx.slots.at(r)
	prev := *sl
	sl.flags |= flagLingering
	sl.beat = now.UnixNano()
	s.idx.setDeadline(r, now.Add(d))
	sl.rev++
	w := s.idx.activeWrite(r)
	err := s.writeBusy([]ref{r}, func(tx *bolt.Tx) error {
		_, err := updateLease(tx, w)
		return err
	})
	if err != nil {
		s.idx.moveDeadline(s.idx.licenseOf(r), r, prev.deadline)
		sl.beat, sl.rev = prev.beat, prev.rev
		sl.flags &^= flagLingering
		return server.Lease{}, s.fail("release", err)
	}
	sl.flags &^= flagDirty // the write carried every heartbeat so far
	return s.idx.lease(r), nil
}

// observeExpiry answers a call that found the lease past its deadline
// (and not revived): the expiry is recorded before the caller is told, so
// that the lease never revives (observed ends are final).
func (s *Store) observeExpiry(r ref, now time.Time) error {
	if _, err := s.end(r, s.expiring(r, now)); err != nil {
		return err
	}
	return server.ErrLeaseExpired
}

func (s *Store) Revoke(_ context.Context, tenantID, leaseID string) (server.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		r, ok := s.idx.lookup(leaseID)
		if !ok {
			l, err := s.storedLease(leaseID)
			if err == nil && l.TenantID != tenantID {
				return server.Lease{}, server.ErrLeaseNotFound
			}
			return l, err // already ended: unchanged
		}
		if s.idx.licenseOf(r).lic.TenantID != tenantID {
			return server.Lease{}, server.ErrLeaseNotFound
		}
		if s.idx.slots.at(r).busy() {
			s.wait()
			continue
		}
		return s.end(r, s.revoking(r, s.now()))
	}
}

// RevokeUnconfirmed judges the lease under the store's lock, which every
// heartbeat takes too: one acknowledged before it is seen, one after it
// finds the lease revoked.
func (s *Store) RevokeUnconfirmed(_ context.Context, granted server.Lease) (server.Lease, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		r, ok := s.idx.lookup(granted.ID)
		if !ok {
			l, err := s.storedLease(granted.ID)
			if err == nil && l.TenantID != granted.TenantID {
				return server.Lease{}, false, server.ErrLeaseNotFound
			}
			return l, false, err // ended: unchanged
		}
		if s.idx.licenseOf(r).lic.TenantID != granted.TenantID {
			return server.Lease{}, false, server.ErrLeaseNotFound
		}
		if s.idx.slots.at(r).busy() {
			s.wait()
			continue
		}
		if l := s.idx.lease(r); l.Lingering || !server.Unconfirmed(granted, l) {
			return l, false, nil
		}
		l, err := s.end(r, s.revoking(r, s.now()))
		return l, err == nil, err
	}
}

// end stores the end of a lease, then frees its seat in memory: a failed
// write frees nothing.
func (s *Store) end(r ref, end ending) (server.Lease, error) {
	err := s.writeBusy([]ref{r}, func(tx *bolt.Tx) error {
		_, err := endLease(tx, end)
		return err
	})
	if err != nil {
		return server.Lease{}, s.fail("end lease", err)
	}
	s.idx.remove(r)
	return end.lease, nil
}

func (s *Store) GetLease(_ context.Context, tenantID, leaseID string) (server.Lease, error) {
	s.mu.Lock()
	r, ok := s.idx.lookup(leaseID)
	var l server.Lease
	if ok {
		l = s.idx.lease(r)
	}
	s.mu.Unlock()
	if !ok {
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
	p, err := s.pool(tenantID, licenseID)
	if err != nil {
		return 0, err
	}
	return s.idx.liveCount(p, s.now().UnixNano()), nil
}

func (s *Store) SeatsInUseOf(_ context.Context, tenantID string, licenseIDs []string) (map[string]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UnixNano()
	out := make(map[string]int, len(licenseIDs))
	for _, id := range licenseIDs {
		if p, err := s.pool(tenantID, id); err == nil {
			out[id] = s.idx.liveCount(p, now)
		}
	}
	return out, nil
}

// ownLease finds an active lease by id and checks the token before
// anything else about it is revealed. It waits out writes in flight.
// found is false, with no error, when the lease exists but has ended (or
// never held a seat); the caller asks the disk. Call with s.mu held.
func (s *Store) ownLease(leaseID, tokenHash string) (r ref, found bool, err error) {
	for {
		r, ok := s.idx.lookup(leaseID)
		if !ok {
			return 0, false, nil
		}
		if !s.idx.tokenMatches(r, tokenHash) {
			return 0, false, server.ErrLeaseToken
		}
		if !s.idx.slots.at(r).busy() {
			return r, true, nil
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

// storedLease reads an ended lease from disk (an active one is in
// memory). Safe with or without s.mu held: database reads never wait for
// the lock.
func (s *Store) storedLease(id string) (server.Lease, error) {
	var rec leaseRecord
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLeases).Get([]byte(id))
		if v == nil {
			return server.ErrLeaseNotFound
		}
		var err error
		rec, err = decodeHistory([]byte(id), v)
		return err
	})
	if err != nil {
		return server.Lease{}, s.fail("get lease", err)
	}
	return rec.Lease, nil
}

func tokenMatches(l server.Lease, tokenHash string) bool {
	return subtle.ConstantTimeCompare([]byte(l.TokenHash), []byte(tokenHash)) == 1
}
