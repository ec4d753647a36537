package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestUnknownTenantsCountAsFailedLookups: the JWKS needs no key, so a miss
// on a tenant id counts against the caller's address like an unknown
// license key (issue 24, item 14: ~1,250 tenant ids a second could be
// tried); once the address is over its limit, known tenants are refused
// too, so the answer says nothing more.
func TestUnknownTenantsCountAsFailedLookups(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.FailedLookups = slow(3) })
	for i := range 3 {
		_, err := e.seats.GetSigningKeys(t.Context(), &seatdv1.GetSigningKeysRequest{TenantId: "guess-" + string(rune('a'+i))})
		requireStatus(t, err, codes.NotFound, server.ReasonTenantNotFound)
	}
	for _, tenant := range []string{"guess-d", server.DefaultTenantID} {
		_, err := e.seats.GetSigningKeys(t.Context(), &seatdv1.GetSigningKeysRequest{TenantId: tenant})
		requireStatus(t, err, codes.ResourceExhausted, server.ReasonRateLimited, tenant)
	}
}

// TestFormatCharactersAreRefused: bidi controls and zero-width characters
// (Unicode Cf) would let a name or fingerprint display as another; they are
// refused with the field named, as control characters are. Other non-ASCII
// text stays welcome.
func TestFormatCharactersAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, name := range []string{"evil\u202Egnp.exe", "zero\u200Bwidth", "bom\uFEFF", "lrm\u200E", "isolate\u2066x\u2069", "soft\u00ADhyphen"} {
		_, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
			Name: name, Seats: 1, LeaseTtl: durationpb.New(time.Minute),
		}})
		requireInvalid(t, err, "license.name")
		st, _ := status.FromError(err)
		require.Contains(t, st.Message(), "format characters", "%q", name)
		require.NotContains(t, st.Message(), name, "the bad value is not echoed")
	}
	lic := e.license(t, 1, time.Minute)
	_, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "machine\u200B-a"})
	requireInvalid(t, err, "fingerprint")

	resp, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "Zürich ✓ 東京", Seats: 1, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	require.Equal(t, "Zürich ✓ 東京", resp.GetLicense().GetName())
}
