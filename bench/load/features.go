package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The license the feature phases measure: issue 26's "a feature of a
// license holding 50 grants". By default (-covering 50) it is laid out so
// that an acquisition does the most work the design allows, not the least:
//
//   - all benchGrants grants are of the one feature and all cover the
//     version asked (versions 2001..2050, the request asks 2001), so every
//     acquisition judges all 50 pools in its one atomic step (the
//     idempotency and dedupe hand-back looks in each of them);
//   - their expiries are staggered against their versions (2050 expires
//     first, 2001 last), so the pick order is neither the versions' nor
//     the creation order;
//   - the first benchFullGrants grants in pick order have one seat each,
//     taken before the phases: every acquisition passes over them full
//     before the next grant, with a million seats, grants.
//
// With -covering n < 50 only n grants are of the feature (the same
// layout over n; one of them full per grant beyond the first, up to
// benchFullGrants) and the others of 50-n other features: the license
// still holds 50 grants, the acquisition judges n. The license's own
// base pool (one seat) is not used.
const (
	benchFeature    = "render"
	benchGrants     = 50
	benchFullGrants = 5
	benchVersion    = "2001"
)

// featurePool creates the license with benchGrants grants, covering of
// them of benchFeature, and fills the first grants in pick order; nil
// (and a note) when the server has no feature grants (a seatd from before
// issue 26, as BENCH_SEATD may be).
func (b *bench) featurePool(ctx context.Context, covering int) (*seatPool, error) {
	if covering < 1 || covering > benchGrants {
		return nil, fmt.Errorf("-covering %d: want 1..%d", covering, benchGrants)
	}
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+b.opKey)
	admin := seatdv1.NewAdminServiceClient(b.conns[0])
	resp, err := admin.CreateLicense(actx, &seatdv1.CreateLicenseRequest{
		License: &seatdv1.License{Name: "load test features", Seats: 1, LeaseTtl: durationpb.New(time.Hour)},
	})
	if err != nil {
		return nil, fmt.Errorf("create the feature license: %w", err)
	}
	lic := resp.GetLicense()
	full := min(benchFullGrants, covering-1)
	for i := range benchGrants {
		_, err := admin.CreateFeatureGrant(actx, &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: benchGrant(i, covering, full)})
		if status.Code(err) == codes.Unimplemented {
			fmt.Fprintln(os.Stderr, "load: this seatd has no feature grants; the feature phases are skipped:", err)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("create grant %d: %w", i, err)
		}
	}
	p := newSeatPool("feature", lic.GetKey(), benchFeature, benchVersion)
	seats := seatdv1.NewSeatServiceClient(b.conns[0])
	for i := range full {
		l, err := seats.AcquireSeat(ctx, p.request(fmt.Sprintf("feature-fill-%d-%d", os.Getpid(), i)))
		if err != nil {
			return nil, fmt.Errorf("fill grant %d: %w", i, err)
		}
		if want := strconv.Itoa(2001 + covering - 1 - i); l.GetGrant().GetVersion() != want {
			return nil, fmt.Errorf("fill grant %d: took a seat of version %q, want %s (the pick order: first to expire)", i, l.GetGrant().GetVersion(), want)
		}
	}
	return p, nil
}

// benchGrant is the i-th grant of the feature license: of benchFeature
// for i < covering (the last full of them, the first to expire, with one
// seat), else of another feature.
func benchGrant(i, covering, full int) *seatdv1.FeatureGrant {
	g := &seatdv1.FeatureGrant{Feature: benchFeature, Version: strconv.Itoa(2001 + i), Seats: 1_000_000,
		ExpiresAt: timestamppb.New(time.Now().Add(time.Duration(100-i) * 24 * time.Hour))}
	switch {
	case i >= covering:
		g.Feature = fmt.Sprintf("other-%d", i)
	case i >= covering-full:
		g.Seats = 1
	}
	return g
}
