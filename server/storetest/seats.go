package storetest

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// outcome is one concurrent Acquire.
type outcome struct {
	res   server.AcquireResult
	token string
	err   error
}

// acquireConcurrently runs n Acquires at once (released together by a
// barrier); fingerprint(i) and mut(i) shape request i.
func acquireConcurrently(ctx context.Context, s server.Store, key string, n int, fingerprint func(i int) string, mut func(i int, r *server.AcquireRequest)) []outcome {
	out := make([]outcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			var m func(*server.AcquireRequest)
			if mut != nil {
				m = func(r *server.AcquireRequest) { mut(i, r) }
			}
			res, token, err := tryAcquire(ctx, s, key, fingerprint(i), m)
			out[i] = outcome{res, token, err}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// granted splits outcomes into granted leases and errors, and checks that
// every error is SEATS_EXHAUSTED reporting the limit.
func granted(t *testing.T, outs []outcome, limit int) []outcome {
	t.Helper()
	var ok []outcome
	for i, o := range outs {
		if o.err == nil {
			require.LessOrEqual(t, o.res.SeatsInUse, limit, "acquire %d: SeatsInUse over the limit", i)
			require.False(t, o.res.Existing, "acquire %d: distinct fingerprints never share a lease", i)
			ok = append(ok, o)
			continue
		}
		requireCode(t, o.err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "acquire %d", i)
		require.Equal(t, strconv.Itoa(limit), errMeta(o.err)["seat_limit"], "seat_limit metadata of %v", o.err)
	}
	ids := map[string]bool{}
	for _, o := range ok {
		require.False(t, ids[o.res.Lease.ID], "lease %s granted twice", o.res.Lease.ID)
		ids[o.res.Lease.ID] = true
	}
	return ok
}

func testSeatLimit(t *testing.T, newBackend Backend) {
	for _, tc := range []struct {
		name             string
		seats, overdraft int
	}{
		{"200AcquirersOn10SeatsGet10", 10, 0},
		{"200AcquirersOn10SeatsWithOverdraft2Get12", 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := openStore(t, newBackend)
			tn := newTenant(t, s)
			lic := newLicense(t, s, tn.ID, func(l *server.License) { l.Seats, l.Overdraft = tc.seats, tc.overdraft })
			limit := tc.seats + tc.overdraft
			const n = 200

			outs := acquireConcurrently(t.Context(), s, lic.Key, n, func(i int) string { return fmt.Sprintf("fp-%03d", i) }, nil)
			ok := granted(t, outs, limit)
			require.Len(t, ok, limit, "granted leases")
			require.Equal(t, limit, seatsInUse(t, s, tn.ID, lic.ID))

			// Free three seats: exactly three of the next 200 get one.
			for _, o := range ok[:3] {
				release(t, s, o.res.Lease.ID, o.token)
			}
			require.Equal(t, limit-3, seatsInUse(t, s, tn.ID, lic.ID))
			outs = acquireConcurrently(t.Context(), s, lic.Key, n, func(i int) string { return fmt.Sprintf("again-%03d", i) }, nil)
			require.Len(t, granted(t, outs, limit), 3, "granted after 3 releases")
			require.Equal(t, limit, seatsInUse(t, s, tn.ID, lic.ID))

			// A full license refuses and changes nothing.
			_, _, err := tryAcquire(t.Context(), s, lic.Key, "one-more", nil)
			requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
			require.Equal(t, strconv.Itoa(limit), errMeta(err)["seats_in_use"])
			require.Equal(t, limit, seatsInUse(t, s, tn.ID, lic.ID))
		})
	}

	t.Run("ConcurrentAcquireReleaseNeverExceedsLimit", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		const limit, workers, rounds = 5, 40, 12
		lic := newLicense(t, s, tn.ID, seats(limit))

		var (
			held, maxHeld, maxReported, maxCounted atomic.Int64
			grants                                 atomic.Int64
			mu                                     sync.Mutex
			unexpected                             []error
		)
		record := func(err error) {
			mu.Lock()
			unexpected = append(unexpected, err)
			mu.Unlock()
		}
		raise := func(m *atomic.Int64, v int64) {
			for {
				old := m.Load()
				if v <= old || m.CompareAndSwap(old, v) {
					return
				}
			}
		}
		ctx := t.Context()
		done := make(chan struct{})
		var monitor sync.WaitGroup
		monitor.Go(func() { // SeatsInUse never reports more than the limit
			for {
				select {
				case <-done:
					return
				default:
				}
				n, err := s.SeatsInUse(ctx, tn.ID, lic.ID)
				if err != nil {
					record(fmt.Errorf("SeatsInUse: %w", err))
					return
				}
				raise(&maxCounted, int64(n))
				time.Sleep(time.Millisecond)
			}
		})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				fp := fmt.Sprintf("worker-%02d", w)
				for range rounds {
					res, token, err := tryAcquire(ctx, s, lic.Key, fp, nil)
					if err != nil {
						if !isCode(err, server.EEXHAUSTED, server.ReasonSeatsExhausted) {
							record(fmt.Errorf("Acquire: %w", err))
						}
						continue
					}
					grants.Add(1)
					// held counts granted leases whose release has not begun:
					// all of them are live, so held <= live <= limit.
					raise(&maxHeld, held.Add(1))
					raise(&maxReported, int64(res.SeatsInUse))
					time.Sleep(time.Duration(w%3) * time.Millisecond)
					held.Add(-1)
					if _, err := s.Release(ctx, res.Lease.ID, server.HashSecret(token)); err != nil {
						record(fmt.Errorf("Release: %w", err))
					}
				}
			})
		}
		wg.Wait()
		close(done)
		monitor.Wait()

		require.Empty(t, unexpected)
		require.Positive(t, grants.Load())
		require.LessOrEqual(t, maxHeld.Load(), int64(limit), "leases held at once")
		require.LessOrEqual(t, maxReported.Load(), int64(limit), "SeatsInUse reported by Acquire")
		require.LessOrEqual(t, maxCounted.Load(), int64(limit), "SeatsInUse during the run")
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID), "all released")
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, int(grants.Load()), "one usage event per granted lease")
	})
}

func testDedupe(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	// Invariant 4 with a lapsed lease: a grant that takes the dedupe key or
	// the idempotency key of a lease past its deadline ends that lease in
	// the same step, recorded expired exactly once (invariant 5), so that
	// it cannot come back within its revival window beside the new one.
	for _, tc := range []struct {
		name, again, idem string // again: the fingerprint of the second acquisition
	}{
		{"LapsedLeaseOfTheFingerprintEndsWithItsNewLease", "machine-A", ""},
		{"LapsedLeaseOfTheIdempotencyKeyEndsWithItsNewLease", "machine-B", "retry-key"},
	} {
		w.run(tc.name, func(t *testing.T) {
			s := openStore(t, newBackend)
			tn := newTenant(t, s)
			lic := newLicense(t, s, tn.ID, func(l *server.License) {
				l.Seats, l.LeaseTTL, l.RevivalWindow = 2, lapsingTTL(s), time.Minute
			})
			idem := func(r *server.AcquireRequest) { r.IdempotencyKey = tc.idem }
			l1, tok1 := acquire(t, s, lic, "machine-A", idem)
			// The new lease outlives the test; L1 keeps its deadline.
			lic, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
				l.LeaseTTL = longTTL
				return nil
			})
			require.NoError(t, err)
			passDeadline(t, s, l1.Lease.ExpiresAt)

			l2, tok2 := acquire(t, s, lic, tc.again, idem)
			require.False(t, l2.Existing, "a lapsed lease is never handed back")
			require.Equal(t, 1, l2.SeatsInUse)
			// A seat is free and L1 is within its revival window: only
			// its end, recorded by the grant, keeps it from coming back.
			_, err = s.Heartbeat(t.Context(), l1.Lease.ID, server.HashSecret(tok1))
			requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "the lapsed lease revives beside its new lease")
			require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID), "one seat for one %s", cmp.Or(tc.idem, "fingerprint"))
			heartbeat(t, s, l2.Lease.ID, tok2)
			again, _ := acquire(t, s, lic, tc.again, idem)
			require.True(t, again.Existing)
			require.Equal(t, l2.Lease.ID, again.Lease.ID, "the new lease is the one handed back")

			ended := getLease(t, s, tn.ID, l1.Lease.ID)
			require.Equal(t, server.LeaseExpired, ended.State, "the lapsed lease is recorded expired")
			require.Empty(t, expireAllDue(t, s), "cleanup finds nothing left to do")
			requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ended)
			require.Len(t, cleanupOf(cleanupEvents(t, s, tn.ID, lic.ID), l1.Lease.ID), 1, "one cleanup event for the lapsed lease")
			require.Empty(t, usageOf(usageEvents(t, s, tn.ID, lic.ID), l2.Lease.ID), "the new lease has not ended")
		})
	}

	t.Run("SameFingerprintGetsExistingLeaseAndNewToken", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))

		r1, tok1 := acquire(t, s, lic, "machine-a", func(r *server.AcquireRequest) {
			r.User, r.Hostname, r.Metadata = "alice", "host-a", map[string]string{"version": "1.2"}
		})
		require.False(t, r1.Existing)
		require.Equal(t, 1, r1.SeatsInUse)
		time.Sleep(20 * time.Millisecond) // so that the renewal is visible

		r2, tok2 := acquire(t, s, lic, "machine-a", nil)
		require.True(t, r2.Existing, "same fingerprint: the existing lease is handed back")
		require.Equal(t, r1.Lease.ID, r2.Lease.ID)
		require.Equal(t, 1, r2.SeatsInUse, "no second seat")
		requireSameTime(t, r1.Lease.AcquiredAt, r2.Lease.AcquiredAt, "AcquiredAt kept")
		require.True(t, r2.Lease.LastHeartbeatAt.After(r1.Lease.LastHeartbeatAt), "LastHeartbeatAt renewed")
		require.True(t, r2.Lease.ExpiresAt.After(r1.Lease.ExpiresAt), "deadline renewed")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))

		// The token is rotated: the old one no longer works, the new one does.
		_, err := s.Heartbeat(t.Context(), r1.Lease.ID, server.HashSecret(tok1))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "old token after re-acquire")
		_, err = s.Release(t.Context(), r1.Lease.ID, server.HashSecret(tok1))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "release with the old token")
		heartbeat(t, s, r1.Lease.ID, tok2)
		require.Equal(t, server.HashSecret(tok2), getLease(t, s, tn.ID, r1.Lease.ID).TokenHash)

		// A retry is answered even when the license is full.
		acquire(t, s, lic, "machine-b", nil)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "machine-c", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		r3, _ := acquire(t, s, lic, "machine-a", nil)
		require.True(t, r3.Existing)
		require.Equal(t, r1.Lease.ID, r3.Lease.ID)
		require.Equal(t, 2, r3.SeatsInUse)
		require.Equal(t, 2, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("200ConcurrentSameFingerprintShareOneSeat", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))

		outs := acquireConcurrently(t.Context(), s, lic.Key, 200, func(int) string { return "same-machine" }, nil)
		ids := map[string]bool{}
		created := 0
		for i, o := range outs {
			require.NoError(t, o.err, "acquire %d", i)
			require.Equal(t, 1, o.res.SeatsInUse, "acquire %d", i)
			ids[o.res.Lease.ID] = true
			if !o.res.Existing {
				created++
			}
		}
		require.Len(t, ids, 1, "one lease for one fingerprint")
		require.Equal(t, 1, created, "exactly one acquire created the lease")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))

		// Token rotation was atomic: exactly one token (the last one) works.
		var leaseID string
		for id := range ids {
			leaseID = id
		}
		working := 0
		for _, o := range outs {
			_, err := s.Heartbeat(t.Context(), leaseID, server.HashSecret(o.token))
			if err == nil {
				working++
				continue
			}
			requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong)
		}
		require.Equal(t, 1, working, "tokens that work after 200 rotations")
	})

	t.Run("IdempotencyKeyUnderPerAcquisition", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(5), strategy(server.PerAcquisition)))
		key := func(k string) func(*server.AcquireRequest) {
			return func(r *server.AcquireRequest) { r.IdempotencyKey = k }
		}

		// No key: every acquisition takes its own seat, same fingerprint or not.
		a, _ := acquire(t, s, lic, "same", nil)
		b, _ := acquire(t, s, lic, "same", nil)
		require.NotEqual(t, a.Lease.ID, b.Lease.ID)
		require.Empty(t, a.Lease.DedupeKey)
		require.Equal(t, 2, b.SeatsInUse)

		k1, _ := acquire(t, s, lic, "fp-1", key("k1"))
		require.False(t, k1.Existing)
		k1again, tok := acquire(t, s, lic, "fp-2", key("k1"))
		require.True(t, k1again.Existing, "same idempotency key")
		require.Equal(t, k1.Lease.ID, k1again.Lease.ID)
		require.Equal(t, 3, k1again.SeatsInUse)
		k2, _ := acquire(t, s, lic, "fp-1", key("k2"))
		require.False(t, k2.Existing)
		require.NotEqual(t, k1.Lease.ID, k2.Lease.ID)
		require.Equal(t, 4, seatsInUse(t, s, tn.ID, lic.ID))

		// Only a live lease is handed back.
		release(t, s, k1.Lease.ID, tok)
		k1new, _ := acquire(t, s, lic, "fp-1", key("k1"))
		require.False(t, k1new.Existing, "the lease with that key was released")
		require.NotEqual(t, k1.Lease.ID, k1new.Lease.ID)
		require.Equal(t, 4, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("ConcurrentSameIdempotencyKeyShareOneSeat", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(10), strategy(server.PerAcquisition)))
		outs := acquireConcurrently(t.Context(), s, lic.Key, 100,
			func(i int) string { return fmt.Sprintf("fp-%d", i) },
			func(_ int, r *server.AcquireRequest) { r.IdempotencyKey = "retry-me" })
		ids := map[string]bool{}
		for i, o := range outs {
			require.NoError(t, o.err, "acquire %d", i)
			ids[o.res.Lease.ID] = true
		}
		require.Len(t, ids, 1, "one lease for one idempotency key")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("IdempotencyKeyWinsOverFingerprint", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(3))
		key := func(r *server.AcquireRequest) { r.IdempotencyKey = "req-1" }
		a, _ := acquire(t, s, lic, "fp-a", key)
		b, _ := acquire(t, s, lic, "fp-b", key)
		require.True(t, b.Existing)
		require.Equal(t, a.Lease.ID, b.Lease.ID)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("LeasingStrategies", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend) // one store, one license per case
		tn := newTenant(t, s)
		type who struct{ fp, user, host string }
		for _, tc := range []struct {
			name     string
			strategy server.LeasingStrategy
			a, b     who
			same     bool
		}{
			{"FingerprintSameFingerprintOtherUserAndHost", server.PerFingerprint, who{"fp1", "alice", "h1"}, who{"fp1", "bob", "h2"}, true},
			{"FingerprintOtherFingerprintSameUser", server.PerFingerprint, who{"fp1", "alice", "h1"}, who{"fp2", "alice", "h1"}, false},
			{"UserSameUserOtherFingerprint", server.PerUser, who{"fp1", "alice", "h1"}, who{"fp2", "alice", "h2"}, true},
			{"UserOtherUserSameFingerprint", server.PerUser, who{"fp1", "alice", "h1"}, who{"fp1", "bob", "h1"}, false},
			{"UserEmptyFallsBackToFingerprint", server.PerUser, who{"fp1", "", "h1"}, who{"fp1", "", "h2"}, true},
			{"UserEmptyOtherFingerprint", server.PerUser, who{"fp1", "", "h1"}, who{"fp2", "", "h1"}, false},
			{"HostnameSameHostOtherFingerprint", server.PerHostname, who{"fp1", "alice", "h1"}, who{"fp2", "bob", "h1"}, true},
			{"HostnameOtherHostSameFingerprint", server.PerHostname, who{"fp1", "alice", "h1"}, who{"fp1", "alice", "h2"}, false},
			{"HostnameEmptyFallsBackToFingerprint", server.PerHostname, who{"fp1", "alice", ""}, who{"fp1", "bob", ""}, true},
			{"AcquisitionNeverShares", server.PerAcquisition, who{"fp1", "alice", "h1"}, who{"fp1", "alice", "h1"}, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				lic := newLicense(t, s, tn.ID, with(seats(5), strategy(tc.strategy)))
				req := func(w who) func(*server.AcquireRequest) {
					return func(r *server.AcquireRequest) { r.User, r.Hostname = w.user, w.host }
				}
				a, _ := acquire(t, s, lic, tc.a.fp, req(tc.a))
				b, _ := acquire(t, s, lic, tc.b.fp, req(tc.b))
				require.Equal(t, server.DedupeKey(tc.strategy, tc.a.fp, tc.a.user, tc.a.host), a.Lease.DedupeKey)
				if tc.same {
					require.True(t, b.Existing)
					require.Equal(t, a.Lease.ID, b.Lease.ID)
					require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
				} else {
					require.False(t, b.Existing)
					require.NotEqual(t, a.Lease.ID, b.Lease.ID)
					require.Equal(t, 2, seatsInUse(t, s, tn.ID, lic.ID))
				}
			})
		}
	})
}
