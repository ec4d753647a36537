package daemon

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/seatd/seatd/server"
)

// BenchCeilingMethod is the full name of make bench's ceiling call: a gRPC
// call that runs one no-op script through the distributed store's hot-path
// batching on the license named in the "license-id" metadata, as a
// heartbeat does. Served only with --bench-ceiling; not part of the API.
const BenchCeilingMethod = "/seatd.bench.Ceiling/Noop"

type noopStore interface {
	Noop(ctx context.Context, licenseID string) error
}

func registerBenchCeiling(s *grpc.Server, store server.Store) error {
	st, ok := store.(noopStore)
	if !ok {
		return errors.New("--bench-ceiling needs distributed mode")
	}
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "seatd.bench.Ceiling",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Noop",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(new(emptypb.Empty)); err != nil {
					return nil, err
				}
				ids := metadata.ValueFromIncomingContext(ctx, "license-id")
				if len(ids) != 1 {
					return nil, status.Error(codes.InvalidArgument, "license-id metadata is required")
				}
				if err := st.Noop(ctx, ids[0]); err != nil {
					return nil, status.Error(codes.Unavailable, "storage backend unavailable")
				}
				return new(emptypb.Empty), nil
			},
		}},
	}, struct{}{})
	return nil
}
