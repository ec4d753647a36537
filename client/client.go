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
	"google.golang.org/protobuf/types/known/durationpb"

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
	// SigningKeys, when set, makes the client verify the lease certificate
	// of every answer that grants or extends a seat (Acquire, Borrow,
	// WaitForSeat's grant, every heartbeat, unary or on the stream): signed
	// (EdDSA) by the key of this set its kid names, issued by seatd, for
	// this lease, for this client (Claims.CheckHolder: the hash of our
	// license key, and our fingerprint, or our user or hostname when the
	// license shares a lease per user or hostname, and the feature and
	// version asked for, all as AcquireOptions sent them, never as an
	// answer says), repeating the nonce the request carried,
	// with exp the deadline the answer told (rounded down to whole seconds)
	// and not passed. An answer that fails is a lost lease: Acquire and
	// WaitForSeat return the error (and give the seat back), a kept lease
	// closes Lost; Reason(err) is ReasonBadCertificate and errors.Is(err,
	// ErrBadCertificate) holds. Embed the tenant's JWKS in the product
	// (ParseSigningKeys) rather than fetching it from the server it checks.
	// With it every request carries a fresh nonce, which asks seatd for a
	// certificate. Default nil: nothing is checked, and only a borrow sends a
	// nonce, so seatd signs nothing else for this client (a signature costs
	// it about a third of its heartbeat rate): Lease.Certificate is "" but
	// for a borrowed lease.
	SigningKeys *SigningKeys
	// VendorKeys, when set, makes the client verify every certificate as
	// SigningKeys does, but from the vendor's public keys
	// (ParseVendorKeys of the vendor.pub embedded in the product) through
	// the chain of a seatd in locked mode: the license file in force,
	// fetched from seatd (FetchLicenseFile) when the client has none or a
	// certificate names another serial, signed by the vendor and before
	// its not_after; the certificate signed by the site key the file
	// names, naming the file's serial and a license (and feature) the file
	// grants (LicenseFile.Verify). A failure is a lost lease as with
	// SigningKeys, errors.Is(err, ErrBadCertificate) and the link's error
	// (ErrWrongSiteKey ...). With both set, a certificate must pass both.
	// Lease.LicenseFile is the file a lease's certificate chained to.
	VendorKeys *VendorKeys
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
	chain     *fileChain // with Options.VendorKeys
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
	c := &Client{
		conn:      conn,
		seats:     seatdv1.NewSeatServiceClient(conn),
		heartbeat: seatdv1.NewHeartbeatServiceClient(conn),
		opts:      o,
		log:       cmp.Or(o.Logger, slog.New(slog.DiscardHandler)),
		t:         t,
		keepers:   map[*keeper]struct{}{},
	}
	if o.VendorKeys != nil {
		c.chain = &fileChain{vendor: o.VendorKeys, fetch: c.FetchLicenseFile, timeout: t.callTimeout}
	}
	return c
}

// verifies reports whether the client checks certificates.
func (c *Client) verifies() bool { return c.opts.SigningKeys != nil || c.chain != nil }

// checkCert verifies the certificate of an answer with SigningKeys and
// through the chain of VendorKeys, those set; it returns the license
// file it chained to (its JWS; "" without VendorKeys).
func (c *Client) checkCert(ctx context.Context, cert string, want expectation) (file string, err error) {
	now := c.t.wallNow()
	if c.opts.SigningKeys != nil {
		if _, err := c.opts.SigningKeys.check(cert, want, now); err != nil {
			return "", err
		}
	}
	if c.chain == nil {
		return "", nil
	}
	f, err := c.chain.check(ctx, cert, want, now)
	if err != nil {
		return "", err
	}
	return f.Token, nil
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
	LicenseKey string
	// Fingerprint identifies the client: under the license's default
	// leasing strategy, an acquisition with the fingerprint of a live lease
	// gets that lease back. MachineFingerprint(app) is a stable one per
	// machine and application, the same in every seatd client.
	Fingerprint    string
	User           string
	Hostname       string
	Metadata       map[string]string
	IdempotencyKey string
	// Feature asks for a seat of one of the license's feature grants
	// (a module of the product) instead of its base seats; "" is the base
	// pool. A license without a grant of it answers FEATURE_NOT_LICENSED.
	Feature string
	// Version is the version of the feature this program is, dotted
	// numbers ("2025.1"): only a grant covering it may grant the seat
	// (else VERSION_NOT_LICENSED). "": any grant of the feature. Only with
	// Feature.
	Version string
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

// acquireRequest asks for the seat with nonce (Client.nonce), which every
// retry of this request repeats (the certificate answers the request).
func (o AcquireOptions) acquireRequest(nonce string) *seatdv1.AcquireSeatRequest {
	return &seatdv1.AcquireSeatRequest{
		LicenseKey: o.LicenseKey, Fingerprint: o.Fingerprint, User: o.User, Hostname: o.Hostname,
		Metadata: o.Metadata, IdempotencyKey: o.IdempotencyKey, Nonce: nonce,
		Feature: o.Feature, Version: o.Version,
	}
}

// nonce is the nonce of a new request: a fresh one when this client checks
// certificates (Options.SigningKeys) or the request borrows (a borrow always
// gets a certificate, which then repeats it), else "". seatd signs a
// certificate only for a request with a nonce, or a borrow: a client that
// does not check them should not cost it the signatures.
func (c *Client) nonce(borrow bool) string {
	if !c.verifies() && !borrow {
		return ""
	}
	return newNonce()
}

func (o AcquireOptions) waitRequest() *seatdv1.WaitForSeatRequest {
	return &seatdv1.WaitForSeatRequest{
		LicenseKey: o.LicenseKey, Fingerprint: o.Fingerprint, User: o.User, Hostname: o.Hostname,
		Metadata: o.Metadata, IdempotencyKey: o.IdempotencyKey,
		Feature: o.Feature, Version: o.Version,
	}
}

// Acquire takes a seat. When none is free the error satisfies
// errors.Is(err, ErrNoSeat) and Reason(err) == "SEATS_EXHAUSTED" (or, under
// the license's site policy, another reason of ErrNoSeat: a cap, seats
// reserved for others); a policy that refuses the client satisfies
// errors.Is(err, ErrNotAllowed). With
// AutoHeartbeat the lease keeps itself alive until Release, Close, or its
// loss; ctx bounds only this call, not the lease.
//
// With Options.SigningKeys, an answer whose certificate fails verification
// is refused: the seat is given back and the error satisfies
// errors.Is(err, ErrBadCertificate) (Reason ReasonBadCertificate).
func (c *Client) Acquire(ctx context.Context, o AcquireOptions) (*Lease, error) {
	return c.acquire(ctx, o, 0)
}

// Borrow takes a seat for offline use for d (at most the license's
// max_borrow_duration). The lease needs no heartbeats and holds its seat
// until its deadline (ExpiresAt), unless the license allows early return
// (allow_early_return): otherwise seatd refuses to return it early (Reason
// LEASE_BORROWED), since its certificate stays valid offline until then.
// A returned certificate is listed as returned (FetchReturnedCertificates).
// Store Lease.Certificate with the product: VerifyOffline checks it at
// start-up without a network, VerifyOfflineReturned also against the list
// of returned certificates the product kept. Nothing keeps or watches a borrowed lease:
// its Lost channel closes only if a Heartbeat call finds it gone.
//
// The request carries a nonce, with Options.SigningKeys or without, so the
// certificate (seatd signs one for every borrow) repeats it. An answer
// without a certificate, or not for a borrowed lease (a server without
// borrowing), is refused and the seat given back; with
// Options.SigningKeys the certificate is verified as for Acquire (and must
// say borrowed). A license that does not allow borrowing answers
// FAILED_PRECONDITION BORROW_NOT_ALLOWED; one whose borrowable seats are
// out, RESOURCE_EXHAUSTED BORROW_LIMIT_REACHED.
func (c *Client) Borrow(ctx context.Context, o AcquireOptions, d time.Duration) (*Lease, error) {
	if d <= 0 {
		return nil, fmt.Errorf("borrow a seat: duration %s is not positive", d)
	}
	return c.acquire(ctx, o, d)
}

// acquire is one acquisition, borrowed for borrow if positive.
func (c *Client) acquire(ctx context.Context, o AcquireOptions, borrow time.Duration) (*Lease, error) {
	req := o.named().acquireRequest(c.nonce(borrow > 0))
	if borrow > 0 {
		req.BorrowDuration = durationpb.New(borrow)
	}
	sent := c.t.wallNow()
	resp, err := c.seats.AcquireSeat(ctx, req)
	if err != nil {
		return nil, wrap(err)
	}
	st, err := c.granted(ctx, req.GetNonce(), o, resp, sent, borrow > 0)
	if err != nil {
		c.giveBack(ctx, resp.GetLease().GetId(), resp.GetLeaseToken())
		return nil, err
	}
	return c.hold(o, st), nil
}

// granted reads and, with SigningKeys or VendorKeys, verifies a granted seat: nonce and
// o are what the request sent, sent is when.
func (c *Client) granted(ctx context.Context, nonce string, o AcquireOptions, resp *seatdv1.AcquireSeatResponse, sent time.Time, borrowed bool) (leaseState, error) {
	st := stateOf(resp, sent)
	// Every certificate of the lease must name our own license key and
	// identity, never what an answer says: a relay holding one lease could
	// otherwise answer many clients with its certificates.
	st.holder = holderOf(o)
	st.borrowed = borrowed
	// A server that ignores the feature asked would hand a base seat (or
	// another module's) to a feature request: never one we asked for.
	if f := resp.GetLease().GetFeature(); f != o.Feature {
		return st, certLost(badCert("seatd granted a seat of feature %q, not %q as asked (a server without features?)", f, o.Feature))
	}
	if borrowed {
		switch {
		case !resp.GetLease().GetBorrowed():
			return st, certLost(badCert("seatd granted a lease that is not borrowed (a server without borrowing?)"))
		case st.cert == "":
			return st, certLost(badCert("none in seatd's answer to a borrow"))
		}
	}
	if !c.verifies() {
		return st, nil
	}
	file, err := c.checkCert(ctx, st.cert, expectation{
		nonce: nonce, leaseID: st.id, licenseID: st.licenseID, holder: st.holder,
		deadline: st.expiresAt, borrowed: borrowed,
	})
	if err != nil {
		return st, certLost(err)
	}
	st.file = file
	return st, nil
}

// giveBack releases a seat we refuse (its answer failed verification), as
// far as the server is real and reachable: a seat held for nothing would
// otherwise count until its deadline.
func (c *Client) giveBack(ctx context.Context, leaseID, leaseToken string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.t.callTimeout)
	defer cancel()
	if err := c.ReleaseSeat(ctx, leaseID, leaseToken); err != nil {
		c.log.Debug("could not give back a refused seat", "lease_id", leaseID, "err", err)
	}
}

// ReleaseSeat gives back a seat known only by its id and token (after the
// product restarted, say; Lease.Release is the way for a Lease in hand).
// Releasing again is fine; a lease that expired or was revoked meanwhile
// is an error (errors.Is(err, ErrLeaseLost), Reason LEASE_EXPIRED or
// LEASE_REVOKED); a live borrowed lease is returned early only if its
// license allows it (else Reason LEASE_BORROWED).
func (c *Client) ReleaseSeat(ctx context.Context, leaseID, leaseToken string) error {
	_, err := c.seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: leaseID, LeaseToken: leaseToken})
	return wrap(err)
}

// hold wraps a granted seat in a Lease and starts keeping it alive (a
// borrowed one needs no keeping).
func (c *Client) hold(o AcquireOptions, st leaseState) *Lease {
	o.Metadata = maps.Clone(o.Metadata) // acquiring again must not race the caller's map
	l := &Lease{c: c, opts: o, lost: make(chan struct{})}
	l.st = st
	if c.opts.AutoHeartbeat && !st.borrowed {
		l.keep = c.startKeeper(l)
	}
	return l
}
