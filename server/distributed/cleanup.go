package distributed

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Cleanup: DueLeases finds the leases past their deadline in the live
// state (the expiry hint, package live), ExpireLeases takes them out of the
// live state, records their expiry, then forgets them in the live state.
// The leader's reconciliation re-derives what the hint can lose from the
// record, and hands the cleaner orphans: active in the record, unknown to
// the live state.

// reconcileLimit bounds the leases one reconciliation reads.
const reconcileLimit = 10_000

// DueLeases lists the leases due now (live.Redis.DueLeases); the first
// page of a pass (after == nil) reconciles the hint with the record first,
// at most every reconcileEvery.
func (s *Store) DueLeases(ctx context.Context, after *server.LeaseRef, limit int) ([]server.LeaseRef, error) {
	if limit <= 0 {
		limit = server.DefaultPageSize
	}
	now, err := s.live.Now(ctx)
	if err != nil {
		return nil, s.fail("due leases", err)
	}
	if after == nil {
		s.maybeReconcile(ctx, now)
	}
	refs, err := s.live.DueLeases(ctx, now, after, limit, s.dueOfLicense)
	if err != nil {
		return nil, s.fail("due leases", err)
	}
	return refs, nil
}

// dueOfLicense lists the due leases of one license after the cursor, building its
// live state if it is missing, and the earliest deadline it holds (-1:
// none, or the license is gone).
func (s *Store) dueOfLicense(ctx context.Context, licenseID string, now time.Time, after *server.LeaseRef, limit int) (refs []server.LeaseRef, first int64, err error) {
	err = s.withLiveState(ctx, licenseID, func() (err error) {
		refs, first, err = s.live.Due(ctx, licenseID, now, after, limit)
		return err
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return nil, -1, nil
	}
	return refs, first, err
}

// maybeReconcile re-derives expiry hints from PostgreSQL, at most every
// s.reconcileEvery: the active leases whose recorded deadline has passed. It
// repairs what the hint can lose (a crash between a grant and its hint, a
// Redis restart) and hands the cleaner orphans (adopt.lua). Failures are
// logged; the next pass tries again.
func (s *Store) maybeReconcile(ctx context.Context, now time.Time) {
	s.reconcileMu.Lock()
	if !s.lastReconcile.IsZero() && time.Since(s.lastReconcile) < s.reconcileEvery {
		s.reconcileMu.Unlock()
		return
	}
	s.lastReconcile = time.Now()
	s.reconcileMu.Unlock()
	if err := s.reconcile(ctx, now); err != nil {
		s.log.Warn("distributed store: reconcile expiry hints from PostgreSQL", "err", err)
	}
	if err := s.syncConf(ctx); err != nil {
		s.log.Warn("distributed store: compare license settings in Redis with the record", "err", err)
	}
}

func (s *Store) reconcile(ctx context.Context, now time.Time) error {
	overdue, err := s.rec.Overdue(ctx, now, reconcileLimit)
	if err != nil {
		return err
	}
	var order []string
	byLicense := map[string][]live.Lease{}
	for _, r := range overdue {
		if _, ok := byLicense[r.LicenseID]; !ok {
			order = append(order, r.LicenseID)
		}
		byLicense[r.LicenseID] = append(byLicense[r.LicenseID], liveLease(r))
	}
	leases := make([][]live.Lease, len(order))
	for i, id := range order {
		leases[i] = byLicense[id]
	}
	adopted, errs := s.live.Adopt(ctx, order, leases)
	var (
		hints    []live.Deadline
		firstErr error
	)
	for i, licenseID := range order {
		a, err := adopted[i], errs[i]
		if errors.Is(err, live.ErrNoState) {
			a, err = s.adoptOne(ctx, licenseID, leases[i])
		}
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if n := a.N; n > 0 {
			s.adopted.Add(n)
			s.log.Warn("distributed store: adopted active leases unknown to Redis for cleanup", "license", licenseID, "leases", n)
		}
		if a.First >= 0 {
			hints = append(hints, live.Deadline{LicenseID: licenseID, At: a.First})
		}
	}
	s.live.LowerHints(ctx, hints)
	return firstErr
}

// adoptOne hands one license's orphans to cleanup (live.Redis.Adopt),
// building its live state if it is missing. Nothing is adopted from a
// license that does not exist (any more).
func (s *Store) adoptOne(ctx context.Context, licenseID string, leases []live.Lease) (live.Adopted, error) {
	var a live.Adopted
	err := s.withLiveState(ctx, licenseID, func() error {
		as, errs := s.live.Adopt(ctx, []string{licenseID}, [][]live.Lease{leases})
		a = as[0]
		return errs[0]
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return live.Adopted{First: -1}, nil
	}
	return a, err
}

// ExpireLeases ends zombies in three steps (doc.go): per license, the live
// state takes the leases still past their deadline into its expiring hash
// (one pipeline for the batch); one PostgreSQL statement records all of
// them (state, usage and cleanup events, audit), exactly once; then the
// live state forgets them. If the record fails they stay in the expiring
// hash: they hold no seat, and the next pass finds them again
// (invariant 6).
func (s *Store) ExpireLeases(ctx context.Context, refs []server.LeaseRef) ([]server.Lease, error) {
	byLicense, err := s.byLicense(ctx, refs)
	if err != nil {
		return nil, err
	}
	taken, errs := s.live.Expire(ctx, byLicense)
	var (
		exps  []record.Expiry
		ended []live.LicenseLeases
	)
	for i, l := range byLicense {
		t, err := taken[i], errs[i]
		if errors.Is(err, live.ErrNoState) {
			t, err = s.expireOne(ctx, l)
		}
		if err != nil {
			// What the scripts moved meanwhile waits in the expiring
			// hashes for the next pass.
			return nil, s.fail("expire leases", err)
		}
		ids := make([]string, len(t.Leases))
		for j, tl := range t.Leases {
			exps = append(exps, record.Expiry{LeaseID: tl.ID, Heartbeat: tl.Heartbeat, Deadline: tl.Deadline, At: t.Now})
			ids[j] = tl.ID
		}
		if len(ids) > 0 {
			ended = append(ended, live.LicenseLeases{LicenseID: l.LicenseID, IDs: ids})
		}
	}
	if len(exps) == 0 {
		return nil, nil
	}
	expired, err := s.rec.ExpireSessions(ctx, exps)
	if err != nil {
		// Nothing is recorded; the leases stay in the expiring hash and
		// the next pass records them.
		return nil, s.fail("expire leases", err)
	}

	// Recorded now, or ended before by someone else: forget them in Redis,
	// one pipeline of end.lua for the batch. A failure is logged: the
	// leases stay in the expiring hash, hold no seat, and the next pass
	// finds them recorded and drops them.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i, err := range s.live.EndMany(dctx, ended) {
		if err != nil {
			s.log.Error("distributed store: remove expired leases from Redis", "license", ended[i].LicenseID,
				"leases", len(ended[i].IDs), "err", err)
		}
	}
	for _, l := range ended {
		s.hb.forget(l.IDs...)
	}
	return expired, nil
}

// byLicense groups lease refs by license, in the order of the refs, each
// lease once; a ref without its license is looked up (and dropped if the
// lease does not exist).
func (s *Store) byLicense(ctx context.Context, refs []server.LeaseRef) ([]live.LicenseLeases, error) {
	var out []live.LicenseLeases
	at := map[string]int{}
	seen := make(map[string]bool, len(refs))
	for _, ref := range refs {
		if seen[ref.LeaseID] {
			continue
		}
		seen[ref.LeaseID] = true
		licenseID := ref.LicenseID
		if licenseID == "" {
			info, err := s.leaseInfoOf(ctx, ref.LeaseID)
			if server.ErrorCode(err) == server.ENOTFOUND {
				continue
			}
			if err != nil {
				return nil, err
			}
			licenseID = info.LicenseID
		}
		i, ok := at[licenseID]
		if !ok {
			i = len(out)
			at[licenseID] = i
			out = append(out, live.LicenseLeases{LicenseID: licenseID})
		}
		out[i].IDs = append(out[i].IDs, ref.LeaseID)
	}
	return out, nil
}

// expireOne takes one license's due leases out of its live state
// (live.Redis.Expire), building the state if it is missing. Nothing is
// taken from a license that does not exist (any more).
func (s *Store) expireOne(ctx context.Context, l live.LicenseLeases) (live.Taken, error) {
	var t live.Taken
	err := s.withLiveState(ctx, l.LicenseID, func() error {
		ts, errs := s.live.Expire(ctx, []live.LicenseLeases{l})
		t = ts[0]
		return errs[0]
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return live.Taken{}, nil
	}
	return t, err
}
