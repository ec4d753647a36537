// Package client is the Go client of seatd: acquire a seat, heartbeat it,
// release it.
//
//	c, err := client.Dial("127.0.0.1:7070")
//	lease, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: key, Fingerprint: fp})
//	defer lease.Release(context.Background())
//	... call lease.Heartbeat(ctx) every lease.HeartbeatInterval ...
package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// ServiceConfig retries UNAVAILABLE on the calls that are safe to repeat
// (heartbeat, release, and acquire, which dedupes by fingerprint and
// idempotency key). Other languages can use the same JSON.
const ServiceConfig = `{
  "methodConfig": [{
    "name": [
      {"service": "seatd.v1.SeatService", "method": "AcquireSeat"},
      {"service": "seatd.v1.SeatService", "method": "ReleaseSeat"},
      {"service": "seatd.v1.HeartbeatService", "method": "Heartbeat"}
    ],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.1s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
}`

// Client talks to one seatd (or a load-balanced set).
type Client struct {
	conn      *grpc.ClientConn
	owned     bool
	seats     seatdv1.SeatServiceClient
	heartbeat seatdv1.HeartbeatServiceClient
}

// Dial connects to target (host:port). Without options it uses plaintext
// and the retry policy of ServiceConfig; pass grpc.WithTransportCredentials
// to use TLS.
func Dial(target string, opts ...grpc.DialOption) (*Client, error) {
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(ServiceConfig),
	}
	conn, err := grpc.NewClient(target, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial seatd %s: %w", target, err)
	}
	c := New(conn)
	c.owned = true
	return c, nil
}

// New wraps an existing connection; Close will not close it.
func New(conn *grpc.ClientConn) *Client {
	return &Client{
		conn:      conn,
		seats:     seatdv1.NewSeatServiceClient(conn),
		heartbeat: seatdv1.NewHeartbeatServiceClient(conn),
	}
}

// Close closes the connection if Dial made it.
func (c *Client) Close() error {
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

// Lease is a seat held by this process.
type Lease struct {
	c *Client

	ID                string
	LicenseID         string
	Token             string
	HeartbeatInterval time.Duration
	SeatsInUse        int
	SeatLimit         int

	mu        sync.Mutex
	expiresAt time.Time
}

// ExpiresAt is the current deadline.
func (l *Lease) ExpiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expiresAt
}

// Acquire takes a seat. When none is free the error satisfies
// errors.Is(err, ErrNoSeat) and Reason(err) == "SEATS_EXHAUSTED".
func (c *Client) Acquire(ctx context.Context, o AcquireOptions) (*Lease, error) {
	resp, err := c.seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{
		LicenseKey: o.LicenseKey, Fingerprint: o.Fingerprint, User: o.User, Hostname: o.Hostname,
		Metadata: o.Metadata, IdempotencyKey: o.IdempotencyKey,
	})
	if err != nil {
		return nil, wrap(err)
	}
	return &Lease{
		c: c, ID: resp.GetLease().GetId(), LicenseID: resp.GetLease().GetLicenseId(), Token: resp.GetLeaseToken(),
		HeartbeatInterval: resp.GetHeartbeatInterval().AsDuration(),
		SeatsInUse:        int(resp.GetSeatsInUse()), SeatLimit: int(resp.GetSeatLimit()),
		expiresAt: resp.GetLease().GetExpiresAt().AsTime(),
	}, nil
}

// Heartbeat moves the deadline ahead. After the deadline it fails with
// Reason(err) == "LEASE_EXPIRED" (errors.Is(err, ErrLeaseLost)).
func (l *Lease) Heartbeat(ctx context.Context) error {
	resp, err := l.c.heartbeat.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: l.ID, LeaseToken: l.Token})
	if err != nil {
		return wrap(err)
	}
	l.mu.Lock()
	l.expiresAt = resp.GetExpiresAt().AsTime()
	l.mu.Unlock()
	return nil
}

// Release gives the seat back. Releasing twice is fine.
func (l *Lease) Release(ctx context.Context) error {
	_, err := l.c.seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: l.ID, LeaseToken: l.Token})
	return wrap(err)
}

// Errors to test with errors.Is.
var (
	ErrNoSeat    = errors.New("no seat free")
	ErrLeaseLost = errors.New("lease lost (expired, revoked or released)")
)

// Error is a seatd error with its machine-readable reason.
type Error struct {
	Status *status.Status
	Reason string // google.rpc.ErrorInfo reason, e.g. SEATS_EXHAUSTED
}

func (e *Error) Error() string { return "seatd: " + e.Status.Message() }

// GRPCStatus lets status.FromError see through the wrapper.
func (e *Error) GRPCStatus() *status.Status { return e.Status }

func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoSeat:
		return e.Reason == "SEATS_EXHAUSTED"
	case ErrLeaseLost:
		return e.Reason == "LEASE_EXPIRED" || e.Reason == "LEASE_REVOKED" || e.Reason == "LEASE_RELEASED" || e.Reason == "LEASE_NOT_FOUND"
	}
	return false
}

// Reason returns the ErrorInfo reason of a seatd error, or "".
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func wrap(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := &Error{Status: st}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			e.Reason = info.GetReason()
		}
	}
	return e
}
