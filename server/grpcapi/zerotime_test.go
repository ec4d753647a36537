package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// A timestamp of 0001-01-01T00:00:00Z (the zero time a generated REST
// client sends for a field it never set) is unset, at any depth of any
// request: a license without an expiry, a grant without a start (issue 32).
// Any other past time is still refused.
func TestZeroTimestampIsUnset(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	zero := timestamppb.New(time.Time{})
	require.Equal(t, int64(zeroTimeSeconds), zero.GetSeconds())

	created, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "zero", Seats: 2, LeaseTtl: durationpb.New(time.Minute), ExpiresAt: zero,
	}})
	require.NoError(t, err)
	require.Nil(t, created.GetLicense().GetExpiresAt(), "no expiry")

	grant, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{
		LicenseId: created.GetLicense().GetId(),
		Grant:     &seatdv1.FeatureGrant{Feature: "solver", Seats: 1, StartsAt: zero, ExpiresAt: zero},
	})
	require.NoError(t, err)
	require.Nil(t, grant.GetGrant().GetStartsAt())
	require.Nil(t, grant.GetGrant().GetExpiresAt())

	_, err = e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "past", Seats: 2, LeaseTtl: durationpb.New(time.Minute), ExpiresAt: timestamppb.New(time.Time{}.Add(time.Second)),
	}})
	requireInvalid(t, err, "license.expires_at")
}
