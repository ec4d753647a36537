package service

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/waitqueue"
)

// Priorities of a site policy (docs/concepts/policy.md, "Priorities"):
// WaitForSeat serves a higher level's waiters first, and each level's in
// the order they joined.

func hostS(name string) server.Subject { return server.Subject{Kind: server.SubjectHost, Name: name} }

// waitFor is wait for a whole request (user, host, feature).
func (e *env) waitFor(ctx context.Context, req SeatRequest) *waiter {
	w := &waiter{places: make(chan Place, 100), granted: make(chan Grant, 1), failed: make(chan error, 1)}
	go func() {
		g, err := e.svc.WaitForSeat(ctx, req, "", func(p Place) error {
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

// grantOrder releases each seat a waiter is granted at once, and returns
// the waiters' names in the order they were granted (a wait that ends
// otherwise fails the test).
func grantOrder(t *testing.T, e *env, waiters map[string]*waiter) []string {
	t.Helper()
	type granted struct {
		name string
		g    Grant
	}
	ch := make(chan granted, len(waiters))
	failed := make(chan error, len(waiters))
	for name, w := range waiters {
		go func() {
			select {
			case g := <-w.granted:
				ch <- granted{name, g}
			case err := <-w.failed:
				failed <- err
			case <-t.Context().Done():
			}
		}()
	}
	var order []string
	for range waiters {
		select {
		case g := <-ch:
			order = append(order, g.name)
			_, err := e.svc.Release(t.Context(), g.g.Lease.ID, g.g.Token)
			require.NoError(t, err)
		case err := <-failed:
			t.Fatalf("a wait ended without a seat: %v", err)
		case <-time.After(eventTimeout):
			t.Fatalf("timed out after %s; granted so far: %v", eventTimeout, order)
		}
	}
	return order
}

// setPriorities sets a policy of priorities (and rules).
func (e *env) setPriorities(t *testing.T, licenseID string, rules []server.PolicyRule, ps ...server.Priority) {
	t.Helper()
	_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, licenseID, &server.Policy{Rules: rules, Priorities: ps})
	require.NoError(t, err)
}

func (e *env) putGroup(t *testing.T, name string, kind server.SubjectKind, members ...string) {
	t.Helper()
	_, err := e.svc.PutGroup(t.Context(), "operator", server.DefaultTenantID, server.Group{Name: name, Kind: kind, Members: members})
	require.NoError(t, err)
}

// TestWaitersServedByPriority: one seat, held; eight waiters join one
// after another, by user, host, group and host group at levels 10, 3, 0
// and -5. The seat goes to the levels in turn, highest first, and within a
// level to the waiters in the order they joined, whatever their order of
// arrival across levels. Over the memory queue and the Redis one.
func TestWaitersServedByPriority(t *testing.T) {
	t.Parallel()
	for name, newQueue := range testQueues {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(c *Config) { c.WaitQueue = newQueue(t, 20) })
			lic := e.license(t, 1)
			e.putGroup(t, "designers", server.SubjectGroup, "dana", "dora")
			e.putGroup(t, "farm", server.SubjectHostGroup, "build-1", "build-2")
			e.setPriorities(t, lic.ID, nil,
				server.Priority{Subject: group("designers"), Level: 10},
				server.Priority{Subject: hostS("WS-LEAD"), Level: 10},
				server.Priority{Subject: user("quinn"), Level: 3},
				server.Priority{Subject: server.Subject{Kind: server.SubjectHostGroup, Name: "farm"}, Level: -5},
				server.Priority{Feature: "", Subject: user("bob"), Level: 0})
			held := e.acquire(t, lic.Key, "holder")

			// name, user, host, in order of arrival; the place each is
			// told as it joins.
			arrivals := []struct {
				name, user, host string
				place            int
			}{
				{"farm-1", "ci", "build-1", 1},
				{"bob", "bob", "ws-1", 1},
				{"dana", "dana", "ws-2", 1},
				{"quinn", "quinn", "ws-3", 2},
				{"carol", "carol", "ws-4", 4},
				{"lead", "lee", "ws-lead", 2},
				{"farm-2", "ci", "BUILD-2", 7},
				{"dora", "dora", "ws-5", 3},
			}
			waiters := map[string]*waiter{}
			for _, a := range arrivals {
				w := e.waitFor(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: a.name, User: a.user, Hostname: a.host})
				w.placeIs(t, a.place)
				waiters[a.name] = w
			}
			view, err := e.svc.GetLicense(t.Context(), lic.TenantID, lic.ID)
			require.NoError(t, err)
			require.Equal(t, len(arrivals), view.Waiting)

			_, err = e.svc.Release(t.Context(), held.Lease.ID, held.Token)
			require.NoError(t, err)
			require.Equal(t, []string{"dana", "lead", "dora", "quinn", "bob", "carol", "farm-1", "farm-2"}, grantOrder(t, e, waiters))
		})
	}
}

// TestFeaturePriorityIsTheFeaturesOwn: a priority of a feature orders the
// feature's queue; one of the base pool does not.
func TestFeaturePriorityIsTheFeaturesOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	e.grant(t, lic, GrantInput{Feature: "render", Seats: 1})
	e.setPriorities(t, lic.ID, nil,
		server.Priority{Feature: "render", Subject: user("rita"), Level: 1},
		server.Priority{Subject: user("bob"), Level: 1})
	req := func(fp, u string) SeatRequest {
		return SeatRequest{LicenseKey: lic.Key, Fingerprint: fp, User: u, Hostname: "h", Feature: "render"}
	}
	_, err := e.svc.Acquire(t.Context(), req("holder", "x"))
	require.NoError(t, err)
	bob := e.waitFor(t.Context(), req("bob", "bob"))
	bob.placeIs(t, 1)
	rita := e.waitFor(t.Context(), req("rita", "rita"))
	rita.placeIs(t, 1)
	bob.placeIs(t, 2) // bob's priority is of the base pool: level 0 here
}

// TestPriorityWithReservations: 2 seats, 1 reserved for group night; a
// designer (level 10) joins last and is first in line. When night's seat
// frees, the designer, refused it (SEATS_RESERVED), stands aside, and so
// does bob behind him: alice, night's, takes it out of turn. The next
// shared seat is the designer's, ahead of bob and carol who came first;
// then bob's and carol's in their order. Over the memory queue and the
// Redis one.
func TestPriorityWithReservations(t *testing.T) {
	t.Parallel()
	for name, newQueue := range testQueues {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tries := &outcomes{}
			looks := &looks{Queue: newQueue(t, 10)}
			e := newEnv(t, func(c *Config) { tries.Store, c.Store, c.WaitQueue = c.Store, tries, looks })
			lic := e.license(t, 2)
			e.putGroup(t, "night", server.SubjectGroup, "alice", "nina")
			e.putGroup(t, "designers", server.SubjectGroup, "dave")
			e.setPriorities(t, lic.ID,
				[]server.PolicyRule{{Kind: server.RuleReserve, Count: 1, Subject: group("night")}},
				server.Priority{Subject: group("designers"), Level: 10})
			erin := e.acquireAs(t, lic.Key, "erin", "erin")
			require.Empty(t, erin.Lease.Reservation, "a shared seat")
			nina := e.acquireAs(t, lic.Key, "nina", "nina")
			require.NotEmpty(t, nina.Lease.Reservation, "night's seat")

			bob := e.waitAs(t.Context(), lic.Key, "bob", "bob")
			bob.placeIs(t, 1)
			alice := e.waitAs(t.Context(), lic.Key, "alice", "alice")
			alice.placeIs(t, 2)
			carol := e.waitAs(t.Context(), lic.Key, "carol", "carol")
			carol.placeIs(t, 3)
			dave := e.waitAs(t.Context(), lic.Key, "dave", "dave")
			dave.placeIs(t, 1)
			bob.placeIs(t, 2)

			// Night's seat frees: only alice may take it.
			_, err := e.svc.Release(t.Context(), nina.Lease.ID, nina.Token)
			require.NoError(t, err)
			a := within(t, alice.granted, "alice's seat, night's")
			require.NotEmpty(t, a.Lease.Reservation)
			mark := tries.len()
			dave.stillWaiting(t, "dave")
			bob.stillWaiting(t, "bob")
			// Once dave's tries find no seat at all, he stands back in
			// line: his second such refusal comes after he did. Then bob
			// and carol, behind him, look at their place and find it is
			// not their turn: neither tries again, and none is under way.
			require.Eventually(t, func() bool { return tries.count(mark, "dave", server.ReasonSeatsExhausted) >= 2 },
				eventTimeout, time.Millisecond)
			since := looks.len()
			require.Eventually(t, func() bool {
				return looks.sawNoTurn(since, looks.ticket(0)) && looks.sawNoTurn(since, looks.ticket(2))
			}, eventTimeout, time.Millisecond, "bob and carol look")

			_, err = e.svc.Release(t.Context(), erin.Lease.ID, erin.Token)
			require.NoError(t, err)
			d := within(t, dave.granted, "dave's seat, a shared one, before bob's and carol's")
			require.Empty(t, d.Lease.Reservation)
			bob.stillWaiting(t, "bob")
			carol.stillWaiting(t, "carol")
			_, err = e.svc.Release(t.Context(), d.Lease.ID, d.Token)
			require.NoError(t, err)
			require.Equal(t, []string{"bob", "carol"}, grantOrder(t, e, map[string]*waiter{"bob": bob, "carol": carol}),
				"freed by dave's release, then bob's")
		})
	}
}

// TestPriorityChangeKeepsQueuedWaitersLevels: a policy change reorders
// none of the waiters already queued; those who join after it wait at its
// levels.
func TestPriorityChangeKeepsQueuedWaitersLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	e.setPriorities(t, lic.ID, nil, server.Priority{Subject: user("bob"), Level: 5})
	held := e.acquire(t, lic.Key, "holder")
	carol := e.waitAs(t.Context(), lic.Key, "carol", "carol")
	carol.placeIs(t, 1)
	bob := e.waitAs(t.Context(), lic.Key, "bob", "bob")
	bob.placeIs(t, 1)
	// carol is raised above bob: bob keeps his place at level 5, carol at 0.
	e.setPriorities(t, lic.ID, nil, server.Priority{Subject: user("carol"), Level: 9})
	dave := e.waitAs(t.Context(), lic.Key, "dave", "dave")
	dave.placeIs(t, 3)
	carol2 := e.waitAs(t.Context(), lic.Key, "carol-2", "carol")
	carol2.placeIs(t, 1)
	_, err := e.svc.Release(t.Context(), held.Lease.ID, held.Token)
	require.NoError(t, err)
	require.Equal(t, []string{"carol-2", "bob", "carol", "dave"},
		grantOrder(t, e, map[string]*waiter{"carol": carol, "bob": bob, "dave": dave, "carol-2": carol2}))
}

// TestBadPrioritiesAreRefusedNamingTheField: a priority's shape is
// refused naming the entry and field, before the store is asked; what
// needs the license and groups, by the store; nothing is set or audited.
func TestBadPrioritiesAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 3)
	good := server.Priority{Subject: user("bob"), Level: 1}
	for field, bad := range map[string]server.Priority{
		"priorities[1].feature":      {Feature: "no such feature", Subject: user("bob"), Level: 1},
		"priorities[1].subject.kind": {Subject: server.Subject{Name: "bob"}, Level: 1},
		"priorities[1].subject.name": {Subject: user("bob\x07"), Level: 1},
		"priorities[1].level":        {Subject: user("carol"), Level: server.MaxPriorityLevel + 1},
	} {
		_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Priorities: []server.Priority{good, bad}})
		requireField(t, err, field, bad)
	}
	for field, bad := range map[string]server.Priority{
		"priorities[1].level":        {Subject: user("carol"), Level: server.MinPriorityLevel - 1},
		"priorities[1].feature":      {Feature: "render", Subject: user("carol")},
		"priorities[1].subject.name": {Subject: group("ghost")},
		"priorities[1]":              {Subject: user("bob"), Level: 7},
	} {
		_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Priorities: []server.Priority{good, bad}})
		requireField(t, err, field, bad)
	}
	_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Priorities: make([]server.Priority, server.MaxPolicyRules+1)})
	requireField(t, err, "priorities")
	for _, entry := range e.audit(t, server.DefaultTenantID) {
		require.NotEqual(t, "policy.set", entry.Action, "a refused policy is not audited")
	}
	l, err := e.svc.GetPolicy(t.Context(), server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Nil(t, l.Policy, "nothing set")
}

// TestPrioritiesAloneAreAPolicy: a policy of priorities and no rules is
// kept (and audited with their number); it refuses no acquisition.
func TestPrioritiesAloneAreAPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	ps := []server.Priority{{Subject: user("bob"), Level: 2}, {Subject: hostS("ws-1"), Level: -1}}
	l, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Priorities: ps})
	require.NoError(t, err)
	require.NotNil(t, l.Policy)
	require.Equal(t, ps, l.Policy.Priorities)
	require.Empty(t, l.Policy.Rules)
	set := e.auditOf(t, server.DefaultTenantID, "policy.set", lic.ID)
	require.Equal(t, map[string]string{"license_id": lic.ID, "rules": "0", "priorities": "2"}, set.Details)
	got, err := e.svc.GetPolicy(t.Context(), server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, ps, got.Policy.Priorities)
	e.acquireAs(t, lic.Key, "c1", "carol")
}

// outcomes is a store that records each acquisition's fingerprint and
// refusal reason ("" granted).
type outcomes struct {
	server.Store
	mu    sync.Mutex
	tried []outcome
}

type outcome struct{ fingerprint, reason string }

func (o *outcomes) Acquire(ctx context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	res, err := o.Store.Acquire(ctx, req)
	o.mu.Lock()
	o.tried = append(o.tried, outcome{req.Fingerprint, server.ErrorReason(err)})
	o.mu.Unlock()
	return res, err
}

func (o *outcomes) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tried)
}

// count is how many tries of fingerprint since the first n were refused
// with reason.
func (o *outcomes) count(n int, fingerprint, reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := 0
	for _, x := range o.tried[n:] {
		if x.fingerprint == fingerprint && x.reason == reason {
			c++
		}
	}
	return c
}

// looks is a wait queue that records the tickets in the order they
// joined, and every place a ticket was told (its turn).
type looks struct {
	waitqueue.Queue
	mu      sync.Mutex
	tickets []string
	seen    []look
}

type look struct {
	ticket string
	turn   bool
}

func (q *looks) Join(ctx context.Context, name string, level int, resume string) (waitqueue.Ticket, error) {
	t, err := q.Queue.Join(ctx, name, level, resume)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.tickets = append(q.tickets, t.ID())
	q.mu.Unlock()
	return lookedTicket{Ticket: t, q: q}, nil
}

func (q *looks) ticket(i int) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tickets[i]
}

func (q *looks) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.seen)
}

// sawNoTurn reports whether, since the first n looks, ticket was told it
// is not its turn.
func (q *looks) sawNoTurn(n int, ticket string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Contains(q.seen[n:], look{ticket, false})
}

type lookedTicket struct {
	waitqueue.Ticket
	q *looks
}

func (t lookedTicket) Position(ctx context.Context) (waitqueue.Place, error) {
	p, err := t.Ticket.Position(ctx)
	if err == nil {
		t.q.mu.Lock()
		t.q.seen = append(t.q.seen, look{t.ID(), p.Turn})
		t.q.mu.Unlock()
	}
	return p, err
}
