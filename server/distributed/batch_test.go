package distributed

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// TestConcurrentHotPath: many concurrent acquisitions, heartbeats and
// releases on several licenses (so batches mix licenses) keep every seat
// limit, record every granted lease once, and give each call its own
// answer, including failures mixed into the same batches.
func TestConcurrentHotPath(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	const seats, perLicense = 5, 12
	var lics []server.License
	for range 3 {
		lics = append(lics, mkLicense(t, s, tn.ID, seats, time.Hour))
	}

	type held struct {
		lease server.Lease
		token string
	}
	var (
		mu      sync.Mutex
		granted = map[string][]held{}
		wg      sync.WaitGroup
	)
	for _, l := range lics {
		for i := range perLicense {
			wg.Go(func() {
				r, tok, err := tryAcq(t.Context(), s, l.Key, fmt.Sprintf("fp-%d", i))
				if err != nil {
					if server.ErrorReason(err) != server.ReasonSeatsExhausted {
						t.Errorf("acquire on %s: %v", l.ID, err)
					}
					return
				}
				mu.Lock()
				granted[l.ID] = append(granted[l.ID], held{r.Lease, tok})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	pg, _ := testServers(t)
	for _, l := range lics {
		require.Len(t, granted[l.ID], seats, "seats granted on %s", l.ID)
		var active int
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.sessions
			WHERE license_id = $1 AND state = 'active'`, l.ID).Scan(&active))
		require.Equal(t, seats, active, "recorded active leases on %s", l.ID)
		n, err := s.SeatsInUse(t.Context(), tn.ID, l.ID)
		require.NoError(t, err)
		require.Equal(t, seats, n)
	}

	// Heartbeats, good and bad, at once.
	for _, l := range lics {
		for i, h := range granted[l.ID] {
			wg.Go(func() {
				got, err := s.Heartbeat(t.Context(), h.lease.ID, server.HashSecret(h.token))
				if err != nil || got.ID != h.lease.ID || got.LicenseID != l.ID || !got.ExpiresAt.After(h.lease.ExpiresAt.Add(-time.Millisecond)) {
					t.Errorf("heartbeat %s: %+v, %v", h.lease.ID, got, err)
				}
			})
			if i == 0 {
				wg.Go(func() {
					_, err := s.Heartbeat(t.Context(), h.lease.ID, server.HashSecret("wrong"))
					if server.ErrorReason(err) != server.ReasonLeaseTokenWrong {
						t.Errorf("heartbeat with a wrong token: %v", err)
					}
				})
			}
		}
	}
	wg.Wait()

	// Releases at once, each lease twice: one release ends it, the other
	// finds it released (idempotent); a wrong token is refused.
	var releasedOK atomic.Int64
	for _, l := range lics {
		for _, h := range granted[l.ID] {
			for range 2 {
				wg.Go(func() {
					got, err := s.Release(t.Context(), h.lease.ID, server.HashSecret(h.token))
					if err != nil || got.State != server.LeaseReleased || got.ID != h.lease.ID {
						t.Errorf("release %s: %+v, %v", h.lease.ID, got, err)
						return
					}
					releasedOK.Add(1)
				})
			}
			wg.Go(func() {
				_, err := s.Release(t.Context(), h.lease.ID, server.HashSecret("wrong"))
				if server.ErrorReason(err) != server.ReasonLeaseTokenWrong {
					t.Errorf("release with a wrong token: %v", err)
				}
			})
		}
	}
	wg.Wait()
	require.EqualValues(t, 2*seats*len(lics), releasedOK.Load())
	var usage int
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.usage_events`).Scan(&usage))
	require.Equal(t, seats*len(lics), usage, "one usage event per lease")
	for _, l := range lics {
		n, err := s.SeatsInUse(t.Context(), tn.ID, l.ID)
		require.NoError(t, err)
		require.Zero(t, n, "seats in use on %s after the releases", l.ID)
	}
}

// TestHeartbeatsOfOneLeaseTogether: heartbeats of one lease that arrive
// together run in one heartbeat.lua call, which writes its renewals once at
// the end: every one of them is renewed, and the live deadline is the
// latest one answered.
func TestHeartbeatsOfOneLeaseTogether(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	r, tok := acq(t, s, lic.Key, "together")
	other, otherTok := acq(t, s, lic.Key, "other")

	var (
		mu     sync.Mutex
		latest time.Time
		wg     sync.WaitGroup
	)
	for i := range 64 {
		wg.Go(func() {
			id, hash := r.Lease.ID, server.HashSecret(tok)
			if i%4 == 3 {
				id, hash = other.Lease.ID, server.HashSecret(otherTok)
			}
			got, err := s.Heartbeat(t.Context(), id, hash)
			if err != nil {
				t.Errorf("heartbeat %d of %s: %v", i, id, err)
				return
			}
			if id == r.Lease.ID {
				mu.Lock()
				if got.ExpiresAt.After(latest) {
					latest = got.ExpiresAt
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	_, rdb := testServers(t)
	score, err := rdb.ZScore(t.Context(), live.Keyspace{Prefix: loc.prefix}.License(lic.ID)[2], live.LeaseKey(r.Lease.ID)).Result()
	require.NoError(t, err)
	require.Equal(t, latest.UnixMicro(), int64(score), "live deadline, latest renewal answered %s", latest)
}
