package grpcapi

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/ratelimit"
)

// RateLimit is a token bucket per client address: PerSecond tokens come
// back every second, up to Burst. A PerSecond of 0 means no limit.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// Defaults for the per-address limits (the daemon's flags). Failed lookups
// are rare for a client that has its keys; a fleet behind one NAT address
// heartbeats far below the calls limit.
var (
	DefaultFailedLookups        = RateLimit{PerSecond: 5, Burst: 20}
	DefaultUnauthenticatedCalls = RateLimit{PerSecond: 1000, Burst: 2000}
)

// callLimits are the per-client-address limits. Failures are counted, not
// calls: a client that names keys and leases that exist is never slowed by
// failedLookups. unauthenticated counts every seat and heartbeat call
// (they carry no bearer key), so that a flood from one address cannot take
// the server; it is generous.
type callLimits struct {
	failedLookups   *ratelimit.Limiter
	unauthenticated *ratelimit.Limiter
	now             func() time.Time
}

func newCallLimits(failed, calls RateLimit) callLimits {
	return callLimits{
		failedLookups:   ratelimit.New(failed.PerSecond, failed.Burst, 0),
		unauthenticated: ratelimit.New(calls.PerSecond, calls.Burst, 0),
		now:             time.Now,
	}
}

// failedLookup reports whether err is a guess that missed: an unknown
// license key, lease or tenant (the JWKS route needs no key: without this
// tenant ids could be listed at will), a wrong lease token, an unknown
// bearer key.
func failedLookup(method string, err error) bool {
	switch server.ErrorReason(err) {
	case server.ReasonUnauthenticated:
		return true
	case server.ReasonLicenseNotFound, server.ReasonLeaseNotFound, server.ReasonLeaseTokenWrong, server.ReasonTenantNotFound:
		// Admin calls name licenses and leases by id, which is no secret.
		return !strings.HasPrefix(method, adminPrefix)
	}
	return false
}

// admit refuses a call from addr that is over a limit. Calls that keep a
// held lease alive (heartbeats, releases) are never refused for the
// address's failed lookups: a fleet behind one NAT address must not lose
// its seats to one client there that guesses (or is misconfigured), and a
// lease token cannot be guessed anyway. Their failures still count, and
// they are still under the calls limit.
func (l *callLimits) admit(addr, method string) error {
	now := l.now()
	if !keepsLeaseAlive(method) {
		if empty, retry := l.failedLookups.Empty(addr, now); empty {
			return rateLimited("too many failed lookups from this address", retry)
		}
	}
	if !strings.HasPrefix(method, adminPrefix) {
		if ok, retry := l.unauthenticated.Take(addr, now); !ok {
			return rateLimited("too many calls from this address", retry)
		}
	}
	return nil
}

// done counts the call's outcome against addr.
func (l *callLimits) done(addr, method string, err error) {
	if failedLookup(method, err) {
		l.failedLookups.Charge(addr, l.now())
	}
}

// keepsLeaseAlive: the calls a client makes on a lease it holds.
func keepsLeaseAlive(method string) bool {
	return strings.HasPrefix(method, "/seatd.v1.HeartbeatService/") || method == "/seatd.v1.SeatService/ReleaseSeat"
}

// rateLimited is RESOURCE_EXHAUSTED RATE_LIMITED with the time to wait.
func rateLimited(what string, retry time.Duration) error {
	return refusal(codes.ResourceExhausted, server.ReasonRateLimited,
		fmt.Sprintf("%s; retry in %v", what, retry.Round(time.Millisecond)), retry)
}

func (l *callLimits) unaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !l.applies(info.FullMethod) {
			return handler(ctx, req)
		}
		addr := clientAddr(ctx)
		if err := l.admit(addr, info.FullMethod); err != nil {
			return nil, err
		}
		resp, err := handler(ctx, req)
		l.done(addr, info.FullMethod, err)
		return resp, err
	}
}

func (l *callLimits) streamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if !l.applies(info.FullMethod) {
			return handler(srv, ss)
		}
		addr := clientAddr(ss.Context())
		if err := l.admit(addr, info.FullMethod); err != nil {
			return err
		}
		err := handler(srv, ss)
		l.done(addr, info.FullMethod, err)
		return err
	}
}

// applies: the seatd services, not health checks or reflection.
func (l *callLimits) applies(method string) bool {
	return (l.failedLookups != nil || l.unauthenticated != nil) && strings.HasPrefix(method, "/seatd.")
}

// RetryAfter is the Retry-After header value (whole seconds, rounded up)
// for a status with a RetryInfo delay, or "" if it has none.
func RetryAfter(st *status.Status) string {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
			return strconv.Itoa(int(math.Ceil(ri.GetRetryDelay().AsDuration().Seconds())))
		}
	}
	return ""
}
