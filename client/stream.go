package client

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

var (
	// errReconnect: the server is going away and asked us to move on.
	errReconnect = errors.New("seatd asked to reconnect")
	// errNoAnswer: a ping went unanswered for a whole interval; the
	// connection is probably dead without either side knowing.
	errNoAnswer = errors.New("heartbeat stream: no answer in time")
	// errStreamClosed: the server ended a stream cleanly without a reason.
	errStreamClosed = errors.New("stream closed by seatd")
)

// streamResult is one Recv.
type streamResult struct {
	resp *seatdv1.HeartbeatStreamResponse
	err  error
}

// stream keeps the lease alive over one HeartbeatStream until it ends. It
// pings at once (the first message names the lease), then every interval
// after each answer. answered tells whether the server answered at all.
func (k *keeper) stream(ctx context.Context) (answered bool, err error) {
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel below: the reader has exited when we return
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	st := k.l.state()
	s, err := k.l.c.heartbeat.HeartbeatStream(ctx)
	if err != nil {
		return false, wrap(err)
	}
	results := make(chan streamResult)
	wg.Go(func() {
		for {
			resp, err := s.Recv()
			select {
			case results <- streamResult{resp, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})

	sent, nonce := k.t.wallNow(), k.l.c.nonce(false)
	if err := s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: st.id, LeaseToken: st.token, Nonce: nonce}); err != nil && !errors.Is(err, io.EOF) {
		return false, wrap(err) // io.EOF: the real status comes from Recv
	}
	waiting := true // for the answer to the ping sent at sent
	timer := time.NewTimer(k.l.pingEvery())
	defer timer.Stop()
	tick := time.NewTicker(k.t.clockCheck)
	defer tick.Stop()
	var signal seatdv1.HeartbeatSignal
	for {
		select {
		case <-ctx.Done():
			return answered, ctx.Err()
		case <-tick.C:
			if k.l.pastDeadline() {
				return answered, errDeadline
			}
		case <-timer.C:
			if waiting {
				return answered, errNoAnswer
			}
			sent, nonce, waiting = k.t.wallNow(), k.l.c.nonce(false), true
			if err := s.Send(&seatdv1.HeartbeatStreamRequest{Nonce: nonce}); err != nil && !errors.Is(err, io.EOF) {
				return answered, wrap(err)
			}
			timer.Reset(k.l.pingEvery()) // now the answer timeout
		case r := <-results:
			if r.err != nil {
				return answered, streamEnd(r.err, signal)
			}
			switch sig := r.resp.GetSignal(); sig {
			case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT:
				return answered, errReconnect
			case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_EXPIRED:
				signal = sig // the status that ends the stream follows
			default:
				expiresAt, cert := r.resp.GetExpiresAt().AsTime(), r.resp.GetLeaseCertificate()
				ping := nonce
				if !waiting {
					ping = "" // one ping at a time: an answer to none repeats no nonce of ours
				}
				file, err := k.l.checkCert(ctx, st, ping, cert, expiresAt)
				if err != nil {
					return answered, err
				}
				k.l.extend(st.id, sent, expiresAt, r.resp.GetHeartbeatInterval().AsDuration(), 0, cert, file)
				answered, waiting = true, false
				timer.Reset(k.l.pingEvery())
			}
		}
	}
}

// streamEnd is the error a stream ended with: its status, or the signal sent
// before it when the status says less (a proxy may rewrite it).
func streamEnd(err error, signal seatdv1.HeartbeatSignal) error {
	if errors.Is(err, io.EOF) {
		err = errStreamClosed
	} else {
		err = wrap(err)
	}
	if isLost(err) {
		return err
	}
	switch signal {
	case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED:
		return localError(codes.FailedPrecondition, ReasonLeaseRevoked, "lease was revoked")
	case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_EXPIRED:
		return localError(codes.FailedPrecondition, ReasonLeaseExpired, "lease expired; acquire a new seat")
	}
	return err
}
