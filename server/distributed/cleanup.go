package distributed

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Cleanup: DueLeases finds the leases past their deadline in the live
// state (the expiry hint, package live), ExpireLeases takes them out of the
// live state, records their expiry, then forgets them in the live state.
// The leader's reconciliation repairs what the hint can lose, hands the
// cleaner orphans (active in the record, unknown to the live state), and
// removes from the live state the leases whose end the record noted
// (dropRecordedEnds).

const (
	// defaultSweepPage is how many active sessions one reconciliation
	// reads of its sweep for orphans (record.ActivePage): a million active
	// leases are swept in 40 passes, 400 s. Each session read is an index
	// entry and a heap fetch: 50,000 took PostgreSQL 160-280 ms (1M
	// sessions, shared_buffers 128MB, the 2-core VM), so that a page a
	// pass costs about 1 % of a core.
	defaultSweepPage = 25_000
	// reconcileLimit bounds the overdue leases one reconciliation hands to
	// adopt.lua.
	reconcileLimit = 10_000
	// defaultHintPage is how many licenses one reconciliation compares
	// the hints of (in id order, going round): with more licenses than
	// that, a lost hint is found within (licenses / defaultHintPage)
	// passes.
	defaultHintPage = 10_000
	// maxReconcileRebuilds bounds the licenses one reconciliation builds
	// the live state of (licenses with active leases that Redis lost and
	// that nothing used since); the next pass takes the next ones.
	maxReconcileRebuilds = 64
)

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

// maybeReconcile repairs, at most every s.reconcileEvery, what the expiry
// hint and the live state can lose (reconcile). Failures are logged; the
// next pass tries again.
func (s *Store) maybeReconcile(ctx context.Context, now time.Time) {
	s.reconcileMu.Lock()
	if !s.lastReconcile.IsZero() && time.Since(s.lastReconcile) < s.reconcileEvery {
		s.reconcileMu.Unlock()
		return
	}
	s.lastReconcile = time.Now()
	s.reconcileMu.Unlock()
	// One read of the licenses serves the hints' repair and the settings'.
	lics, readErr := s.rec.LicenseVersions(ctx)
	err := readErr
	if err == nil {
		err = s.rederiveHints(ctx, lics)
	}
	if err := errors.Join(err, s.sweepOrphans(ctx, now), s.dropRecordedEnds(ctx), s.prunePolicyIndexes(ctx)); err != nil {
		s.log.Warn("distributed store: reconcile the live state with the record", "err", err)
	}
	if readErr != nil {
		return
	}
	if err := s.syncConfOf(ctx, lics); err != nil {
		s.log.Warn("distributed store: compare license settings in Redis with the record", "err", err)
	}
}

// rederiveHints compares licenses' expiry hints with the earliest
// deadline their live state holds (live.Redis.Firsts), s.hintPage
// licenses a pass going round in id order, and lowers the hints that were
// lost or are later (a crash between a grant and its hint, a failed
// hint.lua, hint keys lost with a Redis server). A license whose live
// state is missing although the record holds active leases of it (Redis
// lost it, and nothing used the license since) is built from the record,
// which sets its hint: its leases then expire as any others. Neither
// repair reads an index that heartbeats change (they are written behind as
// HOT updates, record.WriteBeats).
func (s *Store) rederiveHints(ctx context.Context, lics []record.LicenseVersion) error {
	ids := make([]string, 0, len(lics))
	for _, l := range lics {
		if !l.Deleted {
			ids = append(ids, l.ID)
		}
	}
	slices.Sort(ids)
	s.reconcileMu.Lock()
	ids, s.hintsAfter = pageAfter(ids, s.hintsAfter, s.hintPage)
	s.reconcileMu.Unlock()
	firsts, errs := s.live.Firsts(ctx, ids)
	var (
		dls      []live.Deadline
		missing  []string
		firstErr error
	)
	for i, id := range ids {
		switch err := errs[i]; {
		case errors.Is(err, live.ErrNoState):
			missing = append(missing, id)
		case err != nil:
			firstErr = cmp.Or(firstErr, err)
		case firsts[i] >= 0:
			dls = append(dls, live.Deadline{LicenseID: id, At: firsts[i]})
		}
	}
	n, err := s.live.LowerLateHints(ctx, dls)
	if err != nil {
		firstErr = cmp.Or(firstErr, err)
	}
	if n > 0 {
		s.hintsRederived.Add(int64(n))
		s.log.Warn("distributed store: expiry hints were lost; re-derived them from the live state", "licenses", n)
	}
	if len(missing) == 0 {
		return firstErr
	}
	lost, err := s.rec.WithActiveSessions(ctx, missing)
	if err != nil {
		return cmp.Or(firstErr, err)
	}
	for _, id := range lost[:min(len(lost), maxReconcileRebuilds)] {
		err := s.ensureLive(ctx, id)
		if server.ErrorReason(err) != server.ReasonLicenseNotFound {
			firstErr = cmp.Or(firstErr, err)
		}
	}
	return firstErr
}

// pageAfter is the page of at most n sorted ids after the id after, and
// the id the next page starts after ("" when this one reached the end).
func pageAfter(ids []string, after string, n int) (page []string, next string) {
	i, _ := slices.BinarySearch(ids, after)
	if i < len(ids) && ids[i] == after {
		i++
	}
	page = ids[i:min(i+n, len(ids))]
	if i+n < len(ids) {
		next = page[len(page)-1]
	}
	return page, next
}

// sweepOrphans reads the next page of the sweep over the active sessions
// (record.ActivePage) and hands those past their recorded deadline to
// adopt.lua, which gives the ones Redis holds nowhere (orphans) to the
// cleaner; the leases it holds are left alone. An orphan is found within
// one sweep of its recorded deadline: (active sessions / s.sweepPage)
// passes of s.reconcileEvery.
func (s *Store) sweepOrphans(ctx context.Context, now time.Time) error {
	s.reconcileMu.Lock()
	after := s.sweepAfter
	s.reconcileMu.Unlock()
	overdue, next, err := s.rec.ActivePage(ctx, after, s.sweepPage, reconcileLimit, now)
	if err != nil {
		return err
	}
	s.reconcileMu.Lock()
	s.sweepAfter = next
	s.reconcileMu.Unlock()

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

// dropRecordedEnds removes from the live state the leases whose release
// or revoke the record noted (record.PendingEnds, written by the statement
// that recorded the end), then clears their notes: s.endBatch notes a
// batch, in lease id order, until a batch comes back short. end.lua is
// idempotent, so that a lease its own call removed already costs one
// lookup. This is what removes a lease whose end.lua failed or whose
// process died before it, when nobody retries the call and the lease never
// heartbeats (a borrowed one, an abandoned one): without it, it would hold
// its seat until its deadline (invariant 10). A note whose end.lua failed
// stays for the next pass.
func (s *Store) dropRecordedEnds(ctx context.Context) error {
	var (
		after    string
		behind   int64
		firstErr error
	)
	for {
		ends, err := s.rec.PendingEnds(ctx, after, s.endBatch)
		if err != nil {
			return cmp.Or(firstErr, err)
		}
		var byLicense []live.LicenseLeases
		at := map[string]int{}
		for _, e := range ends {
			i, ok := at[e.LicenseID]
			if !ok {
				i = len(byLicense)
				at[e.LicenseID] = i
				byLicense = append(byLicense, live.LicenseLeases{LicenseID: e.LicenseID})
			}
			byLicense[i].IDs = append(byLicense[i].IDs, e.LeaseID)
		}
		removed, errs := s.live.EndMany(ctx, byLicense)
		var done []string
		for i, l := range byLicense {
			if errs[i] != nil {
				behind += int64(len(l.IDs))
				firstErr = cmp.Or(firstErr, errs[i])
				continue
			}
			done = append(done, l.IDs...)
			s.hb.forget(l.IDs...)
			if removed[i] > 0 {
				s.endsRepaired.Add(removed[i])
				s.log.Warn("distributed store: leases whose end is recorded were still in Redis; dropped them",
					"license", l.LicenseID, "leases", removed[i])
			}
		}
		slices.Sort(done) // in id order, as every statement that locks several leases
		if err := s.rec.ClearEnds(ctx, done); err != nil {
			behind += int64(len(done))
			firstErr = cmp.Or(firstErr, err)
		}
		if len(ends) < s.endBatch {
			s.endsBehind.Store(behind)
			return firstErr
		}
		after = ends[len(ends)-1].LeaseID
	}
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
			exps = append(exps, record.Expiry{LeaseID: tl.ID, Heartbeat: tl.Heartbeat, Deadline: tl.Deadline, At: t.Now,
				Lingering: tl.Lingering})
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
	_, endErrs := s.live.EndMany(dctx, ended)
	for i, err := range endErrs {
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
