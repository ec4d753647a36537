package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/seatd/seatd/server/gateway"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/tlsreload"
)

// What seatd does to stay up when exposed to a network: TLS (and mTLS)
// from files that may rotate, a cap on open connections per listener, and
// time limits on every stage of a connection, each with a flag (docs/guides/tls.md,
// "Limits").

// tlsFiles loads the TLS files if the config names them; nil means
// plaintext.
func tlsFiles(cfg Config, log *slog.Logger) (*tlsreload.Reloader, error) {
	if cfg.TLSCertFile == "" {
		return nil, nil
	}
	return tlsreload.New(tlsreload.Files{Cert: cfg.TLSCertFile, Key: cfg.TLSKeyFile, ClientCA: cfg.TLSClientCAFile}, log)
}

// listen binds addr with at most max connections open at once, and at
// most perAddr of them from one client address (grpcapi.AddrKey: an IPv6
// /64 counts as one): more connections in all wait in the kernel's backlog
// until one closes, so that one flood cannot use every file descriptor (and
// starve the other port and the health checks); more from one address are
// closed as soon as accepted, so that one address cannot take every slot
// (connections that never send a byte hold theirs until
// --connection-timeout or --http-read-timeout).
func listen(addr, flagName, name string, max, perAddr int, m *metrics.Network) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (--%s): %w", addr, flagName, err)
	}
	counted := &addrLimitListener{Listener: ln, perAddr: perAddr, open: map[string]int{},
		gauge: m.ConnectionsOpen.WithLabelValues(name), shed: m.ConnectionsShed.WithLabelValues(name)}
	return netutil.LimitListener(counted, max), nil
}

// addrLimitListener counts the open connections of each client address
// and closes at once those over perAddr.
type addrLimitListener struct {
	net.Listener
	perAddr int
	gauge   prometheus.Gauge
	shed    prometheus.Counter

	mu   sync.Mutex
	open map[string]int // addresses with a connection open; removed at 0
}

func (l *addrLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := grpcapi.AddrKey(c.RemoteAddr().String())
		l.mu.Lock()
		over := l.open[key] >= l.perAddr
		if !over {
			l.open[key]++
		}
		l.mu.Unlock()
		if over {
			_ = c.Close()
			l.shed.Inc()
			continue
		}
		l.gauge.Inc()
		return &addrCountedConn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

func (l *addrLimitListener) release(key string) {
	l.gauge.Dec()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] <= 1 {
		delete(l.open, key)
	} else {
		l.open[key]--
	}
}

type addrCountedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *addrCountedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
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
		// A call's metadata (HTTP/2 headers) is held for as long as the
		// call: grpc-go's default bound is 16 MiB a call. A header list
		// over this is refused with RST_STREAM before any handler runs, and
		// advertised in SETTINGS so that well-behaved clients fail locally.
		grpc.MaxHeaderListSize(uint32(cfg.GRPCMaxHeaderBytes)),
		grpc.MaxConcurrentStreams(uint32(cfg.GRPCMaxStreamsPerConn)),
		grpc.ConnectionTimeout(cfg.ConnectionTimeout),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: cfg.KeepaliveMinTime, PermitWithoutStream: true}),
		// Ping idle connections so that a peer gone without a FIN (a
		// laptop lid closed, a cut cable) is noticed and its streams end.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
	}
	if tlsr != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsr.Config("h2"))))
	}
	return opts
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
		MaxHeaderBytes: httpMaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	if tlsr != nil {
		s.TLSConfig = tlsr.Config("h2", "http/1.1")
	}
	return s
}

// httpMaxHeaderBytes bounds an HTTP request's headers (more: 431); the
// gRPC port's bound, --grpc-max-header-bytes, defaults to the same.
const httpMaxHeaderBytes = 64 << 10

// gatewayLimits are the REST limits from the config.
func gatewayLimits(cfg Config) gateway.Limits {
	return gateway.Limits{MaxBodyBytes: int64(cfg.MaxRequestBytes), WriteTimeout: cfg.HTTPWriteTimeout}
}
