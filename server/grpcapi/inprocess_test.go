package grpcapi

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// seen is what a recording interceptor saw of one call.
type seen struct {
	stack    string
	method   string
	fullName string
	peer     string
	md       metadata.MD
	req      any
}

// recording is an interceptor, last in the chain, that keeps what it saw
// and sets a header and a trailer, as a handler may.
func recording(into *seen) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		buf := make([]byte, 64<<10)
		into.stack = string(buf[:runtime.Stack(buf, false)])
		into.method, _ = grpc.Method(ctx)
		into.fullName = info.FullMethod
		if p, ok := peer.FromContext(ctx); ok {
			into.peer = p.Addr.String()
		}
		into.md, _ = metadata.FromIncomingContext(ctx)
		into.req = req
		if err := grpc.SetHeader(ctx, metadata.Pairs("x-seen", "header")); err != nil {
			return nil, err
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs("x-seen", "trailer")); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// A unary call through InProcess runs in the caller's goroutine (issue
// 32: inprocgrpc's goroutine per call, and its stack growth, were an
// eighth of a REST call's CPU), with the request handed over as it is,
// through the whole chain with the gRPC server's UnaryServerInfo, and
// with what a gRPC handler has: incoming metadata, the REST client's
// address as its peer, grpc.Method, headers and trailers back to the
// caller. A stream still streams.
func TestInProcessUnaryCallRunsInTheCallersGoroutine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 10, time.Minute)
	held := e.acquire(t, lic.GetKey(), "held")
	var got seen
	conn := e.api.InProcess(append(e.api.UnaryInterceptors(), recording(&got)), e.api.StreamInterceptors())
	beats := seatdv1.NewHeartbeatServiceClient(conn)

	ctx := metadata.AppendToOutgoingContext(from(t, "198.51.100.7:4321"), "x-request-id", "r-1")
	req := &seatdv1.HeartbeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()}
	var header, trailer metadata.MD
	resp, err := beats.Heartbeat(ctx, req, grpc.Header(&header), grpc.Trailer(&trailer))
	require.NoError(t, err)
	require.Equal(t, held.GetLease().GetId(), resp.GetLease().GetId())

	require.Contains(t, got.stack, "testing.tRunner(", "the handler ran in a goroutine of its own:\n%s", got.stack)
	require.Same(t, req, got.req, "the request is handed over, not copied")
	require.Equal(t, seatdv1.HeartbeatService_Heartbeat_FullMethodName, got.fullName)
	require.Equal(t, seatdv1.HeartbeatService_Heartbeat_FullMethodName, got.method)
	require.Equal(t, "198.51.100.7:4321", got.peer)
	require.Equal(t, []string{"r-1"}, got.md.Get("x-request-id"))
	require.Equal(t, []string{"header"}, header.Get("x-seen"))
	require.Equal(t, []string{"trailer"}, trailer.Get("x-seen"))

	// Without the gateway's address: one address of its own.
	_, err = beats.Heartbeat(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, inProcessClient, got.peer)

	// The answer is the caller's own: changing it changes nothing the
	// server keeps.
	resp.Lease.Id = "changed"
	again, err := beats.Heartbeat(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, held.GetLease().GetId(), again.GetLease().GetId())

	// WaitForSeat streams through the same channel.
	stream, err := seatdv1.NewSeatServiceClient(conn).WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "waiter"})
	require.NoError(t, err)
	first, err := stream.Recv()
	require.NoError(t, err)
	require.NotNil(t, first)
}
