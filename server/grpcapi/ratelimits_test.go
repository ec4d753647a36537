package grpcapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// slow is a limit that does not refill within a test: burst tokens, then
// one every 1000 s.
func slow(burst int) RateLimit { return RateLimit{PerSecond: 0.001, Burst: burst} }

// gatewayListener is what server/daemon's in-process listener looks like
// to the server: connections from GatewayAddr.
type gatewayListener struct{ *bufconn.Listener }

type gatewayConn struct{ net.Conn }

func (gatewayConn) RemoteAddr() net.Addr { return GatewayAddr{} }

func (l gatewayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gatewayConn{c}, nil
}

// gatewayClient serves e's Server on a second, gateway-like connection: the
// forwarded address is believed on it.
func (e *env) gatewayClient(t *testing.T) seatdv1.SeatServiceClient {
	t.Helper()
	srv := grpc.NewServer(e.api.CodecOption(),
		grpc.ChainUnaryInterceptor(e.api.UnaryInterceptors()...),
		grpc.ChainStreamInterceptor(e.api.StreamInterceptors()...))
	e.api.Register(srv)
	lis := gatewayListener{bufconn.Listen(1 << 20)}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///gateway",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return seatdv1.NewSeatServiceClient(conn)
}

// from is a call forwarded for addr (what the REST gateway sends).
func from(t *testing.T, addr string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), ForwardedForKey, addr)
}

// requireRateLimited checks RESOURCE_EXHAUSTED RATE_LIMITED with a retry delay.
func requireRateLimited(t *testing.T, err error, msg ...any) {
	t.Helper()
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonRateLimited, msg...)
	ri := retryInfo(st)
	require.NotNil(t, ri, "RetryInfo on %v", st)
	require.Positive(t, ri.GetRetryDelay().AsDuration(), "retry delay")
	require.NotEmpty(t, RetryAfter(st))
}

func guess(t *testing.T, c seatdv1.SeatServiceClient, ctx context.Context) error {
	_, err := c.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: "slk_guessed-key-0123456789", Fingerprint: "x"})
	return err
}

func TestFailedLookupsAreLimitedPerClientAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(3) })
	lic := e.license(t, 100, time.Minute)
	gw := e.gatewayClient(t)

	// Successes never count: far more than the burst, all answered.
	for i := range 20 {
		held := e.acquire(t, lic.GetKey(), "fp-"+strconv.Itoa(i))
		_, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()})
		require.NoError(t, err)
	}
	// A lease held before the guesses, by a client at the same address.
	held := e.acquire(t, lic.GetKey(), "held")
	for i := range 3 {
		requireStatus(t, guess(t, e.seats, t.Context()), codes.NotFound, server.ReasonLicenseNotFound, "guess %d within the burst", i)
	}
	requireRateLimited(t, guess(t, e.seats, t.Context()), "a guess past the burst")
	// Its heartbeats and release go on: seats are not lost to a neighbour.
	_, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()})
	require.NoError(t, err, "a heartbeat of a held lease from a limited address")
	stream, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()}))
	_, err = stream.Recv()
	require.NoError(t, err, "a heartbeat stream of a held lease from a limited address")
	_, err = e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()})
	require.NoError(t, err, "a release of a held lease from a limited address")
	// The address is refused whatever it asks, until a token is back: a
	// right key after wrong ones waits too.
	_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "late"})
	requireRateLimited(t, err, "the same address with a right key")
	wait, err := e.seats.WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{LicenseKey: "slk_guessed-key-0123456789", Fingerprint: "x"})
	require.NoError(t, err)
	_, err = wait.Recv()
	requireRateLimited(t, err, "WaitForSeat from the same address")

	// Other addresses (REST clients, through the gateway) are not limited
	// by this one's failures, and are limited on their own.
	_, err = gw.AcquireSeat(from(t, "203.0.113.7:5555"), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "rest"})
	require.NoError(t, err, "another client's valid acquire")
	for range 3 {
		requireStatus(t, guess(t, gw, from(t, "203.0.113.8:1")), codes.NotFound, server.ReasonLicenseNotFound)
	}
	requireRateLimited(t, guess(t, gw, from(t, "203.0.113.8:2")), "the port is not part of the address")
	_, err = gw.AcquireSeat(from(t, "203.0.113.9:1"), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "rest-2"})
	require.NoError(t, err, "a third REST client is not limited by the second's failures")
}

// Each kind of failed lookup counts; failures that name something that
// exists (an ended lease) and admin lookups by id do not.
func TestFailedLookupKinds(t *testing.T) {
	t.Parallel()
	heartbeat := func(e *env, id, token string) error {
		_, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: id, LeaseToken: token})
		return err
	}
	const unknownLease, someToken = "lse_unknown0123456789", "slt_some-token-0123456789"
	counted := map[string]func(e *env, held *seatdv1.AcquireSeatResponse) error{
		"acquire: unknown key": func(e *env, _ *seatdv1.AcquireSeatResponse) error { return guess(t, e.seats, t.Context()) },
		"wait: unknown key": func(e *env, _ *seatdv1.AcquireSeatResponse) error {
			s, err := e.seats.WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{LicenseKey: "slk_guessed-key-0123456789", Fingerprint: "x"})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"heartbeat: unknown lease": func(e *env, _ *seatdv1.AcquireSeatResponse) error { return heartbeat(e, unknownLease, someToken) },
		"heartbeat: wrong token": func(e *env, held *seatdv1.AcquireSeatResponse) error {
			return heartbeat(e, held.GetLease().GetId(), someToken)
		},
		"release: wrong token": func(e *env, held *seatdv1.AcquireSeatResponse) error {
			_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: someToken})
			return err
		},
		"stream: unknown lease": func(e *env, _ *seatdv1.AcquireSeatResponse) error {
			s, err := e.beats.HeartbeatStream(t.Context())
			if err == nil {
				err = s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: unknownLease, LeaseToken: someToken})
			}
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"admin: unknown bearer key": func(e *env, _ *seatdv1.AcquireSeatResponse) error {
			_, err := e.admin.ListLicenses(as(t, "sak_not-a-key-of-ours-0123"), &seatdv1.ListLicensesRequest{})
			return err
		},
		"admin: no bearer key": func(e *env, _ *seatdv1.AcquireSeatResponse) error {
			_, err := e.admin.ListLicenses(t.Context(), &seatdv1.ListLicensesRequest{})
			return err
		},
	}
	for name, fail := range counted {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(1) })
			held := e.acquire(t, e.license(t, 1, time.Minute).GetKey(), "fp")
			err := fail(e, held)
			require.Error(t, err)
			require.NotEqual(t, server.ReasonRateLimited, errorInfo(status.Convert(err)).GetReason())
			// Counted: the address's next lookup is refused. (Heartbeats
			// and releases themselves are never refused for it.)
			requireRateLimited(t, guess(t, e.seats, t.Context()), "a lookup after a failure, with a burst of 1")
		})
	}

	t.Run("not counted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(1) })
		held := e.acquire(t, e.license(t, 1, time.Minute).GetKey(), "fp")
		_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()})
		require.NoError(t, err)
		for range 5 {
			requireStatus(t, heartbeat(e, held.GetLease().GetId(), held.GetLeaseToken()), codes.FailedPrecondition, server.ReasonLeaseReleased)
			_, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: "lic_unknown"})
			requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
			_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: "slk_guessed", Fingerprint: "bad\x00input"})
			requireStatus(t, err, codes.InvalidArgument, server.ReasonInvalidArgument)
		}
	})
}

func TestUnauthenticatedCallsAreLimitedPerClientAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.UnauthenticatedCalls = slow(5) })
	lic := e.license(t, 100, time.Minute)
	for i := range 5 {
		e.acquire(t, lic.GetKey(), "fp-"+strconv.Itoa(i))
	}
	_, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "sixth"})
	requireRateLimited(t, err, "a sixth seat call of a burst of 5")
	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: "lse_x", LeaseToken: "slt_y"})
	requireRateLimited(t, err, "heartbeats count too")
	// Calls with a bearer key are not these calls.
	for range 10 {
		_, err = e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
		require.NoError(t, err)
	}
	_, err = e.gatewayClient(t).AcquireSeat(from(t, "198.51.100.1:80"), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "elsewhere"})
	require.NoError(t, err, "another address has its own bucket")
}

// A network client cannot choose the address it is counted as: the
// forwarded address is believed only from the gateway's connection, and
// there only the last hop (the one the gateway saw).
func TestForwardedAddressIsBelievedOnlyFromTheGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(2) })
	for i := range 2 {
		requireStatus(t, guess(t, e.seats, from(t, "192.0.2."+strconv.Itoa(i))), codes.NotFound, server.ReasonLicenseNotFound)
	}
	requireRateLimited(t, guess(t, e.seats, from(t, "192.0.2.99")), "a fresh forwarded address from a network client")

	gw := e.gatewayClient(t)
	for i := range 2 {
		ctx := from(t, "192.0.2."+strconv.Itoa(i)+", 198.51.100.5")
		requireStatus(t, guess(t, gw, ctx), codes.NotFound, server.ReasonLicenseNotFound)
	}
	requireRateLimited(t, guess(t, gw, from(t, "192.0.2.50, 198.51.100.5")), "hops before the last are the client's word")

	// IPv6 clients count by /64.
	for i := range 2 {
		requireStatus(t, guess(t, gw, from(t, "[2001:db8:1:2::"+strconv.Itoa(i+1)+"]:443")), codes.NotFound, server.ReasonLicenseNotFound)
	}
	requireRateLimited(t, guess(t, gw, from(t, "[2001:db8:1:2:ffff::1]:443")), "the same /64")
	requireStatus(t, guess(t, gw, from(t, "[2001:db8:1:3::1]:443")), codes.NotFound, server.ReasonLicenseNotFound)
}

func TestNoLimitsUnlessConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for range 100 {
		requireStatus(t, guess(t, e.seats, t.Context()), codes.NotFound, server.ReasonLicenseNotFound)
	}
}

// The backup route counts unknown bearer keys against the HTTP client's
// address like gRPC calls, and answers 429 with Retry-After.
func TestOperatorOnlyLimitsFailedKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(2) })
	h := e.api.OperatorOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("backup")) }))
	call := func(remote, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/admin/backup", nil)
		r.RemoteAddr = remote
		r.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for range 2 {
		require.Equal(t, http.StatusUnauthorized, call("192.0.2.1:1000", "wrong-key-0123456789").Code)
	}
	w := call("192.0.2.1:1001", testOperatorKey)
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), server.ReasonRateLimited)
	after, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", w.Header().Get("Retry-After"))
	require.Positive(t, after)
	require.Equal(t, http.StatusOK, call("192.0.2.2:1000", testOperatorKey).Code, "another address")
}
