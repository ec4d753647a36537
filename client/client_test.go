package client

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func TestServiceConfigFileMatches(t *testing.T) {
	file, err := os.ReadFile("service_config.json")
	require.NoError(t, err)
	var fromFile, fromConst any
	require.NoError(t, json.Unmarshal(file, &fromFile))
	require.NoError(t, json.Unmarshal([]byte(ServiceConfig), &fromConst))
	require.Equal(t, fromConst, fromFile, "service_config.json must say what ServiceConfig says")

	conn, err := grpc.NewClient("passthrough:///x", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(ServiceConfig))
	require.NoError(t, err, "gRPC accepts the service config")
	require.NoError(t, conn.Close())
}

func TestAcquireRetriesUnavailable(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.acquireUnavailable = 2 })
	l := acquire(t, b) // the retry policy of ServiceConfig hides the failures
	require.Equal(t, 3, b.fake.read(func(f *fakeServer) int { return f.acquires }))
	require.Equal(t, "lease-1", l.ID())
	require.Equal(t, "token-1", l.Token())
	require.Equal(t, "lic-1", l.LicenseID())
	require.Equal(t, 1, l.SeatsInUse())
	require.Positive(t, l.HeartbeatInterval())
	require.NoError(t, l.Release(testContext(t)))
}

func TestAcquireNoSeat(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.seats = 1 })
	l := acquire(t, b)
	_, err := b.client.Acquire(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "other"})
	require.ErrorIs(t, err, ErrNoSeat)
	require.NotErrorIs(t, err, ErrLeaseLost)
	require.Equal(t, ReasonSeatsExhausted, Reason(err))
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.NoError(t, l.Release(testContext(t)))
}

func TestErrorReasons(t *testing.T) {
	for reason, lost := range map[string]bool{
		ReasonLeaseExpired: true, ReasonLeaseRevoked: true, ReasonLeaseReleased: true,
		ReasonLeaseNotFound: true, ReasonLeaseTokenInvalid: true, ReasonSeatsExhausted: false, "": false,
	} {
		err := wrap(reasonErr(codes.FailedPrecondition, reason))
		require.Equal(t, lost, errors.Is(err, ErrLeaseLost), reason)
		require.Equal(t, reason, Reason(err))
	}
	require.Equal(t, "", Reason(errors.New("plain")))
	require.Nil(t, wrap(nil))
}

// TestPolicyRefusalReasons: a site policy's caps and reserved seats are
// ErrNoSeat (no seat for this client now: they pass as leases end), its
// exclusions ErrNotAllowed (no retry helps); ErrNoSeat used to match
// SEATS_EXHAUSTED alone.
func TestPolicyRefusalReasons(t *testing.T) {
	for reason, want := range map[string]error{
		ReasonSeatsExhausted: ErrNoSeat,
		ReasonSeatsReserved:  ErrNoSeat,
		ReasonUserLimit:      ErrNoSeat,
		ReasonHostLimit:      ErrNoSeat,
		ReasonGroupLimit:     ErrNoSeat,
		ReasonExcluded:       ErrNotAllowed,
		ReasonNotIncluded:    ErrNotAllowed,
		"RATE_LIMITED":       nil,
		"":                   nil,
	} {
		err := wrap(reasonErr(codes.ResourceExhausted, reason))
		for _, sentinel := range []error{ErrNoSeat, ErrNotAllowed, ErrLeaseLost} {
			require.Equal(t, sentinel == want, errors.Is(err, sentinel), "%s is %v", reason, sentinel)
		}
		require.Equal(t, reason, Reason(err))
	}
}

func TestBackoffGrowsWithJitterAndLimit(t *testing.T) {
	tm := defaultTiming
	for n := 1; n <= 12; n++ {
		d := tm.backoff(n, tm.backoffMax)
		full := min(tm.backoffBase<<(n-1), tm.backoffMax)
		require.GreaterOrEqual(t, d, full/2, "retry %d", n)
		require.LessOrEqual(t, d, full, "retry %d", n)
	}
}

// TestAcquireRetryAfterLostReplyTakesOneSeat: the server granted a seat but
// the reply was lost; the retry carries the same idempotency key, so it gets
// that seat back instead of a second one (leasing strategy "acquisition"
// dedupes by nothing else).
func TestAcquireRetryAfterLostReplyTakesOneSeat(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.lostReplies = 1 })
	l := acquire(t, b)
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.live() }), "one seat for the call and its retry")
	keys := b.fake.seenIdemKeys()
	require.Len(t, keys, 2)
	require.NotEmpty(t, keys[0], "the client names the acquisition")
	require.Equal(t, keys[0], keys[1], "the retry carries the same key")
	require.NoError(t, l.Release(testContext(t)))

	// A new acquisition is a new key; one the caller chose is kept.
	l2 := acquire(t, b)
	l3, err := b.client.Acquire(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp", IdempotencyKey: "mine"})
	require.NoError(t, err)
	keys = b.fake.seenIdemKeys()
	require.NotEqual(t, keys[0], keys[2])
	require.Equal(t, "mine", keys[3])
	require.NoError(t, l2.Release(testContext(t)))
	require.NoError(t, l3.Release(testContext(t)))
}
