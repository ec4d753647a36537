package distributed

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// The leader's reconciliation (cleanup.go) repairs what the expiry hint
// and the live state can lose without reading an index that heartbeats
// change: hints from Redis's own earliest deadlines, orphans by a sweep
// over the active sessions a page a pass.

// dueUntil runs cleanup's first page (which reconciles) until it lists the
// lease, and returns that page.
func dueUntil(t *testing.T, s *Store, leaseID string, msg string) []server.LeaseRef {
	t.Helper()
	var due []server.LeaseRef
	require.Eventually(t, func() bool {
		var err error
		due, err = s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		return slices.ContainsFunc(due, func(r server.LeaseRef) bool { return r.LeaseID == leaseID })
	}, 20*time.Second, 10*time.Millisecond, msg)
	return due
}

// TestReconcileRederivesALostHintFromRedis: a heartbeat moved a lease's
// deadline earlier (its license's TTL was cut) and its hint.lua failed, so
// that the expiry hint still points at the old, later deadline, and so
// does the record (the heartbeat is not written behind yet). The
// reconciliation finds the hint later than the earliest deadline the
// license holds in Redis and lowers it: the cleaner finds the lease once
// it is due, not an hour later.
func TestReconcileRederivesALostHintFromRedis(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	s.reconcileEvery = time.Millisecond
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")
	l := loseHint(t, s, tn.ID, lic.ID, res.Lease.ID, tok)
	require.True(t, l.ExpiresAt.Before(res.Lease.ExpiresAt.Add(-time.Minute)), "the deadline moved earlier")
	_, recorded, _ := s.recordedOf(t, res.Lease.ID)
	require.Equal(t, res.Lease.ExpiresAt, recorded, "the record still has the old deadline")

	waitRedisPast(t, s, l.ExpiresAt)
	due := dueUntil(t, s, res.Lease.ID, "the lease is due once its deadline passed")
	ended, err := s.ExpireLeases(t.Context(), due)
	require.NoError(t, err)
	require.Len(t, ended, 1)
	require.Equal(t, server.LeaseExpired, ended[0].State)
	require.Positive(t, s.hintsRederived.Load())
}

// recordedOf reads a session's recorded heartbeat and deadline.
func (s *Store) recordedOf(t *testing.T, leaseID string) (hb, deadline time.Time, state server.LeaseState) {
	t.Helper()
	r, err := s.rec.Session(t.Context(), leaseID)
	require.NoError(t, err)
	return r.LastHeartbeatAt, r.ExpiresAt, r.State
}

// TestReconcileRebuildsALicenseRedisLost: Redis lost a license's live
// state and nothing used the license since; the first reconciliation
// builds it again from the record (its leases are active there), before
// any recorded deadline passed, so that its hint is back and its leases
// heartbeat and expire as before.
func TestReconcileRebuildsALicenseRedisLost(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	s.reconcileEvery = time.Millisecond
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	idle := mkLicense(t, s, tn.ID, 1, time.Hour) // no lease: nothing to build
	res, tok := acq(t, s, lic.Key, "a")
	loc.loseRedis(t)

	_, err := s.DueLeases(t.Context(), nil, 100)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.BackgroundStats().LiveStateRebuilds, "the license with an active lease is built again")
	have, err := s.live.ConfVersions(t.Context(), []string{lic.ID, idle.ID})
	require.NoError(t, err)
	require.True(t, have[0].Present)
	require.False(t, have[1].Present, "a license without active leases waits for its first use")
	firsts, errs := s.live.Firsts(t.Context(), []string{lic.ID})
	require.NoError(t, errs[0])
	require.Positive(t, firsts[0])
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
}

// TestSweepAdoptsAnOrphanPageByPage: a lease recorded active that Redis
// holds nowhere (a failover lost it) is found by the reconciliation's
// sweep over the active sessions, a page a pass, once its recorded
// deadline has passed; the cleaner then records its expiry.
func TestSweepAdoptsAnOrphanPageByPage(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	s.reconcileEvery = time.Millisecond
	s.sweepPage = 2
	long := mkLicense(t, s, tn.ID, 10, time.Hour)
	for i := range 5 {
		acq(t, s, long.Key, fmt.Sprint("long", i))
	}
	short := mkLicense(t, s, tn.ID, 1, time.Second)
	res, _ := acq(t, s, short.Key, "orphan")
	_, errs := s.live.EndMany(t.Context(), []live.LicenseLeases{{LicenseID: short.ID, IDs: []string{res.Lease.ID}}})
	for _, err := range errs {
		require.NoError(t, err, "Redis loses the lease, the record keeps it")
	}
	waitRedisPast(t, s, res.Lease.ExpiresAt)

	due := dueUntil(t, s, res.Lease.ID, "the orphan is adopted and due")
	require.Len(t, due, 1, "only the orphan")
	require.EqualValues(t, 1, s.BackgroundStats().OrphansAdopted)
	ended, err := s.ExpireLeases(t.Context(), due)
	require.NoError(t, err)
	require.Len(t, ended, 1)
	require.Equal(t, server.LeaseExpired, ended[0].State)
	_, _, state := s.recordedOf(t, res.Lease.ID)
	require.Equal(t, server.LeaseExpired, state)
}

// TestSweepWalksEveryPage: the sweep goes round the active sessions a
// page a pass and starts over at the end.
func TestSweepWalksEveryPage(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	s.sweepPage = 2
	lic := mkLicense(t, s, tn.ID, 10, time.Hour)
	var ids []string
	for i := range 5 {
		res, _ := acq(t, s, lic.Key, fmt.Sprint("fp", i))
		ids = append(ids, res.Lease.ID)
	}
	slices.Sort(ids)
	now, err := s.live.Now(t.Context())
	require.NoError(t, err)
	var cursors []string
	for range 4 {
		require.NoError(t, s.sweepOrphans(t.Context(), now))
		cursors = append(cursors, s.sweepAfter)
	}
	require.Equal(t, []string{ids[1], ids[3], "", ids[1]}, cursors)
}

// TestPageAfter: the reconciliation's pages of licenses go round in id
// order, whatever was added or removed since the last page.
func TestPageAfter(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	var pages [][]string
	var nexts []string
	after := ""
	for range 4 {
		var page []string
		page, after = pageAfter(ids, after, 2)
		pages, nexts = append(pages, page), append(nexts, after)
	}
	require.Equal(t, [][]string{{"a", "b"}, {"c", "d"}, {"e"}, {"a", "b"}}, pages)
	require.Equal(t, []string{"b", "d", "", "b"}, nexts)

	page, next := pageAfter(ids, "bb", 2) // "bb" went away
	require.Equal(t, []string{"c", "d"}, page)
	require.Equal(t, "d", next)
	page, next = pageAfter(ids, "z", 2)
	require.Empty(t, page)
	require.Empty(t, next, "past the end: start over")
	page, next = pageAfter(ids, "c", 2)
	require.Equal(t, []string{"d", "e"}, page)
	require.Empty(t, next, "a page that reaches the end")
}

// TestHintsAreComparedAPageAPass: with more licenses than a pass
// compares, a lost hint is still found, within a round of passes (as in
// TestReconcileRederivesALostHintFromRedis, only Redis knows the
// deadline it points at).
func TestHintsAreComparedAPageAPass(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	s.reconcileEvery = time.Millisecond
	s.hintPage = 1
	for range 3 {
		mkLicense(t, s, tn.ID, 1, time.Hour)
	}
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")
	l := loseHint(t, s, tn.ID, lic.ID, res.Lease.ID, tok)
	waitRedisPast(t, s, l.ExpiresAt)
	dueUntil(t, s, res.Lease.ID, "the lease is due once its hint is found lost")
	require.EqualValues(t, 1, s.hintsRederived.Load())
}

// loseHint cuts a license's TTL to 1 s and heartbeats its lease while
// hint.lua fails: the lease's deadline moves earlier, the expiry hint
// still points at the old one. It returns the heartbeat's lease.
func loseHint(t *testing.T, s *Store, tenantID, licenseID, leaseID, tok string) server.Lease {
	t.Helper()
	_, err := s.UpdateLicense(t.Context(), tenantID, licenseID, func(l *server.License) error { l.LeaseTTL = time.Second; return nil })
	require.NoError(t, err)
	fail := newFailScript(live.Script("hint"))
	s.rdb.AddHook(fail)
	fail.on.Store(true)
	l, err := s.Heartbeat(t.Context(), leaseID, server.HashSecret(tok))
	require.NoError(t, err)
	fail.on.Store(false)
	require.Positive(t, fail.refused.Load(), "the heartbeat's hint was lost")
	return l
}
