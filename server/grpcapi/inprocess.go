package grpcapi

import (
	"github.com/fullstorydev/grpchan"
	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
)

// InProcess returns the channel the REST gateway calls the seatd services
// through: in this process, with no connection, HTTP/2 framing or protobuf
// encoding between the gateway and the handlers (messages are copied, so
// neither side shares one with the other). Every call runs unary or
// stream, the interceptors given: pass the gRPC server's whole chain
// (metrics, recovery, then UnaryInterceptors and StreamInterceptors), so
// that a REST call is authenticated, checked, limited and counted as a
// gRPC call is. Server streams (WaitForSeat) stream. The REST caller's
// address travels in the call's context (WithRESTClient) and is believed
// only here.
func (s *Server) InProcess(unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) grpc.ClientConnInterface {
	ch := new(inprocgrpc.Channel)
	s.Register(grpchan.WithStreamInterceptors(grpchan.WithUnaryInterceptors(ch, unary...), stream...))
	return ch
}
