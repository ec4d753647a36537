package e2e

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// A revocation made on one instance reaches a heartbeat stream on another
// by Redis pub/sub (server/notify), not at the stream's next heartbeat.
// The tests tell the two apart without timing a loaded machine: the raw
// stream sends no heartbeat after its first, so whatever REVOKED it gets
// was pushed; the client's lease heartbeats every 10 s, and its loss must
// come within half of that, counted from RevokeLease's answer.

// TestRevokeReachesStreamOnOtherInstance: an admin revokes, through instance
// A, a lease whose heartbeat stream runs on instance B; the stream learns it
// at once (Redis pub/sub), not at its next heartbeat. Both the Go client's
// Lost() and a raw HeartbeatStream are checked.
func TestRevokeReachesStreamOnOtherInstance(t *testing.T) {
	t.Parallel()
	const (
		ttl = time.Minute // heartbeat every 10 s
		// pushed is how soon the client's lease must be lost: well before
		// its next heartbeat could tell it.
		pushed = ttl / 6 / 2
	)
	procs := sharedBackend(t, "").startCluster(t, 2, "revoke")
	a, b := procs[0], procs[1]
	lic := newLicense(t, a, 5, ttl, "revoke")

	t.Run("client", func(t *testing.T) {
		c, err := client.Dial(b.GRPCAddr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		lease, err := c.Acquire(t.Context(), client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "client-on-b"})
		require.NoError(t, err)
		// The stream watches the lease once its first ping is answered,
		// which moves the deadline.
		first := lease.ExpiresAt()
		eventually(t, 3*ttl/6+eventTimeout, "the lease's first heartbeat over the stream", func() bool {
			return lease.ExpiresAt().After(first)
		})

		began := time.Now()
		_, err = a.admin().RevokeLease(a.asOperator(t.Context()), &seatdv1.RevokeLeaseRequest{LeaseId: lease.ID(), Reason: "e2e"})
		require.NoError(t, err)
		answered := time.Now()
		select {
		case <-lease.Lost():
		case <-time.After(pushed):
			t.Fatalf("Lost() not closed within %s of RevokeLease's answer from another instance (Err %v)", pushed, lease.Err())
		}
		t.Logf("client lease on B lost %s after RevokeLease on A answered (the call took %s)",
			time.Since(answered).Round(time.Millisecond), answered.Sub(began).Round(time.Millisecond))
		require.True(t, errors.Is(lease.Err(), client.ErrLeaseLost), "Err: %v", lease.Err())
		require.Equal(t, client.ReasonLeaseRevoked, client.Reason(lease.Err()), "Err: %v", lease.Err())
		require.NoError(t, lease.Release(t.Context()), "releasing a lost lease is a no-op")
	})

	t.Run("raw stream", func(t *testing.T) {
		l, err := a.acquire(t.Context(), lic.GetKey(), "raw-on-b")
		require.NoError(t, err)
		stream, err := b.heartbeats().HeartbeatStream(t.Context())
		require.NoError(t, err)
		require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()}))
		resp, err := stream.Recv()
		require.NoError(t, err)
		require.NotNil(t, resp.GetExpiresAt())

		type recv struct {
			resp *seatdv1.HeartbeatStreamResponse
			err  error
			at   time.Time
		}
		got := make(chan recv, 4)
		go func() {
			for {
				resp, err := stream.Recv()
				got <- recv{resp, err, time.Now()}
				if err != nil {
					return
				}
			}
		}()
		began := time.Now()
		_, err = a.admin().RevokeLease(a.asOperator(t.Context()), &seatdv1.RevokeLeaseRequest{LeaseId: l.GetLease().GetId()})
		require.NoError(t, err)
		answered := time.Now()
		var r recv
		select {
		case r = <-got:
		case <-time.After(eventTimeout):
			t.Fatalf("no HEARTBEAT_SIGNAL_REVOKED within %s of RevokeLease's answer from another instance", eventTimeout)
		}
		require.NoError(t, r.err)
		require.Equal(t, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED, r.resp.GetSignal())
		t.Logf("raw stream on B got REVOKED %s after RevokeLease on A was called (the call took %s)",
			r.at.Sub(began).Round(time.Millisecond), answered.Sub(began).Round(time.Millisecond))
		select {
		case r = <-got:
		case <-time.After(eventTimeout):
			t.Fatal("the stream did not end after REVOKED")
		}
		require.False(t, errors.Is(r.err, io.EOF), "the stream ends with the LEASE_REVOKED status, not cleanly")
		requireStatus(t, r.err, codes.FailedPrecondition, "LEASE_REVOKED")
	})
	stopAllOK(t, procs...)
}
