package client

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Options tune what a Client does with the leases it hands out. Start from
// DefaultOptions: the zero value turns automatic heartbeats off.
type Options struct {
	// AutoHeartbeat keeps every lease alive in the background until it is
	// released or lost. Default true. Without it, call Lease.Heartbeat
	// every Lease.HeartbeatInterval yourself.
	AutoHeartbeat bool
	// ReacquireOnExpiry acquires again, with the same AcquireOptions, a
	// lease that expired (e.g. the machine slept past its deadline) instead
	// of reporting it lost; the Lease then carries the new id and token.
	// Default false: the application may need to know it lost its seat.
	// Needs AutoHeartbeat.
	ReacquireOnExpiry bool
	// Logger receives reconnects, fallbacks and losses. Default: discarded.
	Logger *slog.Logger
}

// DefaultOptions are the options of Dial and New.
func DefaultOptions() Options { return Options{AutoHeartbeat: true} }

// Client talks to one seatd (or a load-balanced set).
type Client struct {
	conn      *grpc.ClientConn
	owned     bool
	seats     seatdv1.SeatServiceClient
	heartbeat seatdv1.HeartbeatServiceClient
	opts      Options
	log       *slog.Logger
	t         timing

	mu      sync.Mutex
	keepers map[*keeper]struct{} // running, so that Close can stop them
	closed  bool                 // no new keepers after Close
}

// Dial connects to target (host:port) with DefaultOptions. Without dial
// options it uses plaintext and the retry policy of ServiceConfig; pass
// grpc.WithTransportCredentials to use TLS.
func Dial(target string, opts ...grpc.DialOption) (*Client, error) {
	return DialWithOptions(target, DefaultOptions(), opts...)
}

// DialWithOptions is Dial with Options.
func DialWithOptions(target string, o Options, opts ...grpc.DialOption) (*Client, error) {
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(ServiceConfig),
	}
	conn, err := grpc.NewClient(target, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial seatd %s: %w", target, err)
	}
	c := NewWithOptions(conn, o)
	c.owned = true
	return c, nil
}

// New wraps an existing connection with DefaultOptions; Close will not close
// the connection.
func New(conn *grpc.ClientConn) *Client { return NewWithOptions(conn, DefaultOptions()) }

// NewWithOptions is New with Options.
func NewWithOptions(conn *grpc.ClientConn, o Options) *Client {
	return newClient(conn, o, defaultTiming)
}

func newClient(conn *grpc.ClientConn, o Options, t timing) *Client {
	return &Client{
		conn:      conn,
		seats:     seatdv1.NewSeatServiceClient(conn),
		heartbeat: seatdv1.NewHeartbeatServiceClient(conn),
		opts:      o,
		log:       cmp.Or(o.Logger, slog.New(slog.DiscardHandler)),
		t:         t,
		keepers:   map[*keeper]struct{}{},
	}
}

// Close stops the background heartbeats of every lease and closes the
// connection if Dial made it. It does not release the seats: Release them
// first, or they stay taken until their deadline.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	running := make([]*keeper, 0, len(c.keepers))
	for k := range c.keepers {
		running = append(running, k)
	}
	c.mu.Unlock()
	for _, k := range running {
		_ = k.stop(context.Background())
	}
	if c.owned {
		return c.conn.Close()
	}
	return nil
}

// AcquireOptions describe the client asking for a seat.
type AcquireOptions struct {
	LicenseKey     string
	Fingerprint    string
	User           string
	Hostname       string
	Metadata       map[string]string
	IdempotencyKey string
}

// named returns o with an idempotency key naming this one acquisition: the
// caller's own if set, else a new random one. Every retry of the
// acquisition (the service config's, or the keeper's) sends the same key,
// so a retry after a lost reply gets the seat the first try took, never a
// second one, whatever the license's leasing strategy.
func (o AcquireOptions) named() AcquireOptions {
	if o.IdempotencyKey == "" {
		o.IdempotencyKey = "acq_" + rand.Text()
	}
	return o
}

func (o AcquireOptions) acquireRequest() *seatdv1.AcquireSeatRequest {
	return &seatdv1.AcquireSeatRequest{
		LicenseKey: o.LicenseKey, Fingerprint: o.Fingerprint, User: o.User, Hostname: o.Hostname,
		Metadata: o.Metadata, IdempotencyKey: o.IdempotencyKey,
	}
}

func (o AcquireOptions) waitRequest() *seatdv1.WaitForSeatRequest {
	return &seatdv1.WaitForSeatRequest{
		LicenseKey: o.LicenseKey, Fingerprint: o.Fingerprint, User: o.User, Hostname: o.Hostname,
		Metadata: o.Metadata, IdempotencyKey: o.IdempotencyKey,
	}
}

// Acquire takes a seat. When none is free the error satisfies
// errors.Is(err, ErrNoSeat) and Reason(err) == "SEATS_EXHAUSTED". With
// AutoHeartbeat the lease keeps itself alive until Release, Close, or its
// loss; ctx bounds only this call, not the lease.
func (c *Client) Acquire(ctx context.Context, o AcquireOptions) (*Lease, error) {
	sent := c.t.wallNow()
	resp, err := c.seats.AcquireSeat(ctx, o.named().acquireRequest())
	if err != nil {
		return nil, wrap(err)
	}
	return c.hold(o, resp, sent), nil
}

// hold wraps a granted seat in a Lease and starts keeping it alive.
func (c *Client) hold(o AcquireOptions, resp *seatdv1.AcquireSeatResponse, sent time.Time) *Lease {
	o.Metadata = maps.Clone(o.Metadata) // acquiring again must not race the caller's map
	l := &Lease{c: c, opts: o, lost: make(chan struct{})}
	l.st = stateOf(resp, sent)
	if c.opts.AutoHeartbeat {
		l.keep = c.startKeeper(l)
	}
	return l
}
