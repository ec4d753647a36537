package service

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Waiting under a site policy (docs/concepts/policy.md, "Waiting for a
// seat"): a waiter refused for who it is stands aside, keeping its place,
// and the waiters behind it are served if they can be, in their order.

// waitAs is wait for a client that claims a user (host "h").
func (e *env) waitAs(ctx context.Context, key, fingerprint, userName string) *waiter {
	w := &waiter{places: make(chan Place, 100), granted: make(chan Grant, 1), failed: make(chan error, 1)}
	go func() {
		g, err := e.svc.WaitForSeat(ctx, SeatRequest{LicenseKey: key, Fingerprint: fingerprint, User: userName, Hostname: "h"}, "", func(p Place) error {
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

func (e *env) acquireAs(t *testing.T, key, fingerprint, userName string) Grant {
	t.Helper()
	g, err := e.svc.Acquire(t.Context(), SeatRequest{LicenseKey: key, Fingerprint: fingerprint, User: userName, Hostname: "h"})
	require.NoError(t, err)
	return g
}

func (e *env) setPolicy(t *testing.T, licenseID string, rules ...server.PolicyRule) {
	t.Helper()
	_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, licenseID, &server.Policy{Rules: rules})
	require.NoError(t, err)
}

// stillWaiting checks that w has neither a seat nor an error.
func (w *waiter) stillWaiting(t *testing.T, who string) {
	t.Helper()
	require.Empty(t, w.granted, "%s got a seat", who)
	require.Empty(t, w.failed, "%s's wait ended", who)
}

// TestCappedWaitersDoNotHoldUpTheQueue: bob and carol, each at their cap
// (max 1), wait at the head of the queue; dave behind them gets one of the
// free seats at once. Each refused head stands aside on its try and tells
// the next waiter, so with polls an hour apart only those hand-offs move
// anyone. bob and carol keep their places. The queue used to let only its
// head try: dave (and every seat) waited until bob's cap lifted. Over the
// memory queue and the Redis one.
func TestCappedWaitersDoNotHoldUpTheQueue(t *testing.T) {
	t.Parallel()
	for name, newQueue := range testQueues {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *Config) { c.WaitQueue, c.WaitPoll = newQueue(t, 10), time.Hour })
			lic := e.license(t, 4)
			e.setPolicy(t, lic.ID,
				server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: user("bob")},
				server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: user("carol")})
			e.acquireAs(t, lic.Key, "b1", "bob")
			e.acquireAs(t, lic.Key, "c1", "carol")

			bob := e.waitAs(t.Context(), lic.Key, "b2", "bob")
			bob.placeIs(t, 1)
			carol := e.waitAs(t.Context(), lic.Key, "c2", "carol")
			carol.placeIs(t, 2)
			dave := e.waitAs(t.Context(), lic.Key, "d1", "dave")
			dave.placeIs(t, 3)
			g := within(t, dave.granted, "dave's seat, behind two capped waiters")
			require.Equal(t, "dave", g.Lease.User)
			bob.stillWaiting(t, "bob")
			carol.stillWaiting(t, "carol")
			view, err := e.svc.GetLicense(t.Context(), lic.TenantID, lic.ID)
			require.NoError(t, err)
			require.Equal(t, 2, view.Waiting, "bob and carol keep their places")
		})
	}
}

// TestWaitersServedOutOfTurnKeepTheirOrder: behind bob (capped at the
// head), carol and dave wait for the one seat that frees: carol, who came
// first, gets it; dave tries only once carol has left the line. A seat that
// frees for bob himself (his own lease ends) is his on his next try.
func TestWaitersServedOutOfTurnKeepTheirOrder(t *testing.T) {
	t.Parallel()
	tried := &attempts{}
	e := newEnv(t, func(c *Config) { tried.Store, c.Store = c.Store, tried })
	lic := e.license(t, 2)
	e.setPolicy(t, lic.ID, server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: user("bob")})
	b1 := e.acquireAs(t, lic.Key, "b1", "bob")
	x1 := e.acquireAs(t, lic.Key, "x1", "xavier")

	bob := e.waitAs(t.Context(), lic.Key, "b2", "bob")
	bob.placeIs(t, 1)
	carol := e.waitAs(t.Context(), lic.Key, "c1", "carol")
	carol.placeIs(t, 2)
	dave := e.waitAs(t.Context(), lic.Key, "d1", "dave")
	dave.placeIs(t, 3)
	e.headRefused(t, 20) // bob and carol try, refused USER_LIMIT and SEATS_EXHAUSTED
	for _, fp := range tried.since(0) {
		require.NotEqual(t, "d1", fp, "dave tried while carol, ahead of him, could be served")
	}

	_, err := e.svc.Release(t.Context(), x1.Lease.ID, x1.Token)
	require.NoError(t, err)
	c := within(t, carol.granted, "carol's seat")
	dave.placeIs(t, 2)
	dave.stillWaiting(t, "dave")
	_, err = e.svc.Release(t.Context(), c.Lease.ID, c.Token)
	require.NoError(t, err)
	within(t, dave.granted, "dave's seat, once carol's frees")
	bob.stillWaiting(t, "bob")

	_, err = e.svc.Release(t.Context(), b1.Lease.ID, b1.Token)
	require.NoError(t, err)
	g := within(t, bob.granted, "bob's seat, once his cap lifts")
	require.Equal(t, "b2", g.Lease.Fingerprint)
}

// TestReservedSeatsHeadLetsAMemberBeServed: the last free seat is kept for
// group night; bob, no member, waits at the head (SEATS_RESERVED) and
// alice, night's, behind him takes the seat at once: it is one bob could
// not take.
func TestReservedSeatsHeadLetsAMemberBeServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.WaitPoll = time.Hour })
	lic := e.license(t, 2)
	_, err := e.svc.PutGroup(t.Context(), "operator", server.DefaultTenantID, server.Group{Name: "night", Kind: server.SubjectGroup, Members: []string{"alice"}})
	require.NoError(t, err)
	e.setPolicy(t, lic.ID, server.PolicyRule{Kind: server.RuleReserve, Count: 1, Subject: group("night")})
	e.acquireAs(t, lic.Key, "e1", "erin")

	bob := e.waitAs(t.Context(), lic.Key, "b1", "bob")
	bob.placeIs(t, 1)
	alice := e.waitAs(t.Context(), lic.Key, "a1", "alice")
	alice.placeIs(t, 2)
	g := within(t, alice.granted, "alice's reserved seat")
	require.NotEmpty(t, g.Lease.Reservation, "night's seat")
	bob.stillWaiting(t, "bob")
}

// TestWaitEndsForAnExcludedClient: EXCLUDED ends a wait at once (it is no
// want of a seat), and the waiter behind is not held up by it.
func TestWaitEndsForAnExcludedClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.WaitPoll = time.Hour })
	lic := e.license(t, 1)
	e.setPolicy(t, lic.ID, server.PolicyRule{Kind: server.RuleExclude, Subject: user("intern")})
	intern := e.waitAs(t.Context(), lic.Key, "i1", "intern")
	require.Equal(t, server.ReasonExcluded, server.ErrorReason(within(t, intern.failed, "the intern's refusal")))
	g := within(t, e.waitAs(t.Context(), lic.Key, "d1", "dave").granted, "dave's seat")
	require.Equal(t, "dave", g.Lease.User)
}
