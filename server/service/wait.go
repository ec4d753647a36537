package service

import (
	"context"
	"errors"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/waitqueue"
)

var (
	// ErrQueueFull refuses a waiter beyond the queue's bound.
	ErrQueueFull = server.Errorf(server.EEXHAUSTED, server.ReasonQueueFull, "too many clients are waiting for a seat on this license; retry later")
	// ErrShuttingDown ends a wait on an instance that is draining; the
	// waiter keeps its place for a wait elsewhere with its ticket.
	ErrShuttingDown = server.Errorf(server.EUNAVAILABLE, "SERVER_SHUTTING_DOWN", "server is shutting down; reconnect and wait again")
)

// Place is a waiter's place in its license's queue.
type Place struct {
	Position    int // 1 = next
	QueueLength int
	Ticket      string // resumes the place in a later wait
}

// WaitForSeat queues the caller FIFO per license until a seat frees (per
// license, feature and version for a request of a feature: queueName),
// behind the waiters of a higher priority level under the license's site
// policy and ahead of those of a lower one (server.Policy.PriorityLevel,
// resolved as the caller joins). The waiters whose turn it is try the
// store's atomic acquire every WaitPoll; others only watch their place.
// Without a site policy that is the head alone. A waiter refused for who
// it is (a cap of its own, seats reserved for others: standsAside) keeps
// its place but stands aside, so that the waiter behind it tries too (in
// the queue's order among those who can be served), until a try of its
// own is refused for want of a seat, for anyone. moved is
// told each new place (and may end the wait with an error). A granted seat
// must be heartbeated within WaitHold, or it is revoked and goes to the
// next waiter. resume is a ticket of an earlier wait whose place to take
// over ("" for none).
func (s *Service) WaitForSeat(ctx context.Context, req SeatRequest, resume string, moved func(Place) error) (Grant, error) {
	// Only a key that opens a usable license gets a queue (named by the
	// key's hash): nothing is written for a guess.
	lic, err := s.store.LicenseByKey(ctx, req.LicenseKey)
	if err != nil {
		return Grant{}, err
	}
	if err := lic.CheckUsable(s.now()); err != nil {
		return Grant{}, err
	}
	if err := CheckFeatureRequest(req.Feature, req.Version); err != nil {
		return Grant{}, err
	}
	if req.Feature != "" {
		// A feature or version the license does not hold is refused at
		// once (the store's own refusal names it), not waited for.
		if _, err := lic.GrantsFor(req.Feature, req.Version); err != nil {
			return Grant{}, err
		}
	}
	// The waiter's level is the policy's now, kept for the whole wait (and
	// by a resumed place): a policy change reorders no one already queued.
	level := lic.Policy.PriorityLevel(req.Feature, server.Identity{User: req.User, Host: req.Hostname})
	name := queueName(req)
	ticket, err := s.queue.Join(ctx, name, level, resume)
	if errors.Is(err, waitqueue.ErrFull) {
		return Grant{}, ErrQueueFull
	}
	if err != nil {
		return Grant{}, server.Unavailable(err)
	}
	// A waiter that goes away leaves the queue. One this server sends away
	// as it shuts down keeps its place: its ticket lapses within seconds
	// unless the client waits again elsewhere with it (resume).
	myTurn, unwatch := s.queueMoves.watch(ticket.ID())
	defer unwatch()
	left := false // or kept its place
	leave := func() {
		if !left {
			left = true
			s.queueMoves.turnOf(ticket.Leave(ctx)) // the next waiter tries at once
		}
	}
	defer leave()

	// The waiters whose turn it is try for a seat every waitPoll; the
	// others only keep their place alive and watch it, every
	// idleWaitPolls polls, or at once when a waiter on this instance
	// makes it their turn (leaving, or standing aside): a waiter's cost
	// does not grow with the queue, nor does a departure's.
	lastPos := -1
	aside := false   // the queue holds this waiter as standing aside
	hadTurn := false // at the look before this one
	for {
		place, err := ticket.Position(ctx)
		if err != nil {
			return Grant{}, server.Unavailable(err)
		}
		if place.Position != lastPos {
			lastPos = place.Position
			if err := moved(Place{Position: place.Position, QueueLength: place.Length, Ticket: ticket.ID()}); err != nil {
				return Grant{}, err
			}
		}
		if place.Turn {
			// A try that finds no seat free is the wait going on, not a
			// refused acquisition: it counts apart, and only the wait's
			// end (a grant, or another refusal) counts as an acquisition.
			g, err := s.acquire(ctx, req)
			if server.ErrorCode(err) == server.EEXHAUSTED {
				s.metrics.WaitTries.Inc()
			} else {
				s.okAcquisitions.count(s.metrics.Acquisitions, err)
			}
			if err == nil {
				leave()
				if !g.Existing {
					s.holdForFirstHeartbeat(g.Lease)
				}
				return g, nil
			}
			if server.ErrorCode(err) != server.EEXHAUSTED {
				return Grant{}, err // unknown key, inactive license, EXCLUDED...
			}
			// Stand aside while refused for who it is, back once refused
			// for want of a seat. Standing aside on a turn just begun
			// (again) passes the turn on to the waiter behind, as the first
			// time did: a waiter does not tell whether that one was told.
			if own := standsAside(err); own != aside || (own && !hadTurn) {
				next, err := ticket.StandAside(ctx, own)
				if err != nil {
					return Grant{}, server.Unavailable(err)
				}
				aside = own
				s.queueMoves.turnOf(next)
			}
		}
		hadTurn = place.Turn
		wait := s.waitPoll
		if !place.Turn {
			wait *= idleWaitPolls
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Grant{}, ctx.Err()
		case <-s.shutdown:
			t.Stop()
			left = true // keeps its place
			return Grant{}, ErrShuttingDown
		case <-myTurn:
			t.Stop()
		case <-t.C:
		}
	}
}

// idleWaitPolls is how many polls a waiter whose turn it is not waits
// between two looks at its place (2 s by default: well within the Redis
// queue's 5 s liveness).
const idleWaitPolls = 8

// standsAside reports whether a try refused with err was refused for the
// waiter's identity rather than for want of a seat: a cap on its user,
// host or group, or seats reserved for others. A waiter behind it may be
// served then; it cannot take a seat the refused one could have taken,
// since that one could take none. A seat that frees for it (a lease of its
// own ends) is anyone's whose turn it is until its next try, a poll later.
func standsAside(err error) bool {
	switch server.ErrorReason(err) {
	case server.ReasonUserLimit, server.ReasonHostLimit, server.ReasonGroupLimit, server.ReasonSeatsReserved:
		return true
	}
	return false
}

// queueName names the queue of a request: its license key's hash for the
// base pool (what LicenseView.Waiting counts); for a feature, the hash of
// key, feature and version, so that a request no free seat can serve (a
// newer version, say) never holds up those that one can. Requests of one
// feature and version wait in one FIFO line; lines of other versions of the
// feature take seats of the grants they share as their heads poll.
func queueName(req SeatRequest) string {
	if req.Feature == "" {
		return server.HashSecret(req.LicenseKey)
	}
	return server.HashSecret(req.LicenseKey + "\x00" + req.Feature + "\x00" + req.Version)
}
