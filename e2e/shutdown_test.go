package e2e

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// shutdownSteps are the steps seatd logs, in order, while it drains
// (docs/guides/upgrades.md; server/daemon Shutdown).
var shutdownSteps = []string{
	"not ready", "drain delay", "stop cleanup leader", "end streams",
	"grpc graceful stop", "http shutdown", "close storage",
}

var shutdownStepRE = regexp.MustCompile(`msg="shutdown step done".*?\bstep=("[^"]*"|\S+).*?\btook=(\S+)`)

// loggedShutdownSteps returns the shutdown steps in the log, in order, with
// how long each took.
func loggedShutdownSteps(t testing.TB, out string) (names []string, took map[string]time.Duration) {
	t.Helper()
	took = map[string]time.Duration{}
	for _, m := range shutdownStepRE.FindAllStringSubmatch(out, -1) {
		name := m[1]
		if len(name) >= 2 && name[0] == '"' {
			name = name[1 : len(name)-1]
		}
		d, err := time.ParseDuration(m[2])
		require.NoError(t, err, "took=%s of step %q", m[2], name)
		names = append(names, name)
		took[name] = d
	}
	return names, took
}

// streamEnd is what one heartbeat stream saw after it was set up.
type streamEnd struct {
	signals     []seatdv1.HeartbeatSignal
	reconnectAt time.Time
	err         error // io.EOF: ended cleanly
}

// TestShutdownDrainsStreamsAndWaiters: SIGTERM with 100 open heartbeat
// streams and 20 queued waiters. Every stream is told RECONNECT and ends
// cleanly, every waiter gets UNAVAILABLE (SERVER_SHUTTING_DOWN), both only
// after the drain delay; seatd exits 0 well within drain delay + shutdown
// timeout (GracefulStop does not wait for the streams), logging each step in
// order. Embedded and distributed.
func TestShutdownDrainsStreamsAndWaiters(t *testing.T) {
	t.Parallel()
	for _, distributed := range []bool{false, true} {
		name := map[bool]string{false: "embedded", true: "distributed"}[distributed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const (
				streams         = 100
				waiters         = 20
				drainDelay      = time.Second
				shutdownTimeout = 10 * time.Second
			)
			args := []string{"--drain-delay", drainDelay.String(), "--shutdown-timeout", shutdownTimeout.String()}
			var p *proc
			if distributed {
				p = sharedBackend(t, "").startSeatd(t, "drain-"+randomHex(3), args...)
			} else {
				p = start(t, options{args: args})
			}
			ctx := testContext(t)

			// 100 leases, each kept alive over its own stream.
			lic := newLicense(t, p, streams, time.Minute, "streams")
			ends := make([]streamEnd, streams)
			var wg sync.WaitGroup
			for i := range streams {
				l, err := p.acquire(ctx, lic.GetKey(), fmt.Sprintf("streamer-%d", i))
				require.NoError(t, err)
				s, err := p.heartbeats().HeartbeatStream(ctx)
				require.NoError(t, err)
				require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()}))
				resp, err := s.Recv()
				require.NoError(t, err, "stream %d: first ping", i)
				require.NotNil(t, resp.GetExpiresAt(), "stream %d: a ping is answered with the deadline", i)
				wg.Go(func() {
					e := &ends[i]
					for {
						resp, err := s.Recv()
						if err != nil {
							e.err = err
							return
						}
						e.signals = append(e.signals, resp.GetSignal())
						if resp.GetSignal() == seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT {
							e.reconnectAt = time.Now()
						}
					}
				})
			}

			// 20 waiters queued on a full license.
			full := newLicense(t, p, 1, time.Minute, "queue")
			_, err := p.acquire(ctx, full.GetKey(), "holder")
			require.NoError(t, err)
			queued := make([]*queuedWaiter, waiters)
			for i := range queued {
				queued[i] = joinQueue(t, p, full.GetKey(), fmt.Sprintf("waiter-%d", i), nil)
				queued[i].waitPosition(t, i+1, eventTimeout)
			}

			began := time.Now()
			p.signal(syscall.SIGTERM)
			code := p.wait()
			took := time.Since(began)
			wg.Wait()
			t.Logf("%s: seatd exited %d, %s after SIGTERM with %d streams and %d waiters (--drain-delay %s, --shutdown-timeout %s)",
				name, code, took.Round(time.Millisecond), streams, waiters, drainDelay, shutdownTimeout)
			require.Equal(t, 0, code, "exit code after SIGTERM")
			require.NotContains(t, p.Output(), "DATA RACE")
			// gRPC's graceful stop and the HTTP shutdown have a shutdown
			// timeout each.
			require.Less(t, took, drainDelay+2*shutdownTimeout, "exit within drain delay + 2 shutdown timeouts")

			for i, e := range ends {
				require.Equal(t, []seatdv1.HeartbeatSignal{seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT}, e.signals,
					"stream %d: one RECONNECT, nothing else (ended with %v)", i, e.err)
				require.True(t, errors.Is(e.err, io.EOF), "stream %d ends cleanly after RECONNECT, got %v", i, e.err)
				require.GreaterOrEqual(t, e.reconnectAt.Sub(began), drainDelay-50*time.Millisecond,
					"stream %d: RECONNECT only after the drain delay", i)
			}
			for _, w := range queued {
				err := w.end(t, eventTimeout)
				requireQueueReason(t, err, codes.Unavailable, "SERVER_SHUTTING_DOWN", "waiter "+w.name+" on shutdown")
				require.Nil(t, w.grant())
			}

			names, stepTook := loggedShutdownSteps(t, p.Output())
			require.Equal(t, shutdownSteps, names, "every shutdown step is logged, in order")
			t.Logf("%s: shutdown steps took %v", name, stepTook)
			require.GreaterOrEqual(t, stepTook["drain delay"], drainDelay)
			require.Less(t, stepTook["grpc graceful stop"], shutdownTimeout/2,
				"GracefulStop waited for streams instead of them being ended")
			require.Contains(t, p.Output(), `msg="shutdown complete"`)
		})
	}
}
