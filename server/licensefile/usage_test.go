package licensefile

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

func sampleUsage() UsageExport {
	return UsageExport{
		FileSerial: 7, PeriodStart: issued, PeriodEnd: issued.AddDate(0, 1, 0), CreatedAt: issued.AddDate(0, 1, 0),
		Rows: []UsageRow{
			{LicenseID: "cad", PeakSeats: 22, Denials: 3, SeatHours: 1234.5},
			{LicenseID: "cad", Feature: "render", PeakSeats: 6, SeatHours: 88.25},
		},
	}
}

func TestUsageExportRoundTrip(t *testing.T) {
	file, err := Open(signSample(t, nil), []ed25519.PublicKey{vendorPub})
	require.NoError(t, err)
	data, err := SignUsage(sampleUsage(), sitePriv)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "-----BEGIN SEATD USAGE EXPORT-----\n"))

	u, err := VerifyUsage(data, &file.File)
	require.NoError(t, err)
	want := sampleUsage()
	want.SiteKeyID = KeyID(sitePub)
	require.Equal(t, want, *u)
}

func TestVerifyUsageRefuses(t *testing.T) {
	file, err := Open(signSample(t, nil), []ed25519.PublicKey{vendorPub})
	require.NoError(t, err)
	good, err := SignUsage(sampleUsage(), sitePriv)
	require.NoError(t, err)
	label, readable, _ := parts(t, good)
	payload := compactJSON(t, readable)
	bySite2, err := SignUsage(sampleUsage(), site2Priv)
	require.NoError(t, err)
	later := sampleUsage()
	later.FileSerial = 8
	underSerial8, err := SignUsage(later, sitePriv)
	require.NoError(t, err)
	unknown := sampleUsage()
	unknown.Rows[0].LicenseID = "cam"
	unknownLicense, err := SignUsage(unknown, sitePriv)
	require.NoError(t, err)

	cases := []struct {
		name  string
		data  []byte
		want  error
		words []string
	}{
		{"truncated", good[:len(good)/2], ErrMalformed, nil},
		{"a license file", signSample(t, nil), ErrWrongDocument, nil},
		{"peak edited", []byte(strings.Replace(string(good), `"peak_seats": 22`, `"peak_seats": 12`, 1)), ErrTampered, []string{"rows[0].peak_seats"}},
		{"signed by another site", bySite2, ErrWrongSite, []string{KeyID(site2Pub)}},
		{"another site's signature claiming this site's kid",
			armour(label, readable, rawToken(t, jose.EdDSA, site2Priv, KeyID(sitePub), kindUsageExport.typ, []byte(payload))),
			ErrBadSignature, nil},
		{"payload naming another site key", rawDocument(t, kindUsageExport, sitePriv, strings.Replace(payload, KeyID(sitePub), KeyID(site2Pub), 1)),
			ErrWrongSite, nil},
		{"made under another file", underSerial8, ErrWrongFile, []string{"serial 8"}},
		{"a license not in the file", unknownLicense, ErrInvalid, []string{"rows[0].license_id", "cam"}},
		{"an extra field", rawDocument(t, kindUsageExport, sitePriv, strings.Replace(payload, `"denials":3`, `"denials":3,"credit":5`, 1)),
			ErrUnknownField, []string{"credit"}},
		{"a negative peak", rawDocument(t, kindUsageExport, sitePriv, strings.Replace(payload, `"peak_seats":22`, `"peak_seats":-1`, 1)),
			ErrInvalid, []string{"rows[0].peak_seats"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := VerifyUsage(c.data, &file.File)
			requireRefused(t, err, c.want, c.words...)
			require.Nil(t, u)
		})
	}

	bad := sampleUsage()
	bad.PeriodEnd = bad.PeriodStart
	_, err = SignUsage(bad, sitePriv)
	requireRefused(t, err, ErrInvalid, "period_end")
	bad = sampleUsage()
	bad.Rows[1].Feature = "render!"
	_, err = SignUsage(bad, sitePriv)
	requireRefused(t, err, ErrInvalid, "rows[1].feature")
}
