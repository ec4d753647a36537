package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// fakeServer is a seatd with knobs: it keeps leases in memory like the real
// one, and tests make it fail, refuse streams, expire or revoke leases, or
// tell its streams to reconnect.
type fakeServer struct {
	seatdv1.UnimplementedSeatServiceServer
	seatdv1.UnimplementedHeartbeatServiceServer

	ttl, interval time.Duration // set before serving

	mu     sync.Mutex
	leases map[string]*fakeLease
	nextID int
	seats  int // 0: unlimited

	unavailable         bool // every heartbeat RPC fails UNAVAILABLE
	streamUnimplemented bool
	streamUnavailable   bool     // streams fail UNAVAILABLE, unary works
	streamSilent        bool     // streams read pings and never answer (a dead path)
	signalOnly          bool     // end streams after an EXPIRED/REVOKED signal with OK, no status
	acquireUnavailable  int      // fail this many AcquireSeat calls UNAVAILABLE
	acquireRateLimited  int      // refuse this many AcquireSeat calls RATE_LIMITED (retry in 30 ms)
	acquireRefusals     []error  // refuse the next AcquireSeat calls with these, in order (a site policy's)
	lostReplies         int      // grant this many AcquireSeat calls, then answer UNAVAILABLE
	idemKeys            []string // the idempotency_key of each AcquireSeat, in order
	waitUnimplemented   bool
	positions           []int32       // WaitForSeat sends these, then waits for a free seat
	waitTickets         []string      // the queue_ticket of each WaitForSeat, in order
	shutdown            chan struct{} // closed by reconnectStreams

	signer   *testSigner         // signs lease certificates, as seatd: for a request with a nonce, or a borrow; nil: none sent
	locked   *lockedFake         // locked mode: the license file GetSignedLicenseFile answers and its claims in every certificate; nil: none
	forge    forgery             // how to spoil them
	noBorrow bool                // ignore borrow_duration, as a server without borrowing
	features bool                // answer a lease of the feature and version asked; false: ignore them, as a server without features
	nonces   map[string][]string // the nonce of each request, by RPC ("acquire", "heartbeat", "stream", "wait"), in order

	acquires, releases, streams int
	unaryBeats, streamBeats     map[string]int // by lease id
	refusedBeats                int            // heartbeats failed while unavailable
	waitTries                   int            // seats WaitForSeat tried for and found none
}

type fakeLease struct {
	id, token string
	idem      string // the idempotency key it was granted for
	expiresAt time.Time
	ended     string // "" while live, else the reason heartbeats fail with
	fp        string
	borrowed  bool
	feature   string // the feature and version asked (features on)
	version   string
}

func newFakeServer() *fakeServer {
	return &fakeServer{
		ttl: 5 * time.Second, interval: 20 * time.Millisecond,
		leases: map[string]*fakeLease{}, shutdown: make(chan struct{}),
		unaryBeats: map[string]int{}, streamBeats: map[string]int{}, nonces: map[string][]string{},
	}
}

// noted records the nonce of a request to rpc and returns it.
func (f *fakeServer) noted(rpc, nonce string) string {
	f.set(func(f *fakeServer) { f.nonces[rpc] = append(f.nonces[rpc], nonce) })
	return nonce
}

func (f *fakeServer) seenNonces() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string][]string{}
	for rpc, n := range f.nonces {
		seen[rpc] = slices.Clone(n)
	}
	return seen
}

// reasonErr is a status shaped like seatd's: a code and an ErrorInfo reason.
func reasonErr(code codes.Code, reason string) error {
	st, err := status.New(code, strings.ToLower(reason)).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "seatd"})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func (f *fakeServer) set(change func(f *fakeServer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

func (f *fakeServer) read(get func(f *fakeServer) int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return get(f)
}

func (f *fakeServer) seenIdemKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.idemKeys)
}

func (f *fakeServer) seenTickets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.waitTickets...)
}

func (f *fakeServer) beats(id string) int {
	return f.read(func(f *fakeServer) int { return f.unaryBeats[id] + f.streamBeats[id] })
}

// end makes lease id fail its next heartbeat with reason.
func (f *fakeServer) end(id, reason string) {
	f.set(func(f *fakeServer) { f.leases[id].ended = reason })
}

// reconnectStreams tells every open stream that the server is going away.
func (f *fakeServer) reconnectStreams() {
	f.set(func(f *fakeServer) {
		close(f.shutdown)
		f.shutdown = make(chan struct{})
	})
}

func (f *fakeServer) live() int {
	n := 0
	for _, l := range f.leases {
		if l.ended == "" {
			n++
		}
	}
	return n
}

func (f *fakeServer) grant(req *seatdv1.AcquireSeatRequest, nonce string) (*seatdv1.AcquireSeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acquires++
	f.idemKeys = append(f.idemKeys, req.GetIdempotencyKey())
	if f.acquireUnavailable > 0 {
		f.acquireUnavailable--
		return nil, reasonErr(codes.Unavailable, "BACKEND_UNAVAILABLE")
	}
	if len(f.acquireRefusals) > 0 {
		err := f.acquireRefusals[0]
		f.acquireRefusals = f.acquireRefusals[1:]
		return nil, err
	}
	if f.acquireRateLimited > 0 {
		f.acquireRateLimited--
		st, err := status.New(codes.ResourceExhausted, "too many failed lookups from this address").WithDetails(
			&errdetails.ErrorInfo{Reason: "RATE_LIMITED", Domain: "seatd"},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(30 * time.Millisecond)})
		if err != nil {
			panic(err)
		}
		return nil, st.Err()
	}
	now := time.Now()
	var l *fakeLease
	for _, x := range f.leases { // as seatd: the same key hands the lease back
		if x.ended == "" && req.GetIdempotencyKey() != "" && x.idem == req.GetIdempotencyKey() {
			l = x
		}
	}
	if l == nil {
		if f.seats > 0 && f.live() >= f.seats {
			return nil, reasonErr(codes.ResourceExhausted, ReasonSeatsExhausted)
		}
		f.nextID++
		l = &fakeLease{id: fmt.Sprintf("lease-%d", f.nextID), token: fmt.Sprintf("token-%d", f.nextID),
			expiresAt: now.Add(f.ttl), idem: req.GetIdempotencyKey(), fp: req.GetFingerprint()}
		if d := req.GetBorrowDuration().AsDuration(); d > 0 && !f.noBorrow {
			l.expiresAt, l.borrowed = now.Add(d), true
		}
		if f.features {
			l.feature, l.version = req.GetFeature(), req.GetVersion()
		}
		f.leases[l.id] = l
	}
	if f.lostReplies > 0 {
		f.lostReplies--
		return nil, reasonErr(codes.Unavailable, "BACKEND_UNAVAILABLE")
	}
	return &seatdv1.AcquireSeatResponse{
		Lease: &seatdv1.Lease{
			Id: l.id, LicenseId: f.licenseID(), Fingerprint: f.answeredFingerprint(req.GetFingerprint()), Borrowed: l.borrowed,
			Feature: l.feature, Version: l.version,
			AcquiredAt: timestamppb.New(now), LastHeartbeatAt: timestamppb.New(now), ExpiresAt: timestamppb.New(l.expiresAt),
		},
		LeaseToken: l.token, HeartbeatInterval: durationpb.New(f.interval),
		SeatsInUse: int32(f.live()), SeatLimit: int32(f.seats),
		LeaseCertificate: f.certify(l, nonce),
	}, nil
}

// answeredFingerprint is the lease's fingerprint in an answer: the one
// asked for, or, when the fake plays a relay (forgeRelayed), the relay's,
// as its answers say to make the certificate look right (call with f.mu
// held).
func (f *fakeServer) answeredFingerprint(asked string) string {
	if f.forge == forgeRelayed {
		return relayFingerprint
	}
	return asked
}

// licenseID is the id of the fake's license (call with f.mu held).
func (f *fakeServer) licenseID() string {
	if f.locked != nil {
		return "lic_" + f.locked.license
	}
	return "lic-1"
}

// certify is l's certificate for a request with nonce, as the fake's
// signer and forgery say (call with f.mu held). Like seatd it signs only
// when asked: a request with a nonce, or a borrow.
func (f *fakeServer) certify(l *fakeLease, nonce string) string {
	if f.signer == nil || (nonce == "" && !l.borrowed) {
		return ""
	}
	claims := certClaims(l.id, l.fp, l.expiresAt, l.borrowed, nonce)
	if f.locked != nil {
		f.locked.name(claims)
	}
	return f.signer.certificate(f.forge, claims)
}

func (f *fakeServer) AcquireSeat(_ context.Context, req *seatdv1.AcquireSeatRequest) (*seatdv1.AcquireSeatResponse, error) {
	return f.grant(req, f.noted("acquire", req.GetNonce()))
}

func (f *fakeServer) ReleaseSeat(_ context.Context, req *seatdv1.ReleaseSeatRequest) (*seatdv1.ReleaseSeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.releases++
	l, ok := f.leases[req.GetLeaseId()]
	switch {
	case !ok:
		return nil, reasonErr(codes.NotFound, ReasonLeaseNotFound)
	case l.token != req.GetLeaseToken():
		return nil, reasonErr(codes.PermissionDenied, ReasonLeaseTokenInvalid)
	case l.ended == "" || l.ended == ReasonLeaseReleased:
		l.ended = ReasonLeaseReleased
		return &seatdv1.ReleaseSeatResponse{}, nil
	default:
		return nil, reasonErr(codes.FailedPrecondition, l.ended)
	}
}

// heartbeat is the store's heartbeat: one TTL more, or why not; and the
// certificate for the request's nonce.
func (f *fakeServer) heartbeat(id, token, nonce string, counts map[string]int) (time.Time, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unavailable {
		f.refusedBeats++
		return time.Time{}, "", reasonErr(codes.Unavailable, "BACKEND_UNAVAILABLE")
	}
	l, ok := f.leases[id]
	switch {
	case !ok:
		return time.Time{}, "", reasonErr(codes.NotFound, ReasonLeaseNotFound)
	case l.token != token:
		return time.Time{}, "", reasonErr(codes.PermissionDenied, ReasonLeaseTokenInvalid)
	case l.ended != "":
		return time.Time{}, "", reasonErr(codes.FailedPrecondition, l.ended)
	case l.borrowed:
		return time.Time{}, "", reasonErr(codes.FailedPrecondition, "LEASE_BORROWED")
	}
	l.expiresAt = time.Now().Add(f.ttl)
	counts[id]++
	return l.expiresAt, f.certify(l, nonce), nil
}

func (f *fakeServer) Heartbeat(_ context.Context, req *seatdv1.HeartbeatRequest) (*seatdv1.HeartbeatResponse, error) {
	at, cert, err := f.heartbeat(req.GetLeaseId(), req.GetLeaseToken(), f.noted("heartbeat", req.GetNonce()), f.unaryBeats)
	if err != nil {
		return nil, err
	}
	return &seatdv1.HeartbeatResponse{
		ExpiresAt: timestamppb.New(at), HeartbeatInterval: durationpb.New(f.interval),
		Lease:            &seatdv1.Lease{Id: req.GetLeaseId(), ExpiresAt: timestamppb.New(at), LastHeartbeatAt: timestamppb.New(at.Add(-f.ttl))},
		LeaseCertificate: cert,
	}, nil
}

// HeartbeatStream behaves like the real handler (server/grpcapi).
func (f *fakeServer) HeartbeatStream(stream seatdv1.HeartbeatService_HeartbeatStreamServer) error {
	f.mu.Lock()
	f.streams++
	unimplemented, unavailable, shutdown, signalOnly := f.streamUnimplemented, f.streamUnavailable, f.shutdown, f.signalOnly
	silent := f.streamSilent
	f.mu.Unlock()
	if silent {
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	if unimplemented {
		return status.Error(codes.Unimplemented, "unknown method HeartbeatStream")
	}
	if unavailable {
		return reasonErr(codes.Unavailable, "BACKEND_UNAVAILABLE")
	}
	ctx := stream.Context()
	pings := make(chan *seatdv1.HeartbeatStreamRequest)
	recvErr := make(chan error, 1)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case pings <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	var id, token string
	for {
		var req *seatdv1.HeartbeatStreamRequest
		select {
		case <-shutdown:
			return stream.Send(&seatdv1.HeartbeatStreamResponse{Signal: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT})
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case req = <-pings:
		}
		if id == "" {
			id, token = req.GetLeaseId(), req.GetLeaseToken()
		}
		at, cert, err := f.heartbeat(id, token, f.noted("stream", req.GetNonce()), f.streamBeats)
		if err != nil {
			if signal, ok := fakeSignals[Reason(wrap(err))]; ok {
				_ = stream.Send(&seatdv1.HeartbeatStreamResponse{Signal: signal})
				if signalOnly {
					return nil
				}
			}
			return err
		}
		if err := stream.Send(&seatdv1.HeartbeatStreamResponse{
			ExpiresAt: timestamppb.New(at), HeartbeatInterval: durationpb.New(f.interval), LeaseCertificate: cert,
		}); err != nil {
			return err
		}
	}
}

var fakeSignals = map[string]seatdv1.HeartbeatSignal{
	ReasonLeaseExpired: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_EXPIRED,
	ReasonLeaseRevoked: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED,
}

// WaitForSeat sends the scripted positions, then grants a seat as soon as
// one is free.
func (f *fakeServer) WaitForSeat(req *seatdv1.WaitForSeatRequest, stream seatdv1.SeatService_WaitForSeatServer) error {
	f.noted("wait", req.GetNonce())
	f.mu.Lock()
	unimplemented, positions := f.waitUnimplemented, f.positions
	f.waitTickets = append(f.waitTickets, req.GetQueueTicket())
	ticket := req.GetQueueTicket()
	if ticket == "" {
		ticket = fmt.Sprintf("w_%d", len(f.waitTickets))
	}
	f.mu.Unlock()
	if unimplemented {
		return status.Error(codes.Unimplemented, "unknown method WaitForSeat")
	}
	for _, p := range positions {
		if err := stream.Send(&seatdv1.WaitForSeatResponse{Event: &seatdv1.WaitForSeatResponse_Position{
			Position: &seatdv1.QueuePosition{Position: p, QueueLength: positions[0], Ticket: ticket},
		}}); err != nil {
			return err
		}
	}
	for {
		resp, err := f.grant(&seatdv1.AcquireSeatRequest{LicenseKey: req.GetLicenseKey(), Fingerprint: req.GetFingerprint()}, req.GetNonce())
		if err == nil {
			return stream.Send(&seatdv1.WaitForSeatResponse{Event: &seatdv1.WaitForSeatResponse_Granted{Granted: resp}})
		}
		if !errors.Is(wrap(err), ErrNoSeat) {
			return err
		}
		f.set(func(f *fakeServer) { f.waitTries++ })
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
