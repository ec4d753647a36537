package distributed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Fixtures of the backend's own tests.

func mkTenant(t *testing.T, s *Store) server.Tenant {
	t.Helper()
	tn, err := s.CreateTenant(t.Context(), server.Tenant{ID: server.NewID("tnt_"), CreatedAt: time.Now()})
	require.NoError(t, err)
	return tn
}

func mkLicense(t *testing.T, s *Store, tenantID string, seats int, ttl time.Duration) server.License {
	t.Helper()
	now := time.Now().UTC()
	l, err := s.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tenantID, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: seats, LeaseTTL: ttl, LeasingStrategy: server.PerFingerprint, Active: true, CreatedAt: now, UpdatedAt: now,
	})
	require.NoError(t, err)
	return l
}

func tryAcq(ctx context.Context, s *Store, key, fp string) (server.AcquireResult, string, error) {
	tok := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.Acquire(ctx, server.AcquireRequest{
		LicenseKey: key, Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(tok),
	})
	return res, tok, err
}

func acq(t *testing.T, s *Store, key, fp string) (server.AcquireResult, string) {
	t.Helper()
	res, tok, err := tryAcq(t.Context(), s, key, fp)
	require.NoError(t, err, "Acquire(%s)", fp)
	return res, tok
}

func requireCode(t *testing.T, err error, code server.Code, reason string, msg ...any) {
	t.Helper()
	require.Error(t, err, msg...)
	require.Equal(t, code, server.ErrorCode(err), "code of %v %s", err, fmt.Sprint(msg...))
	if reason != "" {
		require.Equal(t, reason, server.ErrorReason(err), msg...)
	}
}

// recorded reads a session's recorded heartbeat and deadline straight from
// PostgreSQL.
func (loc location) recorded(t *testing.T, leaseID string) (hb, deadline time.Time, state string) {
	t.Helper()
	pg, _ := testServers(t)
	err := pg.QueryRow(t.Context(), `SELECT last_heartbeat_at, expires_at, state FROM `+loc.schema+`.sessions WHERE id = $1`,
		leaseID).Scan(&hb, &deadline, &state)
	require.NoError(t, err)
	return hb, deadline, state
}

// TestHeartbeatWriteBehind: heartbeats change Redis only; the flusher
// writes them with one statement per batch, and Close flushes.
func TestHeartbeatWriteBehind(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour }) // only explicit flushes
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = s.Close()
		}
	})
	tn := mkTenant(t, s)
	lic := mkLicense(t, s, tn.ID, 50, time.Hour)
	const n = 20
	leases := make([]server.Lease, n)
	tokens := make([]string, n)
	for i := range n {
		r, tok := acq(t, s, lic.Key, fmt.Sprintf("fp-%d", i))
		leases[i], tokens[i] = r.Lease, tok
	}
	waitRedisPast(t, s, leases[n-1].AcquiredAt) // heartbeats come later than the grants

	beat := func() []server.Lease {
		out := make([]server.Lease, n)
		for i, l := range leases {
			hb, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(tokens[i]))
			require.NoError(t, err)
			out[i] = hb
		}
		return out
	}
	hbs := beat()
	for i, l := range leases {
		rec, _, _ := loc.recorded(t, l.ID)
		require.True(t, rec.Equal(l.AcquiredAt), "heartbeat %d reached PostgreSQL before a flush", i)
		got, err := s.GetLease(t.Context(), tn.ID, l.ID)
		require.NoError(t, err)
		require.True(t, got.LastHeartbeatAt.Equal(hbs[i].LastHeartbeatAt), "GetLease sees the heartbeat at once")
	}

	stmts, rows := s.hb.statements.Load(), s.hb.written.Load()
	require.NoError(t, s.flush(t.Context()))
	require.Equal(t, stmts+1, s.hb.statements.Load(), "one statement for the batch")
	require.Equal(t, rows+n, s.hb.written.Load(), "rows written")
	for i, l := range leases {
		rec, dl, _ := loc.recorded(t, l.ID)
		require.True(t, rec.Equal(hbs[i].LastHeartbeatAt), "flushed heartbeat of lease %d", i)
		require.True(t, dl.Equal(hbs[i].ExpiresAt), "flushed deadline of lease %d", i)
	}
	require.NoError(t, s.flush(t.Context()))
	require.Equal(t, stmts+1, s.hb.statements.Load(), "an empty buffer writes nothing")

	// An ended lease is never touched by a late flush, even by a heartbeat
	// newer than its end: the buffer may hold one that Redis accepted
	// while the record already said the lease had ended (an end recorded
	// by an instance that died before removing the lease from Redis).
	waitRedisPast(t, s, hbs[n-1].LastHeartbeatAt)
	hbs = beat()
	rel, err := s.Release(t.Context(), leases[0].ID, server.HashSecret(tokens[0]))
	require.NoError(t, err)
	_, relDeadline, _ := loc.recorded(t, leases[0].ID)
	late := rel.LastHeartbeatAt.Add(time.Second)
	s.hb.add(leases[0].ID, late, late.Add(time.Hour))

	// Close writes what is left, in one statement.
	stmts = s.hb.statements.Load()
	require.NoError(t, s.Close())
	closed = true
	require.Equal(t, stmts+1, s.hb.statements.Load(), "Close flushes in one statement")
	for i, l := range leases[1:] {
		rec, _, state := loc.recorded(t, l.ID)
		require.Equal(t, "active", state)
		require.True(t, rec.Equal(hbs[i+1].LastHeartbeatAt), "heartbeat of lease %d flushed by Close", i+1)
	}
	rec, dl, state := loc.recorded(t, leases[0].ID)
	require.Equal(t, "released", state)
	require.True(t, rec.Equal(rel.LastHeartbeatAt), "the released lease's heartbeat %s was moved by a flush", rec)
	require.True(t, dl.Equal(relDeadline), "the released lease's deadline %s was moved by a flush", dl)
}

// TestExpireLeasesRecordFailure: PostgreSQL fails after the script took
// the zombies out of the live state. Nothing is removed from the record,
// and the next pass (here on another instance) records each lease once.
func TestExpireLeasesRecordFailure(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	a, b := loc.open(t, nil), loc.open(t, nil)
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	tn := mkTenant(t, a)
	lic := mkLicense(t, a, tn.ID, 5, time.Second)
	var ids []string
	tokens := map[string]string{}
	acquired := map[string]server.Lease{}
	for i := range 3 {
		r, tok := acq(t, a, lic.Key, fmt.Sprintf("z-%d", i))
		ids = append(ids, r.Lease.ID)
		tokens[r.Lease.ID] = tok
		acquired[r.Lease.ID] = r.Lease
		waitRedisPast(t, a, r.Lease.ExpiresAt) // due by the store's clock
	}
	refs, err := a.DueLeases(t.Context(), nil, 100)
	require.NoError(t, err)
	require.Len(t, refs, 3)

	a.rec.Close() // PostgreSQL is gone for instance a, mid-way
	exp, err := a.ExpireLeases(t.Context(), refs)
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "ExpireLeases without PostgreSQL")
	require.Empty(t, exp)
	for _, id := range ids {
		hb, dl, state := loc.recorded(t, id)
		require.Equal(t, "active", state, "the record of %s after a failed ExpireLeases", id)
		require.True(t, hb.Equal(acquired[id].LastHeartbeatAt) && dl.Equal(acquired[id].ExpiresAt),
			"the record of %s is untouched: heartbeat %s, deadline %s", id, hb, dl)
	}

	// The record is untouched; the zombies wait in Redis, holding no seat.
	_, rdb := testServers(t)
	require.EqualValues(t, 3, rdb.HLen(t.Context(), loc.license(lic.ID)[5]).Val(), "leases waiting in the expiring hash")
	for _, id := range ids {
		l, err := b.GetLease(t.Context(), tn.ID, id)
		require.NoError(t, err)
		require.Equal(t, server.LeaseActive, l.State, "a failed ExpireLeases changed the record")
	}
	evs, err := b.UsageEvents(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Empty(t, evs)
	ces, err := b.CleanupEvents(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Empty(t, ces)
	n, err := b.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n)

	// The next pass finds them again and records each once.
	due, err := b.DueLeases(t.Context(), nil, 100)
	require.NoError(t, err)
	require.ElementsMatch(t, ids, refIDs(due))
	var expired []server.Lease
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, 2)
	for i := range 2 { // two cleaners at once
		wg.Go(func() {
			got, err := b.ExpireLeases(t.Context(), due)
			errs[i] = err
			mu.Lock()
			expired = append(expired, got...)
			mu.Unlock()
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.ElementsMatch(t, ids, leaseIDs(expired))
	again, err := b.ExpireLeases(t.Context(), due)
	require.NoError(t, err)
	require.Empty(t, again)
	evs, err = b.UsageEvents(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	ces, err = b.CleanupEvents(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Len(t, ces, 3)
	due, err = b.DueLeases(t.Context(), nil, 100)
	require.NoError(t, err)
	require.Empty(t, due)
	require.Zero(t, rdb.HLen(t.Context(), loc.license(lic.ID)[5]).Val(), "expiring hash emptied")
	for _, id := range ids {
		_, err = b.Heartbeat(t.Context(), id, server.HashSecret(tokens[id]))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
	}
}

func (loc location) license(id string) []string { return live.Keyspace{Prefix: loc.prefix}.License(id) }

func refIDs(refs []server.LeaseRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.LeaseID
	}
	return out
}

func leaseIDs(ls []server.Lease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

// TestRedisLoss: Redis restarts empty (its keys vanish). The live state is
// rebuilt from PostgreSQL before any seat is granted again: the limit
// holds, old tokens (rotated ones included) still heartbeat, dedupe still
// hands back leases, and a second instance agrees.
func TestRedisLoss(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 3, time.Hour)
	other := mkLicense(t, s, tn.ID, 2, time.Hour)
	a, tokA := acq(t, s, lic.Key, "a")
	b1, _ := acq(t, s, lic.Key, "b")
	b2, tokB2 := acq(t, s, lic.Key, "b") // token rotated
	require.True(t, b2.Existing)
	c, tokC := acq(t, s, lic.Key, "c")
	o, tokO := acq(t, s, other.Key, "o")
	// A's heartbeat goes through another instance, which writes it behind
	// an hour later: the record keeps A's deadline of the grant, earlier
	// than the one acknowledged (the rebuilding instance flushes only its
	// own heartbeats first).
	beside := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	t.Cleanup(func() { _ = beside.Close() })
	waitRedisPast(t, s, o.Lease.AcquiredAt) // the heartbeat comes later than the grants
	hbA, err := beside.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
	require.NoError(t, err)
	require.True(t, hbA.ExpiresAt.After(a.Lease.ExpiresAt))

	_, rdb := testServers(t)
	require.NoError(t, deletePrefix(t.Context(), rdb, loc.prefix), "simulate Redis restarting empty")

	// No fourth seat, however many ask at once.
	const n = 40
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _, err := tryAcq(t.Context(), s, lic.Key, fmt.Sprintf("new-%d", i))
			switch {
			case err == nil:
				granted.Add(1)
			case server.ErrorCode(err) != server.EEXHAUSTED && server.ErrorCode(err) != server.EUNAVAILABLE:
				t.Errorf("acquire after Redis loss: %v", err)
			}
		})
	}
	wg.Wait()
	require.Zero(t, granted.Load(), "seats granted over the limit after Redis loss")
	inUse, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 3, inUse)

	// Invariant 9: the deadline acknowledged before the loss holds after
	// it. The record lacks the heartbeat, and the rebuild gives the
	// write-behind's slack back: the rebuilt deadline, read before any new
	// heartbeat, is not earlier than the one acknowledged.
	rebuilt, err := s.GetLease(t.Context(), tn.ID, a.Lease.ID)
	require.NoError(t, err)
	require.False(t, rebuilt.ExpiresAt.Before(hbA.ExpiresAt),
		"deadline after the loss %v, acknowledged before it %v", rebuilt.ExpiresAt, hbA.ExpiresAt)

	// Old tokens still work; the rotated-out one does not.
	_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
	require.NoError(t, err)
	_, err = s.Heartbeat(t.Context(), b2.Lease.ID, server.HashSecret(tokB2))
	require.NoError(t, err, "the newest token of a rotated lease")
	_, err = s.Heartbeat(t.Context(), b1.Lease.ID, b1.Lease.TokenHash)
	requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "a rotated-out token")
	_, err = s.Heartbeat(t.Context(), o.Lease.ID, server.HashSecret(tokO))
	require.NoError(t, err, "a lease of another license, rebuilt on its first heartbeat")
	again, _ := acq(t, s, lic.Key, "a")
	require.True(t, again.Existing, "dedupe survives Redis loss")
	require.Equal(t, a.Lease.ID, again.Lease.ID)

	// A second instance sees the same state.
	s2 := loc.open(t, nil)
	t.Cleanup(func() { _ = s2.Close() })
	_, _, err = tryAcq(t.Context(), s2, lic.Key, "elsewhere")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
	_, err = s2.Release(t.Context(), c.Lease.ID, server.HashSecret(tokC))
	require.NoError(t, err)
	r, _ := acq(t, s, lic.Key, "fresh")
	require.False(t, r.Existing)
	require.Equal(t, 3, r.SeatsInUse)

	// Lost again, with a release in between: still exactly the record.
	require.NoError(t, deletePrefix(t.Context(), rdb, loc.prefix))
	inUse, err = s2.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 3, inUse)
	_, err = s.Heartbeat(t.Context(), c.Lease.ID, server.HashSecret(tokC))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased)
}

// TestStaleGrantIsNeverRecorded: a seat granted by a live state that was
// rebuilt before the grant could be recorded is taken back, and the
// acquisition is granted again on the new state.
func TestStaleGrantIsNeverRecorded(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	require.NoError(t, s.ensureLive(t.Context(), lic.ID))

	req := server.AcquireRequest{LicenseKey: lic.Key, Fingerprint: "fp", LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: "h"}
	g := new(live.Acquisition)
	require.NoError(t, s.live.Acquire(t.Context(), lic.ID, &req, g))
	require.Equal(t, live.StatusGranted, g.Status)

	// Another instance rebuilds the live state meanwhile (epoch + 1).
	pg, _ := testServers(t)
	_, err := pg.Exec(t.Context(), `UPDATE `+loc.schema+`.licenses SET live_epoch = live_epoch + 1 WHERE id = $1`, lic.ID)
	require.NoError(t, err)

	_, again, err := s.recordNew(t.Context(), &req, g)
	require.NoError(t, err)
	require.True(t, again, "a stale grant asks for a new attempt")
	_, err = s.GetLease(t.Context(), tn.ID, req.LeaseID)
	requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "the stale grant was recorded")

	// The whole Acquire then succeeds on the rebuilt state, with one seat.
	r, err := s.Acquire(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, 1, r.SeatsInUse)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "other")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
}

// TestDeleteLicenseRacingAcquisitions: no lease is ever recorded as active
// on a deleted license, and every lease that was has one usage event.
func TestDeleteLicenseRacingAcquisitions(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 10_000, time.Hour)
	stop := make(chan struct{})
	var (
		wg               sync.WaitGroup
		granted, refused atomic.Int64
	)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _, err := tryAcq(t.Context(), s, lic.Key, fmt.Sprintf("w%d-%d", w, i))
				if err != nil && server.ErrorCode(err) != server.ENOTFOUND {
					t.Errorf("acquire: %v", err)
					return
				}
				if err == nil {
					granted.Add(1)
				} else {
					refused.Add(1)
				}
			}
		})
	}
	// Delete while acquisitions are granted (not after a fixed time: on a
	// busy machine none may have been by then).
	require.Eventually(t, func() bool { return granted.Load() >= 20 }, 20*time.Second, 5*time.Millisecond)
	revoked, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	refusedBefore := refused.Load()
	require.Eventually(t, func() bool { return refused.Load() >= refusedBefore+16 }, 20*time.Second, 5*time.Millisecond,
		"acquisitions go on after the delete, and are refused")
	close(stop)
	wg.Wait()
	require.Positive(t, revoked)

	pg, _ := testServers(t)
	var active, total, usage int
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE state = 'active'), count(*),
		(SELECT count(*) FROM `+loc.schema+`.usage_events WHERE license_id = $1)
		FROM `+loc.schema+`.sessions WHERE license_id = $1`, lic.ID).Scan(&active, &total, &usage))
	require.Zero(t, active, "leases recorded active on a deleted license")
	require.Equal(t, total, usage, "one usage event per lease")
	require.Equal(t, revoked, total)
	inUse, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
	require.Zero(t, inUse)
}

// TestOpenNamesTheServerItCannotReach: Open retries for ConnectTimeout,
// then says which server failed.
func TestOpenNamesTheServerItCannotReach(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	start := time.Now()
	_, err := Open(t.Context(), Options{
		PostgresURL: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", RedisURL: testRedisURL(),
		ConnectTimeout: 600 * time.Millisecond,
	})
	require.ErrorContains(t, err, "cannot reach PostgreSQL at 127.0.0.1:1")
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "retried with backoff")
	require.Less(t, time.Since(start), 5*time.Second, "gave up after about ConnectTimeout")
	_, err = Open(t.Context(), Options{PostgresURL: loc.pgURL, RedisURL: "redis://127.0.0.1:1/0", ConnectTimeout: 600 * time.Millisecond})
	require.ErrorContains(t, err, "cannot reach Redis at 127.0.0.1:1")
}

// TestMigrations: instances starting at once on an empty schema migrate it
// once, under the lock; the status shows every migration applied.
func TestMigrations(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	stores := make([]*Store, 3)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := Open(context.Background(), Options{PostgresURL: loc.pgURL, RedisURL: testRedisURL(),
				RedisKeyPrefix: loc.prefix, PoolMaxConns: 2, Logger: testLogger})
			if err != nil {
				t.Errorf("open %d: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { _ = s.Close() })
		}
	}
	require.False(t, t.Failed())

	db := stdlib.OpenDBFromPool(loc.db(t))
	defer db.Close()
	st, err := record.MigrationStatus(t.Context(), db)
	require.NoError(t, err)
	require.NotEmpty(t, st)
	for _, m := range st {
		require.True(t, m.Applied, "migration %d %s", m.Version, m.Name)
		require.False(t, m.AppliedAt.IsZero())
	}
	res, err := record.Migrate(t.Context(), db, nil)
	require.NoError(t, err)
	require.Empty(t, res, "nothing left to apply")
}

// TestGrantNeverRecorded: an acquisition died between its grant in Redis
// and its record. A retry with the same fingerprint, which would be handed
// that lease, waits for the record, then drops the grant (a rebuild) and
// gets a recorded lease.
func TestGrantNeverRecorded(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	s.recordWait = 300 * time.Millisecond
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	require.NoError(t, s.ensureLive(t.Context(), lic.ID))

	ghost := server.NewID(server.PrefixLeaseID)
	g := new(live.Acquisition)
	require.NoError(t, s.live.Acquire(t.Context(), lic.ID, &server.AcquireRequest{LeaseID: ghost, TokenHash: "h", Fingerprint: "fp"}, g))
	require.Equal(t, live.StatusGranted, g.Status, "the grant of the acquisition that dies")

	start := time.Now()
	r, tok := acq(t, s, lic.Key, "fp")
	require.GreaterOrEqual(t, time.Since(start), s.recordWait, "waited for the record first")
	require.False(t, r.Existing)
	require.NotEqual(t, ghost, r.Lease.ID)
	require.Equal(t, 1, r.SeatsInUse, "the ghost grant no longer holds the seat")
	got, err := s.GetLease(t.Context(), tn.ID, r.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, got.State)
	_, err = s.Heartbeat(t.Context(), r.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	_, err = s.GetLease(t.Context(), tn.ID, ghost)
	requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound)
}

// TestCloseFlushesThenLeavesASharedRedisOpen: Close writes the pending
// heartbeats to the record, closes the store's PostgreSQL pool, and leaves
// a Redis client it was given (Options.Redis) open: the wait queues and the
// revocation news share it, and its owner closes it after Close, last. One
// it opened itself it closes.
func TestCloseFlushesThenLeavesASharedRedisOpen(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	shared, _, err := OpenRedis(testRedisURL())
	require.NoError(t, err)
	defer func() { _ = shared.Close() }()
	s := loc.open(t, func(o *Options) { o.Redis = shared; o.HeartbeatFlushInterval = time.Hour })
	tn := mkTenant(t, s)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	r, tok := acq(t, s, lic.Key, "fp")
	waitRedisPast(t, s, r.Lease.AcquiredAt)
	hb, err := s.Heartbeat(t.Context(), r.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)

	require.NoError(t, s.Close())
	rec, _, _ := loc.recorded(t, r.Lease.ID)
	require.True(t, rec.Equal(hb.LastHeartbeatAt), "Close flushed the heartbeat to the record")
	_, err = s.rec.License(t.Context(), lic.ID)
	require.Error(t, err, "the store's pool is closed")
	require.NoError(t, shared.Ping(t.Context()).Err(), "a shared Redis client stays open for its owner to close last")

	own := loc.open(t, nil)
	require.NoError(t, own.Close())
	require.ErrorIs(t, own.rdb.Ping(t.Context()).Err(), redis.ErrClosed, "a client the store opened, it closes")
}
