package grpcapi

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// GatewayAddr is the remote address of the REST gateway's in-process
// connection (server/daemon gives its connections this address). Only on
// that connection is the ForwardedForKey metadata believed: the gateway
// sets it from the HTTP request's remote address, and replaces whatever a
// REST client sent under that key. A network client may send the key too;
// it is ignored.
type GatewayAddr struct{}

func (GatewayAddr) Network() string { return "seatd-gateway" }
func (GatewayAddr) String() string  { return "seatd-gateway" }

// ForwardedForKey is the metadata key the gateway puts a REST caller's
// address in.
const ForwardedForKey = "x-forwarded-for"

// clientAddr is who a call comes from, for the per-address limits: the
// peer's IP, or for calls through the REST gateway the HTTP client's. IPv6
// addresses count by their /64 (one host's usual allocation), so that a
// host cannot get a fresh bucket per address of its own prefix.
func clientAddr(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	if _, gateway := p.Addr.(GatewayAddr); gateway {
		md, _ := metadata.FromIncomingContext(ctx)
		if vals := md.Get(ForwardedForKey); len(vals) > 0 {
			// The last hop is the one the gateway saw; any before it are
			// the client's word.
			last := vals[len(vals)-1]
			return AddrKey(strings.TrimSpace(last[strings.LastIndexByte(last, ',')+1:]))
		}
		return p.Addr.String()
	}
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
