package grpcapi

import (
	"context"
	"net"
	"net/netip"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc/peer"
)

// restClientKey is the context key of a REST caller's address (WithRESTClient).
type restClientKey struct{}

// WithRESTClient is ctx carrying addr, the HTTP client's remote address
// ("ip:port"), for a call the REST gateway makes through InProcess. It is a
// Go value in the caller's context, never metadata: nothing a client sends,
// over gRPC or as an HTTP header, can set it, and it is read only on the
// in-process channel (clientAddr).
func WithRESTClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, restClientKey{}, addr)
}

// clientAddr is who a call comes from, for the per-address limits: the
// peer's IP, or for calls through the REST gateway's in-process channel
// the HTTP client's (WithRESTClient). IPv6 addresses count by their /64
// (one host's usual allocation), so that a host cannot get a fresh bucket
// per address of its own prefix.
func clientAddr(ctx context.Context) string {
	// Only a stream through InProcess's inprocgrpc channel has a client
	// context: the key is that package's, and a network call has none.
	if cc := inprocgrpc.ClientContext(ctx); cc != nil {
		if addr, ok := cc.Value(restClientKey{}).(string); ok {
			return AddrKey(addr)
		}
		return inProcessClient
	}
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	// A unary call through InProcess's direct path: its peer is the REST
	// client's address (restAddr), a type no network peer has.
	return AddrKey(p.Addr.String())
}

// AddrKey is the bucket of an "ip" or "ip:port" (anything else, e.g. an
// in-memory address, is its own bucket): the client address every
// per-address limit counts by, the daemon's connection cap too.
func AddrKey(s string) string {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return s
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		return netip.PrefixFrom(ip, 64).Masked().String()
	}
	return ip.String()
}
