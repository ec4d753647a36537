package grpcapi

import (
	"context"

	"google.golang.org/grpc"
)

// checkUnary runs checkRequest before the handler: a refused request reaches
// neither the handler nor the store, and is not logged (a flood of bad
// requests must not flood the log).
func checkUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// checkStream runs checkRequest on every message a stream receives; the
// handler gets the refusal as the error of its RecvMsg and ends the stream
// with it.
func checkStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, checkedStream{ss})
}

type checkedStream struct{ grpc.ServerStream }

func (s checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return checkRequest(m)
}
