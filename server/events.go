package server

import "time"

// EventRange selects a tenant's records by their time, in [Start, End) (a
// zero Start or End leaves that side open), and only one license's when
// LicenseID is set. The records are listed by that time, then by id.
type EventRange struct {
	TenantID  string
	LicenseID string // "" for every license of the tenant (not used by audit lists); a license's records include its grants'
	Feature   string // "": every record; else only those of that feature's grants
	Start     time.Time
	End       time.Time
}

// Contains reports whether t lies in [Start, End).
func (r EventRange) Contains(t time.Time) bool {
	return (r.Start.IsZero() || !t.Before(r.Start)) && (r.End.IsZero() || t.Before(r.End))
}
