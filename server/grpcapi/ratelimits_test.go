package grpcapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// slow is a limit that does not refill within a test: burst tokens, then
// one every 1000 s.
func slow(burst int) RateLimit { return RateLimit{PerSecond: 0.001, Burst: burst} }

// gatewayClient is a client of e's Server through its in-process channel,
// as the REST gateway calls it: the caller's address is believed there.
func (e *env) gatewayClient(t *testing.T) seatdv1.SeatServiceClient {
	t.Helper()
	return seatdv1.NewSeatServiceClient(e.api.InProcess(e.api.UnaryInterceptors(), e.api.StreamInterceptors()))
}

// from is a call the REST gateway makes for a client at addr.
func from(t *testing.T, addr string) context.Context {
	return WithRESTClient(t.Context(), addr)
}

// forwardedFor is a call that says, in metadata (an X-Forwarded-For header
// through the gateway), that it is from addr.
func forwardedFor(t *testing.T, addr string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "x-forwarded-for", addr)
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

// A client cannot choose the address it is counted as: a network client's
// forwarded address (metadata) is ignored, and so is one a REST client sends
// as X-Forwarded-For (grpc-gateway passes the header on as metadata); only
// the address the gateway puts in the call's context, on the in-process
// channel, counts.
func TestForwardedAddressIsBelievedOnlyFromTheGateway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(2) })
	for i := range 2 {
		requireStatus(t, guess(t, e.seats, forwardedFor(t, "192.0.2."+strconv.Itoa(i))), codes.NotFound, server.ReasonLicenseNotFound)
	}
	requireRateLimited(t, guess(t, e.seats, forwardedFor(t, "192.0.2.99")), "a fresh forwarded address from a network client")
	// A network client cannot set the context value either: it has no
	// in-process client context, whatever its context holds on its side.
	requireRateLimited(t, guess(t, e.seats, WithRESTClient(t.Context(), "192.0.2.98")), "a REST address on a network call")

	gw := e.gatewayClient(t)
	for i := range 2 {
		ctx := metadata.AppendToOutgoingContext(from(t, "198.51.100.5:1234"), "x-forwarded-for", "192.0.2."+strconv.Itoa(i))
		requireStatus(t, guess(t, gw, ctx), codes.NotFound, server.ReasonLicenseNotFound)
	}
	ctx := metadata.AppendToOutgoingContext(from(t, "198.51.100.5:1234"), "x-forwarded-for", "192.0.2.50")
	requireRateLimited(t, guess(t, gw, ctx), "an X-Forwarded-For header is the client's word")
	// A call on the in-process channel without an address (none of the
	// gateway's) counts as one address of its own, not the REST clients'.
	requireStatus(t, guess(t, gw, t.Context()), codes.NotFound, server.ReasonLicenseNotFound)

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
