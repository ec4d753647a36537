package locked

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
)

// UsageExport is the true-up export of a period: the usage report's rows
// (one bucket, the whole period, the default tenant) cut to the licenses
// of the file in force, under their ids in the file, signed by the site
// key under the file's serial (licensefile.SignUsage), which the vendor
// checks against that file (licensefile.VerifyUsage).
//
// The rows are every license of the file (its base seats, a row of zeros
// when unused) and, under it, each feature the file grants or the report
// counts, in the file's order then by feature. A license the store holds
// but the file does not (deactivated) is left out: the export speaks of
// the file only. Denials are those for want of a seat
// (SEATS_EXHAUSTED): the site policy's refusals are the site's choice, not
// a limit of the file.
func (c *Controller) UsageExport(rows []server.UsageRow, start, end, now time.Time) (*licensefile.UsageExport, []byte, error) {
	c.mu.Lock()
	f := c.cur
	c.mu.Unlock()
	if f == nil {
		return nil, nil, errors.New("usage export: no license file in force yet")
	}
	if c.cfg.SiteKey.Private == nil {
		return nil, nil, errors.New("usage export: the controller has no site key")
	}
	u := licensefile.UsageExport{
		FileSerial: f.file.Serial, PeriodStart: start, PeriodEnd: end, CreatedAt: now,
		Rows: exportRows(&f.file.File, rows),
	}
	data, err := licensefile.SignUsage(u, c.cfg.SiteKey.Private)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the usage export: %w", err)
	}
	u.SiteKeyID = c.cfg.SiteKey.ID
	u.PeriodStart, u.PeriodEnd, u.CreatedAt = start.UTC().Truncate(time.Second), end.UTC().Truncate(time.Second), now.UTC().Truncate(time.Second)
	return &u, data, nil
}

// exportRows are the usage export's rows of file f from the report's.
func exportRows(f *licensefile.File, report []server.UsageRow) []licensefile.UsageRow {
	type key struct{ license, feature string }
	byKey := make(map[key]server.UsageRow, len(report))
	for _, r := range report {
		byKey[key{r.LicenseID, r.Feature}] = r
	}
	var out []licensefile.UsageRow
	for _, l := range f.Licenses {
		id := licensefile.LicenseID(l.ID)
		features := []string{""}
		for _, g := range l.Grants {
			features = append(features, g.Feature)
		}
		for _, r := range report {
			if r.LicenseID == id {
				features = append(features, r.Feature)
			}
		}
		slices.SortFunc(features, cmp.Compare)
		for _, feature := range slices.Compact(features) {
			r := byKey[key{id, feature}]
			out = append(out, licensefile.UsageRow{
				LicenseID: l.ID, Feature: feature, PeakSeats: r.PeakSeats,
				Denials: r.DenialsByReason()[server.ReasonSeatsExhausted], SeatHours: r.SeatHours,
			})
		}
	}
	return out
}
