package licensefile

import (
	"crypto/ed25519"
	"fmt"
	"math"
	"time"

	"github.com/seatd/seatd/server"
)

// UsageExport is a site's usage over a period, signed by its site key, for
// the vendor to bill overdraft (true-up) without reaching the site. The
// site key that signs it is the one the license file names, so the vendor
// checks it against the file (VerifyUsage) with the vendor's own key only.
type UsageExport struct {
	SiteKeyID   string     `json:"site_key_id"` // the kid of the key that signed it
	FileSerial  int64      `json:"file_serial"` // the license file in force when it was made
	PeriodStart time.Time  `json:"period_start"`
	PeriodEnd   time.Time  `json:"period_end"`
	CreatedAt   time.Time  `json:"created_at"`
	Rows        []UsageRow `json:"rows"`
}

// UsageRow is one license's (or one feature's) use over the period.
type UsageRow struct {
	LicenseID string  `json:"license_id"`        // License.ID in the file
	Feature   string  `json:"feature,omitempty"` // "": the license's base pool
	PeakSeats int     `json:"peak_seats"`        // the most seats held at one instant
	Denials   int64   `json:"denials"`           // acquisitions refused for want of a seat
	SeatHours float64 `json:"seat_hours"`
}

// MaxUsageRows bounds an export's rows.
const MaxUsageRows = 1_000_000

// SignUsage returns u signed with the site key: SiteKeyID set from it,
// times to the second in UTC.
func SignUsage(u UsageExport, siteKey ed25519.PrivateKey) ([]byte, error) {
	if len(siteKey) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("usage export: %w", ErrKeyType)
	}
	u.SiteKeyID = KeyID(siteKey.Public().(ed25519.PublicKey))
	u.PeriodStart, u.PeriodEnd, u.CreatedAt = second(u.PeriodStart), second(u.PeriodEnd), second(u.CreatedAt)
	if err := u.validate(); err != nil {
		return nil, fmt.Errorf("usage export: %w", err)
	}
	return seal(kindUsageExport, u, siteKey)
}

// VerifyUsage checks a usage export against the license file it was
// made under (verified with Open): signed by the site key the file names
// (ErrWrongSite otherwise), under that file's serial (ErrWrongFile), and
// naming only the file's licenses.
func VerifyUsage(data []byte, file *File) (*UsageExport, error) {
	e, err := unarmour(data, kindUsageExport)
	if err != nil {
		return nil, err
	}
	site, err := file.SiteKey.PublicKey("site_key")
	if err != nil {
		return nil, err
	}
	if e.header.Kid != file.SiteKey.Kid {
		return nil, fmt.Errorf("usage export: %w: signed by key %s, the license file names site key %s", ErrWrongSite, e.header.Kid, file.SiteKey.Kid)
	}
	if err := e.verify([]ed25519.PublicKey{site}); err != nil {
		return nil, err
	}
	if err := e.checkReadable(); err != nil {
		return nil, err
	}
	var u UsageExport
	if err := e.decode(&u); err != nil {
		return nil, err
	}
	if err := u.validate(); err != nil {
		return nil, fmt.Errorf("usage export: %w", err)
	}
	if u.SiteKeyID != file.SiteKey.Kid {
		return nil, fmt.Errorf("usage export: %w: it says site key %s, the license file names %s", ErrWrongSite, u.SiteKeyID, file.SiteKey.Kid)
	}
	if u.FileSerial != file.Serial {
		return nil, fmt.Errorf("usage export: %w: serial %d, not %d (check it against that file)", ErrWrongFile, u.FileSerial, file.Serial)
	}
	licenses := map[string]bool{}
	for _, l := range file.Licenses {
		licenses[l.ID] = true
	}
	for i, r := range u.Rows {
		if !licenses[r.LicenseID] {
			return nil, fmt.Errorf("usage export: %w", invalid(fmt.Sprintf("rows[%d].license_id", i), "%q is no license of file serial %d", r.LicenseID, file.Serial))
		}
	}
	return &u, nil
}

func (u *UsageExport) validate() error {
	switch {
	case u.FileSerial < 1 || u.FileSerial > MaxSerial:
		return invalid("file_serial", "must be between 1 and %d", int64(MaxSerial))
	case u.PeriodStart.IsZero() || u.PeriodEnd.IsZero():
		return invalid("period_start", "the period's start and end are required")
	case !u.PeriodEnd.After(u.PeriodStart):
		return invalid("period_end", "must be after period_start")
	case u.CreatedAt.IsZero():
		return invalid("created_at", "is required")
	case len(u.Rows) > MaxUsageRows:
		return invalid("rows", "must be at most %d", MaxUsageRows)
	}
	for i, r := range u.Rows {
		f := fmt.Sprintf("rows[%d]", i)
		if !idPattern.MatchString(r.LicenseID) {
			return invalid(f+".license_id", "must be a license id of the file (got %q)", r.LicenseID)
		}
		if r.Feature != "" {
			if err := server.CheckFeature(f+".feature", r.Feature); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalid, err)
			}
		}
		switch {
		case r.PeakSeats < 0:
			return invalid(f+".peak_seats", "must not be negative")
		case r.Denials < 0:
			return invalid(f+".denials", "must not be negative")
		case r.SeatHours < 0 || math.IsInf(r.SeatHours, 0) || math.IsNaN(r.SeatHours):
			return invalid(f+".seat_hours", "must be a non-negative number")
		}
	}
	return nil
}
