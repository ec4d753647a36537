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

func TestBackoffGrowsWithJitterAndLimit(t *testing.T) {
	tm := defaultTiming
	for n := 1; n <= 12; n++ {
		d := tm.backoff(n, tm.backoffMax)
		full := min(tm.backoffBase<<(n-1), tm.backoffMax)
		require.GreaterOrEqual(t, d, full/2, "retry %d", n)
		require.LessOrEqual(t, d, full, "retry %d", n)
	}
}
