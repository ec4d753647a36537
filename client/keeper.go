package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errDeadline: the wall clock passed the lease's deadline while we waited
// (a long outage, or the machine slept).
var errDeadline = errors.New("lease deadline passed")

// keeper heartbeats one lease in the background until stopped or the lease
// is lost.
type keeper struct {
	l      *Lease
	t      timing
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// mode is how the keeper heartbeats.
type mode int

const (
	viaStream mode = iota // HeartbeatStream, the normal case
	viaUnary              // unary for a while, streams kept failing
	onlyUnary             // the server has no stream
)

// startKeeper keeps l alive in the background. After Close it returns nil:
// the lease is then heartbeated by hand, if at all.
func (c *Client) startKeeper(l *Lease) *keeper {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &keeper{l: l, t: c.t, log: c.log.With("lease_id", l.ID()), cancel: cancel, done: make(chan struct{})}
	c.keepers[k] = struct{}{}
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.keepers, k)
			c.mu.Unlock()
			close(k.done)
		}()
		k.run(ctx)
	}()
	return k
}

// stop ends the keeper and waits for it to exit (or for ctx). Calling it
// again is fine.
func (k *keeper) stop(ctx context.Context) error {
	k.cancel()
	select {
	case <-k.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run heartbeats until ctx ends or the lease is lost. Each round waits,
// then runs a session (a stream, or a series of unary beats) until it ends,
// and decides from how it ended what to do next. Only a lost lease or a
// passed deadline ends the loop; everything else is retried.
func (k *keeper) run(ctx context.Context) {
	m, failures, delay := viaStream, 0, k.l.pingEvery() // just acquired: no beat needed yet
	for {
		answered := false
		err := k.wait(ctx, delay)
		if err == nil {
			answered, err = k.session(ctx, m)
			if answered {
				failures = 0
			}
		}
		if errors.Is(err, errDeadline) {
			err = k.lastChance(ctx)
		}
		if ctx.Err() != nil {
			return // stopped: whatever the last call said does not matter
		}
		switch {
		case err == nil: // the last chance worked (the server may revive late beats)
			delay = k.l.pingEvery()
		case isLost(err):
			if !k.recover(ctx, err) {
				return
			}
			failures, delay = 0, k.l.pingEvery()
		case errors.Is(err, errReconnect) && answered:
			// A rolling restart: move on at once, but spread out so that the
			// clients of the stopping instance do not all arrive together.
			// A server that says only that is retried like a failure below.
			k.log.Debug("seatd asked to reconnect")
			delay = jitter(k.t.reconnectJitter)
		case errors.Is(err, errTryStream):
			m, delay = viaStream, 0
		case m == viaStream && status.Code(err) == codes.Unimplemented:
			k.log.Info("seatd has no heartbeat stream; using unary heartbeats")
			m, delay = onlyUnary, 0
		default:
			failures++
			if m == viaStream && failures >= k.t.streamFailures {
				k.log.Warn("heartbeat stream keeps failing; using unary heartbeats for a while", "err", err)
				m = viaUnary
			} else {
				k.log.Debug("heartbeat failed; retrying", "err", err, "failures", failures)
			}
			// Never wait longer than a normal beat: the deadline is what counts.
			delay = k.t.backoff(failures, min(k.t.backoffMax, k.l.pingEvery()))
		}
	}
}

func (k *keeper) session(ctx context.Context, m mode) (answered bool, err error) {
	switch m {
	case viaStream:
		return k.stream(ctx)
	case viaUnary:
		return k.unary(ctx, k.t.unaryBeforeStream)
	default:
		return k.unary(ctx, 0)
	}
}

// wait sleeps d, but returns errDeadline as soon as the wall clock passes the
// deadline: after a sleep of the machine, Go timers run late.
func (k *keeper) wait(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(k.t.clockCheck)
	defer tick.Stop()
	for {
		if k.l.pastDeadline() {
			return errDeadline
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-tick.C:
		}
	}
}

// lastChance tries one heartbeat once the deadline passed. The server decides:
// it may still accept it (clock skew, or its grace period). If it cannot be
// reached the lease is as good as expired: the server no longer counts it.
func (k *keeper) lastChance(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, k.t.lastChance)
	defer cancel()
	err := k.l.heartbeat(ctx)
	if err == nil || isLost(err) {
		return err
	}
	return fmt.Errorf("%w (last heartbeat: %v)", localError(codes.FailedPrecondition, ReasonLeaseExpired,
		"lease deadline passed without a successful heartbeat (did the machine sleep?)"), err)
}

// recover handles a lost lease: acquire again if allowed and the lease
// expired, else report it. It reports whether the keeper goes on.
func (k *keeper) recover(ctx context.Context, cause error) bool {
	if !k.l.c.opts.ReacquireOnExpiry || !expired(cause) {
		k.log.Warn("lease lost", "reason", Reason(cause), "err", cause)
		k.l.markLost(cause)
		if errors.Is(cause, ErrBadCertificate) {
			// We stop heartbeating a lease we no longer trust; if seatd is
			// real (say, it signs with a key newer than our JWKS), give the
			// seat back rather than hold it until its deadline.
			st := k.l.state()
			k.l.c.giveBack(ctx, st.id, st.token)
		}
		return false
	}
	k.log.Info("lease expired; acquiring a seat again", "err", cause)
	// Keep trying through an outage for up to one TTL: after a laptop wakes
	// up, its network often takes a while to come back.
	giveUp := k.t.wallNow().Add(max(k.l.state().ttl, k.t.callTimeout))
	req := k.l.opts.named().acquireRequest(k.l.c.nonce(false)) // one acquisition, however many tries
	for n := 1; ; n++ {
		sent := k.t.wallNow()
		cctx, cancel := context.WithTimeout(ctx, k.t.callTimeout)
		resp, err := k.l.c.seats.AcquireSeat(cctx, req)
		cancel()
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			st, err := k.l.c.granted(ctx, req.GetNonce(), k.l.opts, resp, sent, false)
			if err != nil {
				k.l.c.giveBack(ctx, resp.GetLease().GetId(), resp.GetLeaseToken())
				k.log.Warn("lease lost; the seat acquired again failed verification", "err", err)
				k.l.markLost(fmt.Errorf("%w; acquiring again: %w", cause, err))
				return false
			}
			old := k.l.ID()
			k.l.swap(st)
			k.log = k.l.c.log.With("lease_id", k.l.ID())
			k.log.Info("seat acquired again", "expired_lease_id", old)
			return true
		}
		err = wrap(err)
		if !retryable(err) || k.t.wallNow().After(giveUp) {
			k.log.Warn("lease lost; acquiring again failed", "err", err)
			k.l.markLost(fmt.Errorf("%w; acquiring again failed: %w", cause, err))
			return false
		}
		if sleep(ctx, max(k.t.backoff(n, k.t.backoffMax), retryDelay(err))) != nil {
			return false
		}
	}
}

// expired reports whether the lease ran out (as opposed to being taken
// away on purpose), which is when acquiring again is right.
func expired(err error) bool {
	r := Reason(err)
	return r == ReasonLeaseExpired || r == ReasonLeaseNotFound
}
