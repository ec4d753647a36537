package e2e

// A relay that holds one real lease cannot serve its certificates to other
// verifying clients (issue 24, item 1). The relay answers each client's
// AcquireSeat and heartbeats with a Heartbeat of its own lease carrying
// the client's nonce, so the certificate repeats the nonce and is signed by
// seatd; what gives it away is that it names the relay's machine (or the
// relay's license key), and the client compares those claims with its own
// fingerprint and license key, not with what the relay's answer says.

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// relay is a fake seatd in front of a real one. honest: it forwards each
// call as it came; otherwise it serves every client from its one lease.
type relay struct {
	seatdv1.UnimplementedSeatServiceServer
	seatdv1.UnimplementedHeartbeatServiceServer
	seats        seatdv1.SeatServiceClient
	beats        seatdv1.HeartbeatServiceClient
	honest       bool
	leaseID, tok string // the relay's own lease
}

// startRelay serves r on a loopback port and returns its address.
func startRelay(t *testing.T, r *relay) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	seatdv1.RegisterSeatServiceServer(srv, r)
	seatdv1.RegisterHeartbeatServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// beat heartbeats the relay's lease with a client's nonce.
func (r *relay) beat(ctx context.Context, nonce string) (*seatdv1.HeartbeatResponse, error) {
	return r.beats.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: r.leaseID, LeaseToken: r.tok, Nonce: nonce})
}

func (r *relay) AcquireSeat(ctx context.Context, req *seatdv1.AcquireSeatRequest) (*seatdv1.AcquireSeatResponse, error) {
	if r.honest {
		return r.seats.AcquireSeat(ctx, req)
	}
	b, err := r.beat(ctx, req.GetNonce())
	if err != nil {
		return nil, err
	}
	return &seatdv1.AcquireSeatResponse{
		Lease: b.GetLease(), LeaseToken: "relay", HeartbeatInterval: b.GetHeartbeatInterval(),
		SeatsInUse: 1, SeatLimit: 1, LeaseCertificate: b.GetLeaseCertificate(),
	}, nil
}

func (r *relay) ReleaseSeat(ctx context.Context, req *seatdv1.ReleaseSeatRequest) (*seatdv1.ReleaseSeatResponse, error) {
	if r.honest {
		return r.seats.ReleaseSeat(ctx, req)
	}
	return &seatdv1.ReleaseSeatResponse{}, nil // the relay keeps its seat
}

func (r *relay) Heartbeat(ctx context.Context, req *seatdv1.HeartbeatRequest) (*seatdv1.HeartbeatResponse, error) {
	if r.honest {
		return r.beats.Heartbeat(ctx, req)
	}
	return r.beat(ctx, req.GetNonce())
}

func (r *relay) HeartbeatStream(stream seatdv1.HeartbeatService_HeartbeatStreamServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var b *seatdv1.HeartbeatResponse
		if r.honest {
			b, err = r.beats.Heartbeat(stream.Context(), &seatdv1.HeartbeatRequest{LeaseId: req.GetLeaseId(), LeaseToken: req.GetLeaseToken(), Nonce: req.GetNonce()})
		} else {
			b, err = r.beat(stream.Context(), req.GetNonce())
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&seatdv1.HeartbeatStreamResponse{
			ExpiresAt: b.GetExpiresAt(), HeartbeatInterval: b.GetHeartbeatInterval(), LeaseCertificate: b.GetLeaseCertificate(),
		}); err != nil {
			return err
		}
	}
}

func TestRelayCannotShareOneLease(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	ctx := testContext(t)
	op := p.asOperator(ctx)
	newLicense := func() *seatdv1.License {
		r, err := p.admin().CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
			Seats: 1, LeaseTtl: durationpb.New(time.Minute),
		}})
		require.NoError(t, err)
		return r.GetLicense()
	}
	jwks := restJWKS(t, p, "default")
	keys, err := client.ParseSigningKeys(jwks)
	require.NoError(t, err)
	dial := func(addr string) *client.Client {
		o := client.DefaultOptions()
		o.SigningKeys = keys
		c, err := client.DialWithOptions(addr, o)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// holdOne is the relay's one real lease: the license's only seat.
	holdOne := func(lic *seatdv1.License, fingerprint string) *relay {
		acq, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: fingerprint})
		require.NoError(t, err)
		return &relay{
			seats: p.seats(), beats: p.heartbeats(), leaseID: acq.GetLease().GetId(), tok: acq.GetLeaseToken(),
		}
	}

	t.Run("honest relay", func(t *testing.T) {
		// The plumbing works: a relay that forwards each call as it came
		// serves a verified lease.
		lic := newLicense()
		c := dial(startRelay(t, &relay{seats: p.seats(), beats: p.heartbeats(), honest: true}))
		l, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "fp-1"})
		require.NoError(t, err)
		require.NoError(t, l.Heartbeat(ctx))
		require.NoError(t, l.Release(ctx))
	})

	t.Run("one lease for many machines", func(t *testing.T) {
		lic := newLicense()
		r := holdOne(lic, "relay-box")
		c := dial(startRelay(t, r))
		for _, fp := range []string{"fp-1", "fp-2", "fp-3"} {
			l, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: fp})
			if err == nil {
				_ = l.Release(ctx)
			}
			require.ErrorIs(t, err, client.ErrBadCertificate, "%s got the relay's one seat", fp)
			require.Equal(t, client.ReasonBadCertificate, client.Reason(err))
		}
		require.Len(t, activeLeases(t, p, lic.GetId()), 1, "only the relay's own lease")
	})

	t.Run("another license's lease", func(t *testing.T) {
		// The relay holds a seat of a license (say a cheaper one) on the
		// client's own machine, and answers requests for another license.
		cheap, wanted := newLicense(), newLicense()
		r := holdOne(cheap, "fp-1")
		c := dial(startRelay(t, r))
		l, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: wanted.GetKey(), Fingerprint: "fp-1"})
		if err == nil {
			_ = l.Release(ctx)
		}
		require.ErrorIs(t, err, client.ErrBadCertificate, "a seat of another license passed for this one")
	})
}
