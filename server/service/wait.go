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
// license, feature and version for a request of a feature: queueName). The
// head of the queue tries the store's atomic acquire every WaitPoll; others
// only watch their place. moved is told each new place (and may end the
// wait with an error). A granted seat must be heartbeated within WaitHold,
// or it is revoked and goes to the next waiter. resume is a ticket of an
// earlier wait whose place to take over ("" for none).
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
	name := queueName(req)
	ticket, err := s.queue.Join(ctx, name, resume)
	if errors.Is(err, waitqueue.ErrFull) {
		return Grant{}, ErrQueueFull
	}
	if err != nil {
		return Grant{}, server.Unavailable(err)
	}
	// A waiter that goes away leaves the queue. One this server sends away
	// as it shuts down keeps its place: its ticket lapses within seconds
	// unless the client waits again elsewhere with it (resume).
	headed, unwatch := s.queueMoves.watch(ticket.ID())
	defer unwatch()
	left := false // or kept its place
	leave := func() {
		if !left {
			left = true
			s.queueMoves.headIs(ticket.Leave(ctx)) // the next waiter moves up at once
		}
	}
	defer leave()

	// The head of the queue tries for a seat every waitPoll; the others
	// only keep their place alive and watch it, every idleWaitPolls polls,
	// or at once when they become the head as the head leaves on this
	// instance: a waiter's cost does not grow with the queue, nor does a
	// departure's.
	lastPos := -1
	for {
		pos, length, err := ticket.Position(ctx)
		if err != nil {
			return Grant{}, server.Unavailable(err)
		}
		if pos != lastPos {
			lastPos = pos
			if err := moved(Place{Position: pos, QueueLength: length, Ticket: ticket.ID()}); err != nil {
				return Grant{}, err
			}
		}
		if pos == 1 {
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
				return Grant{}, err // unknown key, inactive license...
			}
		}
		wait := s.waitPoll
		if pos != 1 {
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
		case <-headed:
			t.Stop()
		case <-t.C:
		}
	}
}

// idleWaitPolls is how many head polls a waiter behind the head waits
// between two looks at its place (2 s by default: well within the Redis
// queue's 5 s liveness).
const idleWaitPolls = 8

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
