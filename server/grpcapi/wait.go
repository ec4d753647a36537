package grpcapi

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"time"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/waitqueue"
)

// queueTicketPattern matches what the queues hand out (server.NewID("w_")).
var queueTicketPattern = regexp.MustCompile(`^(w_[0-9a-f]{24})?$`)

var (
	errQueueFull    = server.Errorf(server.EEXHAUSTED, server.ReasonQueueFull, "too many clients are waiting for a seat on this license; retry later")
	errShuttingDown = server.Errorf(server.EUNAVAILABLE, "SERVER_SHUTTING_DOWN", "server is shutting down; reconnect and wait again")
)

// WaitForSeat queues the caller FIFO per license until a seat frees. The
// head of the queue tries the store's atomic acquire every waitPoll; others
// only watch their position. A granted seat must be heartbeated within
// waitHold, or it is revoked and goes to the next waiter.
func (h *seatService) WaitForSeat(req *seatdv1.WaitForSeatRequest, stream seatdv1.SeatService_WaitForSeatServer) error {
	s := h.s
	ctx := stream.Context()
	if err := clientFields(req.GetLicenseKey(), req.GetFingerprint(), req.GetUser(), req.GetHostname(), req.GetIdempotencyKey(), req.GetMetadata()); err != nil {
		return err
	}
	if !queueTicketPattern.MatchString(req.GetQueueTicket()) {
		return server.Invalid("queue_ticket", "must be empty or a ticket from a QueuePosition")
	}
	// Only a key that opens a usable license gets a queue (named by the
	// key's hash): nothing is written for a guess.
	lic, err := s.store.LicenseByKey(ctx, req.GetLicenseKey())
	if err != nil {
		return err
	}
	if err := lic.CheckUsable(s.now()); err != nil {
		return err
	}
	name := server.HashSecret(req.GetLicenseKey())
	ticket, err := s.queue.Join(ctx, name, req.GetQueueTicket())
	if errors.Is(err, waitqueue.ErrFull) {
		return errQueueFull
	}
	if err != nil {
		return server.Unavailable(err)
	}
	// A waiter that goes away leaves the queue. One this server sends away
	// as it shuts down keeps its place: its ticket lapses within seconds
	// unless the client waits again elsewhere with it (queue_ticket).
	keepPlace := false
	defer func() {
		if !keepPlace {
			ticket.Leave(ctx)
			s.queueMoves.moved(name)
		}
	}()

	// The head of the queue tries for a seat every waitPoll; the others
	// only keep their place alive and watch it, every idleWaitPolls polls,
	// or at once when a waiter of this instance leaves the queue: a
	// waiter's cost does not grow with the queue.
	lastPos := -1
	for {
		pos, length, err := ticket.Position(ctx)
		if err != nil {
			return server.Unavailable(err)
		}
		if pos != lastPos {
			lastPos = pos
			if err := stream.Send(&seatdv1.WaitForSeatResponse{Event: &seatdv1.WaitForSeatResponse_Position{
				Position: &seatdv1.QueuePosition{Position: int32(pos), QueueLength: int32(length), Ticket: ticket.ID()},
			}}); err != nil {
				return err
			}
		}
		if pos == 1 {
			res, token, err := s.acquireLease(ctx, req.GetLicenseKey(), req.GetFingerprint(), req.GetUser(),
				req.GetHostname(), req.GetIdempotencyKey(), req.GetMetadata())
			s.metrics.Acquisitions.WithLabelValues(resultLabel(err)).Inc()
			if err == nil {
				ticket.Leave(ctx) // the next waiter moves up at once
				s.queueMoves.moved(name)
				if !res.Existing {
					s.holdForFirstHeartbeat(res.Lease)
				}
				return stream.Send(&seatdv1.WaitForSeatResponse{Event: &seatdv1.WaitForSeatResponse_Granted{
					Granted: s.acquireResponse(res, token),
				}})
			}
			if server.ErrorCode(err) != server.EEXHAUSTED {
				return err // unknown key, inactive license...
			}
		}
		wait := s.waitPoll
		if pos != 1 {
			wait *= idleWaitPolls
		}
		moved := s.queueMoves.wait(name)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.shutdown:
			t.Stop()
			keepPlace = true
			return errShuttingDown
		case <-moved:
			t.Stop()
		case <-t.C:
		}
	}
}

// idleWaitPolls is how many head polls a waiter behind the head waits
// between two looks at its place (2 s by default: well within the Redis
// queue's 5 s liveness).
const idleWaitPolls = 8

// queueMoves wakes the waiters of a queue on this instance when one of
// them leaves it, so that the next in line learns at once that it moved up.
type queueMoves struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

// wait returns a channel closed at the next move of the named queue.
func (m *queueMoves) wait(name string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ch == nil {
		m.ch = map[string]chan struct{}{}
	}
	c, ok := m.ch[name]
	if !ok {
		c = make(chan struct{})
		m.ch[name] = c
	}
	return c
}

// moved wakes everyone waiting on the named queue.
func (m *queueMoves) moved(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.ch[name]; ok {
		close(c)
		delete(m.ch, name)
	}
}

// unconfirmed reports whether a lease granted to a waiter is, as far as
// the store can tell, still as it was granted: neither heartbeated nor
// given a later deadline. A later deadline without a later heartbeat is a
// store that lost recent heartbeats and gave the write-behind interval
// back (a Redis loss, or a restart after a crash): whether the waiter
// heartbeated is then unknown, and a seat is never taken on a guess.
func unconfirmed(granted, now server.Lease) bool {
	return !now.LastHeartbeatAt.After(granted.LastHeartbeatAt) && !now.ExpiresAt.After(granted.ExpiresAt)
}

// holdForFirstHeartbeat revokes a seat granted to a waiter that never
// heartbeats it (it went away as the seat arrived), so the next waiter gets it.
func (s *Server) holdForFirstHeartbeat(granted server.Lease) {
	go func() {
		t := time.NewTimer(s.waitHold)
		defer t.Stop()
		select {
		case <-s.shutdown:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := s.store.GetLease(ctx, granted.TenantID, granted.ID)
		if err != nil || l.State != server.LeaseActive || !unconfirmed(granted, l) {
			return
		}
		if _, err := s.store.Revoke(ctx, l.TenantID, l.ID); err != nil {
			s.log.Warn("unconfirmed waiter grant not revoked; it expires at its deadline", "lease_id", l.ID, "err", err)
			return
		}
		s.revocations.Revoked(ctx, l.ID)
		s.audit(ctx, systemPrincipal, l.TenantID, "lease.revoke", "lease", l.ID, map[string]string{
			"license_id": l.LicenseID, "reason": "seat granted to a waiter was not heartbeated within the hold window",
		})
	}()
}
