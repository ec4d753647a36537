package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/test/bufconn"

	"github.com/seatd/seatd/server/gateway"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/tlsreload"
)

// What seatd does to stay up when exposed to a network: TLS (and mTLS)
// from files that may rotate, a cap on open connections per listener, and
// time limits on every stage of a connection, each with a flag (README,
// "Running on a network").

// tlsFiles loads the TLS files if the config names them; nil means
// plaintext.
func tlsFiles(cfg Config, log *slog.Logger) (*tlsreload.Reloader, error) {
	if cfg.TLSCertFile == "" {
		return nil, nil
	}
	return tlsreload.New(tlsreload.Files{Cert: cfg.TLSCertFile, Key: cfg.TLSKeyFile, ClientCA: cfg.TLSClientCAFile}, log)
}

// listen binds addr with at most max connections open at once: more wait
// in the kernel's backlog until one closes, so that one flood cannot use
// every file descriptor (and starve the other port and the health checks).
func listen(addr, flagName string, max int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (--%s): %w", addr, flagName, err)
	}
	return netutil.LimitListener(ln, max), nil
}

// warnIfExposed says so when a plaintext listener is reachable from other
// machines: bearer keys and lease tokens would cross the network in clear.
func warnIfExposed(log *slog.Logger, ln net.Listener, flagName string) {
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if ok && !tcp.IP.IsLoopback() {
		log.Warn("serving plaintext on a non-loopback address: keys and lease tokens cross the network in clear; set --tls-cert-file and --tls-key-file",
			"flag", "--"+flagName, "addr", ln.Addr().String())
	}
}

// grpcNetworkOptions are the gRPC server's limits, and its TLS if any.
func grpcNetworkOptions(cfg Config, tlsr *tlsreload.Reloader) []grpc.ServerOption {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxRequestBytes),
		grpc.MaxConcurrentStreams(uint32(cfg.GRPCMaxStreamsPerConn)),
		grpc.ConnectionTimeout(cfg.ConnectionTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.KeepaliveMinTime, PermitWithoutStream: true}),
		// Ping idle connections so that a peer gone without a FIN (a
		// laptop lid closed, a cut cable) is noticed and its streams end.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
	}
	if tlsr != nil {
		opts = append(opts, grpc.Creds(inProcessOrTLS{credentials.NewTLS(tlsr.Config("h2"))}))
	}
	return opts
}

// inProcess is the connection the REST gateway uses to reach this
// instance's gRPC server: in memory, so it needs neither TLS nor a client
// certificate (REST callers went through TLS on the HTTP port), and it is
// not exposed as a port.
type inProcess struct {
	*bufconn.Listener
}

type inProcessConn struct{ net.Conn }

// RemoteAddr marks the gateway's calls: only on them does the gRPC server
// believe the REST client's address the gateway forwards (the per-address
// limits), so that a network client cannot name an address of its choice.
func (inProcessConn) RemoteAddr() net.Addr { return grpcapi.GatewayAddr{} }

func newInProcess() inProcess { return inProcess{bufconn.Listen(1 << 20)} }

func (l inProcess) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return inProcessConn{c}, nil
}

// dial connects the gateway. Its answers may be larger than a request may
// be (a page of licenses), so its receive limit is generous.
func (l inProcess) dial() (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///seatd-in-process",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(gatewayMaxAnswer)))
}

// gatewayMaxAnswer bounds one gRPC answer the gateway relays.
const gatewayMaxAnswer = 256 << 20

// inProcessOrTLS is TLS on network connections and nothing on the
// in-process one (credentials are per server in grpc-go, not per listener).
type inProcessOrTLS struct {
	credentials.TransportCredentials
}

func (c inProcessOrTLS) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	if _, ok := conn.(inProcessConn); ok {
		return insecure.NewCredentials().ServerHandshake(conn)
	}
	return c.TransportCredentials.ServerHandshake(conn)
}

func (c inProcessOrTLS) Clone() credentials.TransportCredentials {
	return inProcessOrTLS{c.TransportCredentials.Clone()}
}

// httpServer is the HTTP server with its time limits, and TLS if any.
func httpServer(cfg Config, h http.Handler, tlsr *tlsreload.Reloader, log *slog.Logger) *http.Server {
	s := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       cfg.HTTPReadTimeout,
		IdleTimeout:       cfg.HTTPIdleTimeout,
		// WriteTimeout stays 0: WaitForSeat answers as a stream for as long
		// as the wait; the gateway sets a write deadline on every other call.
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	if tlsr != nil {
		s.TLSConfig = tlsr.Config("h2", "http/1.1")
	}
	return s
}

// gatewayLimits are the REST limits from the config.
func gatewayLimits(cfg Config) gateway.Limits {
	return gateway.Limits{MaxBodyBytes: int64(cfg.MaxRequestBytes), WriteTimeout: cfg.HTTPWriteTimeout}
}
