package locked

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
)

// TestUsageExport: the report's rows become the export's under the file's
// ids: every license of the file (zeros when unused), each feature it
// grants or the report counts, nothing of a license the file does not
// hold, denials for want of a seat only; the export is signed by the site
// key under the serial in force and verifies against that file, and
// against no other.
func TestUsageExport(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	now := during
	f := x.file(7, 2)
	x.write(t, x.signed(t, f))
	c := x.controller(&now)
	require.NoError(t, c.Start(t.Context()))

	start, end := during.Add(-30*24*time.Hour), during
	report := []server.UsageRow{
		{LicenseID: "lic_cad", PeakSeats: 3, SeatHours: 41.5, Denials: 4, PolicyDenials: map[string]int64{"USER_LIMIT": 1}},
		{LicenseID: "lic_cad", Feature: "old-feature", PeakSeats: 1, SeatHours: 0.25},
		{LicenseID: "lic_cad", Feature: "render", PeakSeats: 2, SeatHours: 10},
		{LicenseID: "lic_made_by_hand", PeakSeats: 9, SeatHours: 99, Denials: 9},
	}
	u, data, err := c.UsageExport(report, start, end, during.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, int64(7), u.FileSerial)
	require.Equal(t, x.site.ID, u.SiteKeyID)
	require.Equal(t, []licensefile.UsageRow{
		{LicenseID: "cad", PeakSeats: 3, Denials: 3, SeatHours: 41.5},
		{LicenseID: "cad", Feature: "old-feature", PeakSeats: 1, SeatHours: 0.25},
		{LicenseID: "cad", Feature: "render", PeakSeats: 2, SeatHours: 10},
		{LicenseID: "cad", Feature: "sim"},
		{LicenseID: "viewer"},
	}, u.Rows)

	got, err := licensefile.VerifyUsage(data, f)
	require.NoError(t, err)
	require.Equal(t, u.Rows, got.Rows)
	require.Equal(t, start.UTC().Truncate(time.Second), got.PeriodStart)
	require.Equal(t, end.UTC().Truncate(time.Second), got.PeriodEnd)

	// Edited by hand after signing: tampered.
	edited := bytes.Replace(data, []byte(`"peak_seats": 3,`), []byte(`"peak_seats": 2,`), 1)
	require.NotEqual(t, data, edited)
	_, err = licensefile.VerifyUsage(edited, f)
	require.ErrorIs(t, err, licensefile.ErrTampered)

	// Checked against another site's file: not that site's export.
	other, _, err := licensefile.GenerateKey()
	require.NoError(t, err)
	_, err = licensefile.VerifyUsage(data, x.file(7, 2, func(f *licensefile.File) { f.SiteKey = licensefile.NewJWK(other) }))
	require.ErrorIs(t, err, licensefile.ErrWrongSite)

	// Against the site's next file: made under another one.
	_, err = licensefile.VerifyUsage(data, x.file(8, 2))
	require.ErrorIs(t, err, licensefile.ErrWrongFile)
}

// TestUsageExportNeedsTheSiteKey: a controller without the site key signs
// nothing.
func TestUsageExportNeedsTheSiteKey(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	now := during
	x.write(t, x.signed(t, x.file(7, 2)))
	c := x.controller(&now)
	_, _, err := c.UsageExport(nil, during.Add(-time.Hour), during, during)
	require.ErrorContains(t, err, "no license file in force")
	require.NoError(t, c.Start(t.Context()))
	c.cfg.SiteKey = SiteKey{}
	_, _, err = c.UsageExport(nil, during.Add(-time.Hour), during, during)
	require.ErrorContains(t, err, "no site key")
}
