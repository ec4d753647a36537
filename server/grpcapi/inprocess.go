package grpcapi

import (
	"context"
	"net"
	"reflect"
	"sync"

	"github.com/fullstorydev/grpchan"
	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// InProcess returns the channel the REST gateway calls the seatd services
// through: in this process, with no connection, HTTP/2 framing or protobuf
// encoding between the gateway and the handlers. Every call runs the
// interceptors given: pass the gRPC server's whole chain (metrics,
// recovery, then UnaryInterceptors and StreamInterceptors), so that a
// REST call is authenticated, checked, limited and counted as a gRPC call
// is (ARCHITECTURE.md: how a REST call reaches a handler).
//
// A unary call runs in the caller's goroutine (the HTTP handler's): the
// method's handler from the service description, the unary chain applied
// as grpc.ChainUnaryInterceptor applies it (same UnaryServerInfo), the
// request handed over as it is and the answer copied into the caller's
// reply. A server stream (WaitForSeat) goes through FullStory's
// inprocgrpc channel, which runs it in a goroutine of its own.
//
// The REST caller's address travels in the call's context
// (WithRESTClient) and is believed only here: the handlers see it as the
// call's peer (clientAddr).
func (s *Server) InProcess(unary []grpc.UnaryServerInterceptor, stream []grpc.StreamServerInterceptor) grpc.ClientConnInterface {
	ch := new(inprocgrpc.Channel)
	s.Register(grpchan.WithStreamInterceptors(grpchan.WithUnaryInterceptors(ch, unary...), stream...))
	d := &directChannel{streams: ch, methods: map[string]directMethod{}, chain: chainUnary(unary)}
	s.Register(d)
	return d
}

// directChannel is InProcess's channel: unary calls direct, streams
// through inprocgrpc. As a grpc.ServiceRegistrar it records the unary
// methods of the services registered on it.
type directChannel struct {
	streams grpc.ClientConnInterface
	methods map[string]directMethod // by full method name, "/seatd.v1.SeatService/AcquireSeat"
	chain   grpc.UnaryServerInterceptor
}

type directMethod struct {
	srv     any
	handler grpc.MethodHandler
}

func (d *directChannel) RegisterService(desc *grpc.ServiceDesc, impl any) {
	for _, m := range desc.Methods {
		d.methods["/"+desc.ServiceName+"/"+m.MethodName] = directMethod{srv: impl, handler: m.Handler}
	}
}

func (d *directChannel) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return d.streams.NewStream(ctx, desc, method, opts...)
}

// Invoke runs one unary call. The handler's context is the caller's
// (deadline, cancellation) with, as on a gRPC server: the caller's
// outgoing metadata as incoming metadata (and no outgoing metadata), the
// peer (the REST client's address), and a transport stream that keeps
// what the handler sets with grpc.SetHeader/SetTrailer for the
// caller's grpc.Header/grpc.Trailer options.
func (d *directChannel) Invoke(ctx context.Context, method string, req, reply any, opts ...grpc.CallOption) error {
	m, ok := d.methods[method]
	if !ok {
		return status.Errorf(codes.Unimplemented, "method %s not implemented", method)
	}
	_, ok1 := req.(proto.Message)
	out, ok2 := reply.(proto.Message)
	if !ok1 || !ok2 {
		return status.Error(codes.Internal, "in-process call: not protobuf messages")
	}
	call := &directCall{method: method, peer: peer.Peer{Addr: restAddr(restClient(ctx))}}
	md, _ := metadata.FromOutgoingContext(ctx)
	sctx := metadata.NewOutgoingContext(metadata.NewIncomingContext(ctx, md), nil)
	sctx = peer.NewContext(sctx, &call.peer)
	sctx = grpc.NewContextWithServerTransportStream(sctx, call)
	// The generated handler decodes into a message of its own, then calls
	// the interceptor with it; the caller's message is handed over there
	// instead (no copy), so decoding is nothing.
	resp, err := m.handler(m.srv, sctx, func(any) error { return nil },
		func(ctx context.Context, fresh any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if reflect.TypeOf(fresh) != reflect.TypeOf(req) {
				return nil, status.Error(codes.Internal, "in-process call: request type")
			}
			return d.chain(ctx, req, info, handler)
		})
	call.deliver(opts)
	if err != nil {
		return err
	}
	msg, ok := resp.(proto.Message)
	if !ok || isNilMessage(msg) {
		return status.Error(codes.Internal, "handler returned neither error nor response message")
	}
	// The answer is copied: the handler may keep its message (a cached
	// one), and the caller owns reply.
	proto.Merge(out, msg)
	return nil
}

func isNilMessage(m proto.Message) bool {
	v := reflect.ValueOf(m)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// chainUnary is grpc.ChainUnaryInterceptor's chain: the first interceptor
// outermost, each calling the next, the last calling the handler.
func chainUnary(interceptors []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(interceptors) {
	case 0:
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			return handler(ctx, req)
		}
	case 1:
		return interceptors[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return interceptors[0](ctx, req, info, nextUnary(interceptors, 0, info, handler))
	}
}

func nextUnary(interceptors []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(interceptors)-1 {
		return final
	}
	return func(ctx context.Context, req any) (any, error) {
		return interceptors[i+1](ctx, req, info, nextUnary(interceptors, i+1, info, final))
	}
}

// directCall is a unary in-process call's grpc.ServerTransportStream:
// grpc.Method, and the headers and trailers a handler sets.
type directCall struct {
	method  string
	peer    peer.Peer
	mu      sync.Mutex
	header  metadata.MD
	trailer metadata.MD
}

func (c *directCall) Method() string { return c.method }

func (c *directCall) SetHeader(md metadata.MD) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.header = metadata.Join(c.header, md)
	return nil
}

func (c *directCall) SendHeader(md metadata.MD) error { return c.SetHeader(md) }

func (c *directCall) SetTrailer(md metadata.MD) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trailer = metadata.Join(c.trailer, md)
	return nil
}

// deliver answers the caller's grpc.Header and grpc.Trailer options (the
// gateway passes both, to write Grpc-Metadata-* headers).
func (c *directCall) deliver(opts []grpc.CallOption) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = c.header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = c.trailer
		case grpc.PeerCallOption:
			*o.PeerAddr = c.peer
		}
	}
}

// restAddr is a REST client's address as a net.Addr: what clientAddr
// counts a call from the gateway by.
type restAddr string

func (restAddr) Network() string  { return "seatd-rest" }
func (a restAddr) String() string { return string(a) }

var _ net.Addr = restAddr("")

// inProcessClient is the address of an in-process call that carries no
// REST client's (none of the gateway's): one address of its own.
const inProcessClient = "seatd-in-process"

// restClient is the REST client's address in ctx (WithRESTClient), or
// inProcessClient.
func restClient(ctx context.Context) string {
	if addr, ok := ctx.Value(restClientKey{}).(string); ok && addr != "" {
		return addr
	}
	return inProcessClient
}
