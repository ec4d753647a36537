package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Lease is a seat held by this process. Its accessors are safe to call while
// the background keeper heartbeats it (and, with ReacquireOnExpiry, swaps in
// a new id and token).
type Lease struct {
	c    *Client
	opts AcquireOptions // to acquire again after an expiry
	keep *keeper        // nil without AutoHeartbeat

	mu       sync.Mutex
	st       leaseState
	released bool  // by our own Release
	err      error // why the lease was lost; set once, with lost closed
	lost     chan struct{}

	releaseMu sync.Mutex // one ReleaseSeat call at a time
}

// leaseState is what the server told us about the lease.
type leaseState struct {
	id, token, licenseID  string
	interval              time.Duration // suggested heartbeat interval
	ttl                   time.Duration // 0 if unknown
	expiresAt             time.Time     // the deadline, by the server's clock
	deadline              time.Time     // the deadline, by our clock (see localDeadline)
	seatsInUse, seatLimit int
	cert                  string // the latest lease certificate, "" if none came
	file                  string // the license file (JWS) cert chained to, with VendorKeys
	holder                holder // this client's license key and identity, which its certificates must name
	borrowed              bool
	feature, version      string    // what the lease was taken for ("" for the base pool)
	grantID               string    // the feature grant of its seat
	grantExpiresAt        time.Time // that grant's expiry, zero if none
}

// stateOf reads a granted seat; sent is when we asked for it.
func stateOf(resp *seatdv1.AcquireSeatResponse, sent time.Time) leaseState {
	pl := resp.GetLease()
	st := leaseState{
		id: pl.GetId(), token: resp.GetLeaseToken(), licenseID: pl.GetLicenseId(),
		interval: resp.GetHeartbeatInterval().AsDuration(), ttl: ttlOf(pl),
		expiresAt:  pl.GetExpiresAt().AsTime(),
		seatsInUse: int(resp.GetSeatsInUse()), seatLimit: int(resp.GetSeatLimit()),
		cert:    resp.GetLeaseCertificate(),
		feature: pl.GetFeature(), version: pl.GetVersion(), grantID: pl.GetGrantId(),
	}
	if t := resp.GetGrant().GetExpiresAt(); t != nil {
		st.grantExpiresAt = t.AsTime()
	}
	st.deadline = st.localDeadline(sent, st.expiresAt)
	return st
}

// ttlOf is the lease's time to live as the server granted it, or 0.
func ttlOf(pl *seatdv1.Lease) time.Duration {
	if pl == nil || pl.GetExpiresAt() == nil {
		return 0
	}
	from := pl.GetLastHeartbeatAt()
	if from == nil {
		from = pl.GetAcquiredAt()
	}
	if from == nil {
		return 0
	}
	return max(pl.GetExpiresAt().AsTime().Sub(from.AsTime()), 0)
}

// localDeadline is sent + TTL: the server heartbeated no earlier than we
// sent, so this errs early and, unlike the server's timestamp, is immune to
// a skew between the two clocks. Without a TTL it trusts the server's.
func (st leaseState) localDeadline(sent, expiresAt time.Time) time.Time {
	if st.ttl > 0 {
		return sent.Add(st.ttl)
	}
	return expiresAt
}

// ID is the lease id. It changes when ReacquireOnExpiry acquires again.
func (l *Lease) ID() string { return l.state().id }

// Token is the secret that heartbeats and releases the lease.
func (l *Lease) Token() string { return l.state().token }

// LicenseID is the license the seat belongs to (also for a seat of one
// of its feature grants).
func (l *Lease) LicenseID() string { return l.state().licenseID }

// Feature is the feature the seat was taken for (AcquireOptions.Feature),
// "" for the license's base seats.
func (l *Lease) Feature() string { return l.state().feature }

// Version is the version it was taken for (AcquireOptions.Version).
func (l *Lease) Version() string { return l.state().version }

// GrantID is the feature grant the seat is of, "" for the base seats.
func (l *Lease) GrantID() string { return l.state().grantID }

// GrantExpiresAt is when that grant expires (its seats end then, at their
// next heartbeat, as a license's expiry ends them); zero when it does not,
// or for the base seats.
func (l *Lease) GrantExpiresAt() time.Time { return l.state().grantExpiresAt }

// HeartbeatInterval is how often the server wants a heartbeat.
func (l *Lease) HeartbeatInterval() time.Duration { return l.state().interval }

// SeatsInUse is the number of live leases on the license (on the grant,
// for a seat of a feature) when this one was granted, this one included.
func (l *Lease) SeatsInUse() int { return l.state().seatsInUse }

// SeatLimit is the license's seat limit (seats + overdraft), or the
// grant's for a seat of a feature.
func (l *Lease) SeatLimit() int { return l.state().seatLimit }

// ExpiresAt is the current deadline, by the server's clock.
func (l *Lease) ExpiresAt() time.Time { return l.state().expiresAt }

// Certificate is the latest lease certificate seatd sent (JWS compact,
// valid until the deadline it was sent with), verified when
// Options.SigningKeys is set; "" from a server that sends none, and without
// SigningKeys (the client then asks for none) but for a borrowed lease.
// For a borrowed lease it is what to store: VerifyOffline checks it later.
func (l *Lease) Certificate() string { return l.state().cert }

// LicenseFile is, with Options.VendorKeys, the license file (its JWS)
// that Certificate was verified through: store it with a borrowed
// lease's certificate, for VerifyChainOffline. "" without VendorKeys.
func (l *Lease) LicenseFile() string { return l.state().file }

// Borrowed reports whether the lease was borrowed (Client.Borrow).
func (l *Lease) Borrowed() bool { return l.state().borrowed }

// Lost is closed once the lease is gone for good: expired, revoked, released
// or taken over elsewhere, or (with ReacquireOnExpiry) not acquired again.
// Err says why. Our own Release does not close it.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is nil until Lost is closed, then why the lease was lost:
// errors.Is(err, ErrLeaseLost) holds and Reason(err) is LEASE_EXPIRED,
// LEASE_REVOKED, LEASE_RELEASED, LEASE_NOT_FOUND or LEASE_TOKEN_INVALID. When
// acquiring again failed, err wraps that failure too (e.g. ErrNoSeat).
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Heartbeat moves the deadline ahead now. After the deadline it fails with
// Reason(err) == "LEASE_EXPIRED" (errors.Is(err, ErrLeaseLost)). With
// AutoHeartbeat there is no need to call it.
func (l *Lease) Heartbeat(ctx context.Context) error {
	err := l.heartbeat(ctx)
	if isLost(err) && l.keep == nil {
		l.markLost(err) // nobody else will find out
	}
	return err
}

// heartbeat is one unary heartbeat that records the new deadline.
func (l *Lease) heartbeat(ctx context.Context) error {
	st := l.state()
	sent := l.c.t.wallNow()
	nonce := l.c.nonce(false)
	resp, err := l.c.heartbeat.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: st.id, LeaseToken: st.token, Nonce: nonce})
	if err != nil {
		return wrap(err)
	}
	expiresAt, cert := resp.GetExpiresAt().AsTime(), resp.GetLeaseCertificate()
	file, err := l.checkCert(ctx, st, nonce, cert, expiresAt)
	if err != nil {
		return err
	}
	l.extend(st.id, sent, expiresAt, resp.GetHeartbeatInterval().AsDuration(), ttlOf(resp.GetLease()), cert, file)
	return nil
}

// checkCert verifies, with Options.SigningKeys or VendorKeys, the
// certificate of an answer that extended lease st to expiresAt, and
// returns the license file it chained to (VendorKeys): a failure is the
// lease's loss.
func (l *Lease) checkCert(ctx context.Context, st leaseState, nonce, cert string, expiresAt time.Time) (string, error) {
	if !l.c.verifies() {
		return "", nil
	}
	file, err := l.c.checkCert(ctx, cert, expectation{
		nonce: nonce, leaseID: st.id, licenseID: st.licenseID, holder: st.holder,
		deadline: expiresAt, borrowed: st.borrowed,
	})
	if err != nil {
		return "", certLost(err)
	}
	return file, nil
}

// Release stops the background heartbeats and gives the seat back. It is
// idempotent and safe to call concurrently. A lease already lost needs no
// release and returns nil.
func (l *Lease) Release(ctx context.Context) error {
	if l.keep != nil {
		if err := l.keep.stop(ctx); err != nil {
			return fmt.Errorf("release seat: %w", err)
		}
	}
	l.releaseMu.Lock()
	defer l.releaseMu.Unlock()
	l.mu.Lock()
	done, st := l.released || l.err != nil, l.st
	l.mu.Unlock()
	if done {
		return nil
	}
	_, err := l.c.seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: st.id, LeaseToken: st.token})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("release seat: %w", ctx.Err()) // as when stopping the keeper timed out
	}
	if err = wrap(err); err != nil && !errors.Is(err, ErrLeaseLost) {
		return fmt.Errorf("release seat: %w", err)
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	return nil
}

func (l *Lease) state() leaseState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// extend records a successful heartbeat of lease id sent at sent. Answers
// for a lease we no longer hold, or older than what we know, change nothing.
func (l *Lease) extend(id string, sent, expiresAt time.Time, interval, ttl time.Duration, cert, file string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id != l.st.id {
		return
	}
	if cert != "" && !expiresAt.Before(l.st.expiresAt) {
		l.st.cert, l.st.file = cert, file
	}
	if ttl > 0 {
		l.st.ttl = ttl
	}
	if interval > 0 {
		l.st.interval = interval
	}
	if expiresAt.After(l.st.expiresAt) {
		l.st.expiresAt = expiresAt
	}
	if d := l.st.localDeadline(sent, expiresAt); d.After(l.st.deadline) {
		l.st.deadline = d
	}
}

// swap takes over a lease acquired again after this one expired.
func (l *Lease) swap(st leaseState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st = st
}

// markLost closes Lost with err, once, unless we released the lease.
func (l *Lease) markLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil || l.released {
		return
	}
	l.err = err
	close(l.lost)
}

// pastDeadline reports whether the wall clock is past our deadline.
func (l *Lease) pastDeadline() bool {
	st := l.state()
	return !st.deadline.IsZero() && !l.c.t.wallNow().Before(st.deadline)
}

// untilDeadline is the time left, by the wall clock.
func (l *Lease) untilDeadline() time.Duration {
	return l.state().deadline.Sub(l.c.t.wallNow())
}

// pingEvery is the wait between heartbeats: the server's suggestion, kept
// sane (positive, and at most half the TTL so that one lost beat is not
// fatal).
func (l *Lease) pingEvery() time.Duration {
	st := l.state()
	d := st.interval
	switch {
	case st.ttl > 0 && d <= 0:
		d = st.ttl / 6 // the server's own default
	case st.ttl > 0 && d > st.ttl/2:
		d = st.ttl / 2
	case d <= 0:
		d = 10 * time.Second
	}
	return max(d, l.c.t.minInterval)
}
