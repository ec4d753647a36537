package service

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// waiter is one WaitForSeat call running in the background.
type waiter struct {
	places  chan Place
	granted chan Grant
	failed  chan error
}

func (e *env) wait(ctx context.Context, key, fingerprint string) *waiter {
	w := &waiter{places: make(chan Place, 100), granted: make(chan Grant, 1), failed: make(chan error, 1)}
	go func() {
		g, err := e.svc.WaitForSeat(ctx, SeatRequest{LicenseKey: key, Fingerprint: fingerprint}, "", func(p Place) error {
			w.places <- p
			return nil
		})
		if err != nil {
			w.failed <- err
			return
		}
		w.granted <- g
	}()
	return w
}

// placeIs waits until the waiter is told place pos.
func (w *waiter) placeIs(t testing.TB, pos int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-w.places:
			if p.Position == pos {
				return
			}
		case err := <-w.failed:
			t.Fatalf("the wait ended waiting for place %d: %v", pos, err)
		case <-deadline:
			t.Fatalf("never told place %d", pos)
		}
	}
}

// headRefused waits until the head of a queue was refused a seat n times
// in all: it is polling, not granted.
func (e *env) headRefused(t *testing.T, n float64) {
	t.Helper()
	require.Eventually(t, func() bool {
		var m dto.Metric
		return e.metrics.WaitTries.Write(&m) == nil && m.GetCounter().GetValue() >= n
	}, 10*time.Second, time.Millisecond)
}

func TestWaiterGetsTheSeatWhenOneFrees(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	held := e.acquire(t, lic.Key, "holder")

	w := e.wait(t.Context(), lic.Key, "waiter")
	w.placeIs(t, 1)
	e.headRefused(t, 8) // a 2 s wait at the default --wait-poll
	require.Empty(t, w.granted, "no seat while the only one is held")
	view, err := e.svc.GetLicense(t.Context(), lic.TenantID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 1, view.SeatsInUse)
	require.Equal(t, 1, view.Waiting, "GetLicense counts the waiter")
	views, _, err := e.svc.ListLicenses(t.Context(), lic.TenantID, server.Page{})
	require.NoError(t, err)
	require.Len(t, views, 1)
	require.Equal(t, 1, views[0].Waiting, "ListLicenses counts the waiter")

	_, err = e.svc.Release(t.Context(), held.Lease.ID, held.Token)
	require.NoError(t, err)
	g := within(t, w.granted, "the grant")
	require.Equal(t, "waiter", g.Lease.Fingerprint)
	require.NotEmpty(t, g.Token)
	require.Equal(t, server.LeaseActive, g.Lease.State)

	// The waiter's tries that found no seat are the wait going on, not
	// refused acquisitions: seatd_acquisitions_total counts the wait once,
	// as its grant.
	count := func(result string) float64 {
		var m dto.Metric
		require.NoError(t, e.metrics.Acquisitions.WithLabelValues(result).Write(&m))
		return m.GetCounter().GetValue()
	}
	require.Zero(t, count(string(server.EEXHAUSTED)), "no acquisition was refused")
	require.Equal(t, 2.0, count("ok"), "the holder's and the waiter's")
	_, err = e.svc.Acquire(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: "third"})
	require.Equal(t, server.EEXHAUSTED, server.ErrorCode(err))
	require.Equal(t, 1.0, count(string(server.EEXHAUSTED)), "a refused AcquireSeat counts, once")
}

// attempts records whose acquisitions reached the store.
type attempts struct {
	server.Store
	mu           sync.Mutex
	fingerprints []string
}

func (a *attempts) Acquire(ctx context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	a.mu.Lock()
	a.fingerprints = append(a.fingerprints, req.Fingerprint)
	a.mu.Unlock()
	return a.Store.Acquire(ctx, req)
}

func (a *attempts) since(n int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.fingerprints[n:])
}

func TestWaitQueueIsFIFO(t *testing.T) {
	t.Parallel()
	tried := &attempts{}
	e := newEnv(t, func(c *Config) { tried.Store, c.Store = c.Store, tried })
	lic := e.license(t, 1)
	held := e.acquire(t, lic.Key, "holder")
	before := len(tried.since(0))

	// Each joins once the one before it has its place, so the order of
	// arrival is known.
	names := []string{"first", "second", "third"}
	var waiters []*waiter
	for i, name := range names {
		w := e.wait(t.Context(), lic.Key, name)
		w.placeIs(t, i+1)
		waiters = append(waiters, w)
	}
	// Many head polls, enough for a waiter behind it to have tried too.
	e.headRefused(t, 20)
	for _, fp := range tried.since(before) {
		require.Equal(t, "first", fp, "only the head of the queue tries for a seat")
	}
	for i, w := range waiters {
		_, err := e.svc.Release(t.Context(), held.Lease.ID, held.Token)
		require.NoError(t, err)
		held = within(t, w.granted, names[i]+"'s grant")
		require.Equal(t, names[i], held.Lease.Fingerprint, "seat %d goes to the waiter who came %d", i+1, i+1)
		for _, later := range waiters[i+1:] {
			require.Empty(t, later.granted, "a later waiter does not jump the queue")
		}
	}
}

func TestWaitForAnUnknownKeyQueuesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.svc.WaitForSeat(t.Context(), SeatRequest{LicenseKey: "slk_unknown", Fingerprint: "f"}, "", func(Place) error {
		t.Error("a guess got a place in a queue")
		return nil
	})
	require.Equal(t, server.ReasonLicenseNotFound, server.ErrorReason(err))
}

func TestShutdownEndsAWaitWithItsPlaceKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	e.acquire(t, lic.Key, "holder")
	w := e.wait(t.Context(), lic.Key, "waiter")
	var ticket string
	select {
	case p := <-w.places:
		ticket = p.Ticket
	case <-time.After(10 * time.Second):
		t.Fatal("no place")
	}
	e.svc.BeginShutdown()
	require.ErrorIs(t, within(t, w.failed, "the wait's end"), ErrShuttingDown)

	// The ticket still holds place 1: a new wait resuming it is first.
	resumed, err := e.svc.queue.Join(t.Context(), server.HashSecret(lic.Key), 0, ticket)
	require.NoError(t, err)
	defer resumed.Leave(t.Context())
	place, err := resumed.Position(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, place.Position)
}

// TestUnconfirmedWaiterGrant: a waiter's grant is revoked after the hold
// window only when the store shows it exactly as granted. A store that
// lost recent heartbeats (Redis lost, or a restart after a crash) gives
// the write-behind interval back: the deadline moved without a heartbeat,
// and the seat stays with the waiter, who may well have confirmed it.
func TestUnconfirmedWaiterGrant(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	granted := server.Lease{LastHeartbeatAt: t0, ExpiresAt: t0.Add(time.Minute)}
	for name, c := range map[string]struct {
		hb, deadline time.Time
		want         bool
	}{
		"as granted":               {t0, t0.Add(time.Minute), true},
		"heartbeated":              {t0.Add(time.Second), t0.Add(time.Minute + time.Second), false},
		"deadline given back only": {t0, t0.Add(time.Minute + 11*time.Second), false},
	} {
		now := server.Lease{LastHeartbeatAt: c.hb, ExpiresAt: c.deadline}
		require.Equal(t, c.want, server.Unconfirmed(granted, now), name)
	}
}

// TestWaitEndsWhenTheLicenseStopsBeingUsable: a license deactivated, or
// past its expiry, while clients wait on it ends their waits with the
// reason, the head's first (its next try) and then the others, each as it
// becomes the head: nobody waits for a seat that can never come.
func TestWaitEndsWhenTheLicenseStopsBeingUsable(t *testing.T) {
	t.Parallel()
	for reason, change := range map[string]func(e *env, lic server.License) ([]string, LicenseInput){
		server.ReasonLicenseInactive: func(_ *env, lic server.License) ([]string, LicenseInput) {
			off := false
			return []string{"active"}, LicenseInput{ID: lic.ID, Active: &off}
		},
		server.ReasonLicenseExpired: func(e *env, lic server.License) ([]string, LicenseInput) {
			at := e.clock.Now().Add(time.Hour)
			return []string{"expires_at"}, LicenseInput{ID: lic.ID, ExpiresAt: &at}
		},
	} {
		t.Run(reason, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			lic := e.license(t, 1)
			e.acquire(t, lic.Key, "holder")
			head := e.wait(t.Context(), lic.Key, "head")
			head.placeIs(t, 1)
			next := e.wait(t.Context(), lic.Key, "next")
			next.placeIs(t, 2)
			e.headRefused(t, 1)

			paths, in := change(e, lic)
			_, err := e.svc.UpdateLicense(t.Context(), "operator", lic.TenantID, in, paths)
			require.NoError(t, err)
			e.clock.Advance(2 * time.Hour) // past the expiry (a deactivated license stays so)
			for name, w := range map[string]*waiter{"head": head, "next": next} {
				err := within(t, w.failed, name+"'s wait's end")
				require.Equal(t, reason, server.ErrorReason(err), name)
			}
			n, err := e.svc.queue.Length(t.Context(), server.HashSecret(lic.Key))
			require.NoError(t, err)
			require.Zero(t, n, "they left the queue")
		})
	}
}
