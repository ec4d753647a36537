package distributed

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/storetest"
)

// faultyStore is a Store whose PostgreSQL (the record) and Redis (the live
// state) the conformance suite can make fail.
type faultyStore struct {
	*Store
	pg, redis *atomic.Bool
}

var (
	_ storetest.Faults = faultyStore{}
	_ storetest.Clock  = faultyStore{}
)

// Pass waits until the store's clock (Redis TIME, read by every script)
// reads later than at: it cannot be moved.
func (f faultyStore) Pass(ctx context.Context, at time.Time) error {
	for {
		now, err := f.live.Now(ctx)
		if err != nil {
			return err
		}
		if now.After(at) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(at.Sub(now)+time.Millisecond, 50*time.Millisecond)):
		}
	}
}

// Moves is false: the clock is Redis's.
func (f faultyStore) Moves() bool { return false }

func (f faultyStore) Faults() []storetest.Fault {
	return []storetest.Fault{storetest.FaultRecord, storetest.FaultLive}
}

func (f faultyStore) SetFault(which storetest.Fault, on bool) {
	switch which {
	case storetest.FaultRecord:
		f.pg.Store(on)
	case storetest.FaultLive:
		f.redis.Store(on)
	}
}

// openFaulty opens a store on loc whose servers fail on demand.
func (loc location) openFaulty(t *testing.T, mut func(*Options)) faultyStore {
	t.Helper()
	f := faultyStore{pg: new(atomic.Bool), redis: new(atomic.Bool)}
	f.Store = loc.open(t, func(o *Options) {
		o.prepareConn = func(context.Context, *pgx.Conn) (bool, error) {
			if f.pg.Load() {
				return false, errors.New("injected: PostgreSQL unreachable")
			}
			return true, nil
		}
		if mut != nil {
			mut(o)
		}
	})
	f.rdb.AddHook(failingRedis{f.redis})
	return f
}

// failingRedis fails every Redis command and pipeline while on is set.
type failingRedis struct{ on *atomic.Bool }

var errRedisDown = errors.New("injected: Redis unreachable")

func (h failingRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h failingRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() {
			cmd.SetErr(errRedisDown)
			return errRedisDown
		}
		return next(ctx, cmd)
	}
}

func (h failingRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() {
			for _, c := range cmds {
				c.SetErr(errRedisDown)
			}
			return errRedisDown
		}
		return next(ctx, cmds)
	}
}

// TestRebuildFailureIsTransient: Redis lost the license's live state and
// PostgreSQL fails while it is rebuilt: heartbeats and acquisitions answer
// UNAVAILABLE (never LEASE_EXPIRED, never a seat), and once PostgreSQL is
// back the lease heartbeats as before.
func TestRebuildFailureIsTransient(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s := loc.openFaulty(t, nil)
	t.Cleanup(func() { _ = s.Close() })
	tn := mkTenant(t, s.Store)
	lic := mkLicense(t, s.Store, tn.ID, 1, time.Hour)
	res, tok := acq(t, s.Store, lic.Key, "a")

	loc.loseRedis(t)
	s.SetFault(storetest.FaultRecord, true)
	_, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "a heartbeat while the rebuild cannot read the record")
	_, _, err = tryAcq(t.Context(), s.Store, lic.Key, "b")
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "an acquisition while the rebuild cannot read the record")
	s.SetFault(storetest.FaultRecord, false)

	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err, "the lease survived the failed rebuild")
	_, _, err = tryAcq(t.Context(), s.Store, lic.Key, "b")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
}

// TestExpiringLeaseChecksToken: a lease waiting in the expiring hash (its
// expiry not yet recorded) still checks the token first.
func TestExpiringLeaseChecksToken(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s := loc.openFaulty(t, nil)
	t.Cleanup(func() { _ = s.Close() })
	tn := mkTenant(t, s.Store)
	lic := mkLicense(t, s.Store, tn.ID, 1, time.Second)
	res, tok := acq(t, s.Store, lic.Key, "a")
	require.Eventually(t, func() bool { return time.Now().After(res.Lease.ExpiresAt.Add(50 * time.Millisecond)) },
		5*time.Second, 10*time.Millisecond)
	s.SetFault(storetest.FaultRecord, true)
	_, err := s.ExpireLeases(t.Context(), []server.LeaseRef{{LicenseID: lic.ID, LeaseID: res.Lease.ID}})
	require.Error(t, err)
	_, rdb := testServers(t)
	require.EqualValues(t, 1, rdb.HLen(t.Context(), loc.license(lic.ID)[5]).Val(), "the lease waits in the expiring hash")
	for _, call := range []func() error{
		func() error { _, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret("wrong")); return err },
		func() error { _, err := s.Release(t.Context(), res.Lease.ID, server.HashSecret("wrong")); return err },
	} {
		requireCode(t, call(), server.EPERMISSION, server.ReasonLeaseTokenWrong)
	}
	s.SetFault(storetest.FaultRecord, false)
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
}

// TestFailedFlushIsWrittenByTheNext: PostgreSQL fails while heartbeats are
// written behind; the heartbeats that were not written stay buffered, and
// the next flush, PostgreSQL back, writes them (a Redis loss after it then
// costs no more than one flush interval, invariant 9).
func TestFailedFlushIsWrittenByTheNext(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s := loc.openFaulty(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour }) // only explicit flushes
	t.Cleanup(func() { _ = s.Close() })
	tn := mkTenant(t, s.Store)
	lic := mkLicense(t, s.Store, tn.ID, 1, time.Hour)
	res, tok := acq(t, s.Store, lic.Key, "a")
	waitRedisPast(t, s.Store, res.Lease.AcquiredAt)
	b, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)

	s.SetFault(storetest.FaultRecord, true)
	require.Error(t, s.flush(t.Context()), "PostgreSQL is down")
	s.SetFault(storetest.FaultRecord, false)
	require.NoError(t, s.flush(t.Context()))
	hb, dl, _ := loc.recorded(t, res.Lease.ID)
	require.True(t, hb.Equal(b.LastHeartbeatAt), "recorded heartbeat %s, acknowledged %s", hb, b.LastHeartbeatAt)
	require.True(t, dl.Equal(b.ExpiresAt), "recorded deadline %s, acknowledged %s", dl, b.ExpiresAt)
}
