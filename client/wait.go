package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WaitForSeat queues for a seat of the license (FIFO) and returns it once
// granted, kept alive like Acquire's. onPosition (may be nil) hears, on the
// calling goroutine, the queue position (1 is next) and the queue length on
// joining and on every change. If
// the connection drops or the server restarts, it joins again, and keeps
// its place when the server still holds it (the queue ticket of the last
// position, kept for a few seconds after a server shuts down). Against a
// server without the queue it polls AcquireSeat with backoff while no seat is
// free for it (ErrNoSeat: none free, or the site policy's cap or
// reservations keep them from it), reporting position 0. A refusal that
// no wait ends (ErrNotAllowed: the policy excludes the client) ends the
// wait, as any other. It returns ctx.Err() when ctx ends first.
func (c *Client) WaitForSeat(ctx context.Context, o AcquireOptions, onPosition func(position, queueLength int)) (*Lease, error) {
	report := func(position, length int) {
		if onPosition != nil {
			onPosition(position, length)
		}
	}
	ticket := ""
	key := o.named().IdempotencyKey // every stream of this wait is one acquisition
	nonce := c.nonce(false)         // and its grant answers each of them
	for failures := 0; ; {
		lease, heard, err := c.waitOnce(ctx, o, key, nonce, &ticket, report)
		if lease != nil {
			// The server holds a waiter's grant only until its first
			// heartbeat (--wait-hold), which may come well before the
			// keeper's first beat (TTL/6): confirm it now.
			err := lease.Heartbeat(ctx)
			if errors.Is(err, ErrBadCertificate) {
				if lease.keep != nil {
					_ = lease.keep.stop(context.WithoutCancel(ctx))
				}
				c.giveBack(ctx, lease.ID(), lease.Token())
				return nil, err // not seatd's answer: no use waiting again
			}
			if err != nil && errors.Is(err, ErrLeaseLost) {
				_ = lease.Release(context.WithoutCancel(ctx))
				ticket = "" // the grant used up the place
				continue    // it went to the next waiter: queue again
			}
			return lease, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if status.Code(err) == codes.Unimplemented {
			return c.pollForSeat(ctx, o, report)
		}
		if !retryable(err) {
			return nil, err
		}
		if heard {
			failures = 0
		}
		failures++
		if err := sleep(ctx, c.t.backoff(failures, c.t.backoffMax)); err != nil {
			return nil, err
		}
	}
}

// waitOnce is one WaitForSeat stream (under idempotency key key), resuming *ticket's place and updating
// it from what the server sends. heard tells whether the server sent
// anything, so that a queue that worked for a while retries promptly.
func (c *Client) waitOnce(ctx context.Context, o AcquireOptions, key, nonce string, ticket *string, report func(int, int)) (lease *Lease, heard bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req := o.waitRequest()
	req.IdempotencyKey, req.Nonce = key, nonce
	req.QueueTicket = *ticket
	s, err := c.seats.WaitForSeat(ctx, req)
	if err != nil {
		return nil, false, wrap(err)
	}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil, heard, errStreamClosed // ended without a seat: join again
		}
		if err != nil {
			return nil, heard, wrap(err)
		}
		heard = true
		if g := resp.GetGranted(); g != nil {
			// The grant was made a one-way trip ago; against a TTL that is
			// nothing, whereas the time we joined may be long past.
			st, err := c.granted(ctx, nonce, o, g, c.t.wallNow(), false)
			if err != nil {
				c.giveBack(ctx, g.GetLease().GetId(), g.GetLeaseToken())
				return nil, true, err
			}
			return c.hold(o, st), true, nil
		}
		if p := resp.GetPosition(); p != nil {
			*ticket = p.GetTicket()
			report(int(p.GetPosition()), int(p.GetQueueLength()))
		}
	}
}

// pollForSeat stands in for the queue: try to acquire, back off while no
// seat is free for this client (ErrNoSeat, a policy's cap and reserved
// seats included: they pass as leases end). Order among waiters is left to
// chance.
func (c *Client) pollForSeat(ctx context.Context, o AcquireOptions, report func(int, int)) (*Lease, error) {
	for n := 1; ; n++ {
		lease, err := c.Acquire(ctx, o)
		if err == nil {
			return lease, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrNoSeat) {
			report(0, 0)
		} else if !retryable(err) {
			return nil, err
		}
		if err := sleep(ctx, max(c.t.backoff(n, c.t.backoffMax), retryDelay(err))); err != nil {
			return nil, err
		}
	}
}
