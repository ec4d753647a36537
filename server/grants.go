package server

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Grant sells Seats (+ Overdraft) of one feature of a license, up to one
// version, for a while: a FlexNet FEATURE/INCREMENT line. Each grant is a
// pool of its own (invariant 12): its seats are never shared with the
// license's base seats (License.Seats) or another grant's.
//
// A store keeps a grant's leases exactly as a license's, under the
// grant's ID: Grant.Pool is the License value its counting uses, and a
// lease of the grant has Lease.LicenseID == Grant.ID (PoolLicense maps it
// back to the license).
type Grant struct {
	ID        string `json:"id"` // GrantID: the license's id, '.', 8 hex digits
	LicenseID string `json:"license_id"`
	TenantID  string `json:"tenant_id"`
	Feature   string `json:"feature"`
	// Version is the highest version covered (CompareVersions); "" covers
	// every version.
	Version           string        `json:"version,omitempty"`
	Seats             int           `json:"seats"`
	Overdraft         int           `json:"overdraft,omitempty"`
	StartsAt          time.Time     `json:"starts_at,omitzero"`  // zero: from its creation
	ExpiresAt         time.Time     `json:"expires_at,omitzero"` // zero: never (the license's expiry still applies)
	MaxBorrowDuration time.Duration `json:"max_borrow_duration,omitempty"`
	MaxBorrowedSeats  int           `json:"max_borrowed_seats,omitempty"`
	CreatedAt         time.Time     `json:"created_at"`
	UpdatedAt         time.Time     `json:"updated_at"`
}

// Limits of a grant's fields.
const (
	MaxFeatureLength = 64
	MaxVersionLength = 64
	// MaxGrantsPerLicense bounds the grants of one license: an acquisition
	// of a feature judges every grant of it in one atomic step.
	MaxGrantsPerLicense = 200
)

// NewGrantID returns a new grant id for a license: the license's id, a
// dot, 8 hex digits. The license id in it lets a store find the license
// of a pool from the pool's id alone (PoolLicense): in distributed mode a
// grant's live keys share its license's Redis Cluster slot.
func NewGrantID(licenseID string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return licenseID + "." + hex.EncodeToString(b)
}

// PoolLicense returns the license id of a pool id: a license's own id, or
// a grant's (the part before its dot).
func PoolLicense(poolID string) string {
	if i := strings.IndexByte(poolID, '.'); i >= 0 {
		return poolID[:i]
	}
	return poolID
}

// IsGrantID reports whether a pool id names a grant, not a license.
func IsGrantID(poolID string) bool { return strings.IndexByte(poolID, '.') >= 0 }

// SeatLimit is the most live leases the grant allows.
func (g *Grant) SeatLimit() int { return g.Seats + g.Overdraft }

// Pool is the License a store counts the grant's leases under: the
// grant's seats, overdraft, borrowing and dates, the license's TTL,
// revival window, leasing strategy, active flag and early return, and
// the earlier of the two expiries. Its ID is the grant's and its Key is
// empty: no client opens a grant by key.
func (g *Grant) Pool(l *License) License {
	p := License{
		ID: g.ID, TenantID: l.TenantID, Name: l.Name, Seats: g.Seats, Overdraft: g.Overdraft,
		LeaseTTL: l.LeaseTTL, RevivalWindow: l.RevivalWindow, LeasingStrategy: l.LeasingStrategy,
		Active: l.Active, ExpiresAt: l.ExpiresAt, StartsAt: g.StartsAt,
		MaxBorrowDuration: g.MaxBorrowDuration, MaxBorrowedSeats: g.MaxBorrowedSeats,
		AllowEarlyReturn: l.AllowEarlyReturn, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt,
		Feature: g.Feature, GrantVersion: g.Version,
	}
	if !g.ExpiresAt.IsZero() && (p.ExpiresAt.IsZero() || g.ExpiresAt.Before(p.ExpiresAt)) {
		p.ExpiresAt = g.ExpiresAt
	}
	return p
}

// Grant returns the grant of the license with that id, or nil.
func (l *License) Grant(id string) *Grant {
	for i := range l.Grants {
		if l.Grants[i].ID == id {
			return &l.Grants[i]
		}
	}
	return nil
}

// SortGrants puts grants in the order License.Grants lists them: by
// feature, then in pick order (GrantsFor).
func SortGrants(gs []Grant) {
	slices.SortFunc(gs, func(a, b Grant) int {
		return cmp.Or(strings.Compare(a.Feature, b.Feature), pickOrder(&a, &b))
	})
}

// pickOrder orders the grants of one feature the way an acquisition takes
// their seats: the grant that expires first (never: last), then the lowest
// version (every version: last), so that the seats about to lapse are
// used first and newer grants stay free for newer requests; then by id.
func pickOrder(a, b *Grant) int {
	if c := cmpExpiry(a.ExpiresAt, b.ExpiresAt); c != 0 {
		return c
	}
	switch {
	case a.Version == "" && b.Version != "":
		return 1
	case a.Version != "" && b.Version == "":
		return -1
	}
	return cmp.Or(CompareVersions(a.Version, b.Version), strings.Compare(a.ID, b.ID))
}

func cmpExpiry(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	case a.Before(b):
		return -1
	}
	return 1
}

// GrantsFor returns the grants of the license that may grant a seat of
// feature at version (version "": any), in the order an acquisition takes
// their seats (pickOrder): the store then takes the first of them that is
// current (Pool(l).CheckUsable at its own clock) and has a free seat, in
// one atomic step with the count (invariant 12). ErrFeatureNotLicensed
// when the license holds no grant of the feature, VersionNotLicensed when
// none covers the version. Whether a grant is current is left to the
// store: it judges that at its own clock.
func (l *License) GrantsFor(feature, version string) ([]Grant, error) {
	var of, covering []Grant
	for _, g := range l.Grants {
		if g.Feature != feature {
			continue
		}
		of = append(of, g)
		if version == "" || g.Version == "" || CompareVersions(version, g.Version) <= 0 {
			covering = append(covering, g)
		}
	}
	if len(of) == 0 {
		return nil, FeatureNotLicensed(feature)
	}
	if len(covering) == 0 {
		return nil, VersionNotLicensed(feature, version, of)
	}
	slices.SortFunc(covering, func(a, b Grant) int { return pickOrder(&a, &b) })
	return covering, nil
}

// CompareVersions compares two dotted versions component by component as
// numbers (2024.2 < 2024.10; a missing component is 0, so 3 == 3.0): -1,
// 0 or 1. Both must be valid (CheckVersion); an invalid one compares as
// its valid prefix.
func CompareVersions(a, b string) int {
	for a != "" || b != "" {
		var x, y string
		x, a, _ = strings.Cut(a, ".")
		y, b, _ = strings.Cut(b, ".")
		if c := cmpNumber(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// cmpNumber compares two strings of decimal digits as numbers, of any
// length ("" is 0).
func cmpNumber(x, y string) int {
	x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
	if c := cmp.Compare(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}

// CheckVersion refuses a version that is not dotted decimal numbers
// (e.g. "2024", "2024.2", "3.1.4"), naming field.
func CheckVersion(field, v string) error {
	if len(v) > MaxVersionLength {
		return Invalid(field, "must be at most %d characters", MaxVersionLength)
	}
	for _, part := range strings.Split(v, ".") {
		if part == "" {
			return Invalid(field, "must be dotted numbers such as 2024 or 2024.2 (got %q)", v)
		}
		for _, c := range part {
			if c < '0' || c > '9' {
				return Invalid(field, "must be dotted numbers such as 2024 or 2024.2 (got %q)", v)
			}
		}
	}
	return nil
}

// CheckFeature refuses a feature name that is empty, longer than
// MaxFeatureLength, or holds other than letters, digits, '.', '-' and
// '_' (starting with a letter or digit), naming field.
func CheckFeature(field, f string) error {
	if f == "" {
		return Invalid(field, "must not be empty")
	}
	if len(f) > MaxFeatureLength {
		return Invalid(field, "must be at most %d characters", MaxFeatureLength)
	}
	for i, c := range f {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '.' || c == '-' || c == '_'
		}
		if !ok {
			return Invalid(field, "must be letters, digits, '.', '-' or '_', starting with a letter or digit (got %q)", f)
		}
	}
	return nil
}

// Validate checks a grant's own fields, naming the first bad one as
// field+"."+name ("grant.seats").
func (g *Grant) Validate(field string) error {
	if err := CheckFeature(field+".feature", g.Feature); err != nil {
		return err
	}
	if g.Version != "" {
		if err := CheckVersion(field+".version", g.Version); err != nil {
			return err
		}
	}
	switch {
	case g.Seats < 0:
		return Invalid(field+".seats", "must not be negative")
	case g.Seats > MaxSeats:
		return Invalid(field+".seats", "must be at most %d", MaxSeats)
	case g.Overdraft < 0:
		return Invalid(field+".overdraft", "must not be negative")
	case g.Overdraft > MaxSeats:
		return Invalid(field+".overdraft", "must be at most %d", MaxSeats)
	case g.MaxBorrowDuration < 0:
		return Invalid(field+".max_borrow_duration", "must not be negative")
	case g.MaxBorrowDuration > MaxBorrowDuration:
		return Invalid(field+".max_borrow_duration", "must be at most %s", MaxBorrowDuration)
	case g.MaxBorrowedSeats < 0:
		return Invalid(field+".max_borrowed_seats", "must not be negative")
	case !g.StartsAt.IsZero() && !g.ExpiresAt.IsZero() && !g.ExpiresAt.After(g.StartsAt):
		return Invalid(field+".expires_at", "must be after starts_at")
	}
	return nil
}

// FeatureNotLicensed refuses a request for a feature the license holds no
// grant of.
func FeatureNotLicensed(feature string) *Error {
	return &Error{
		Code: EPRECONDITION, Reason: ReasonFeatureNotLicensed,
		Message:  fmt.Sprintf("the license holds no grant of feature %q", feature),
		Metadata: map[string]string{"feature": feature},
	}
}

// VersionNotLicensed refuses a request for a version of a feature that no
// grant of it covers; the metadata names the highest version licensed.
func VersionNotLicensed(feature, version string, of []Grant) *Error {
	highest := ""
	for _, g := range of {
		if highest == "" || CompareVersions(g.Version, highest) > 0 {
			highest = g.Version
		}
	}
	return &Error{
		Code: EPRECONDITION, Reason: ReasonVersionNotLicensed,
		Message:  fmt.Sprintf("no grant of feature %q covers version %s (the highest licensed is %s)", feature, version, highest),
		Metadata: map[string]string{"feature": feature, "version": version, "highest_version": highest},
	}
}

// GrantNotStarted refuses a request for a feature whose covering grants
// have all yet to start (or have expired); the metadata names the
// earliest start to come.
func GrantNotStarted(feature string, startsAt time.Time) *Error {
	at := startsAt.UTC().Format(time.RFC3339)
	return &Error{
		Code: EPRECONDITION, Reason: ReasonGrantNotStarted,
		Message:  fmt.Sprintf("no grant of feature %q has started yet: the first starts at %s", feature, at),
		Metadata: map[string]string{"feature": feature, "starts_at": at},
	}
}

// FeatureSeatsExhausted is SeatsExhausted for a feature: every current
// grant covering the version asked is full; inUse and limit are summed
// over them.
func FeatureSeatsExhausted(feature string, inUse, limit int) *Error {
	e := SeatsExhausted(inUse, limit)
	e.Message = fmt.Sprintf("no seat of feature %q free: %d of %d in use", feature, inUse, limit)
	e.Metadata["feature"] = feature
	return e
}

// ErrGrantNotFound: no such grant on the license (or not the tenant's).
var ErrGrantNotFound = Errorf(ENOTFOUND, ReasonGrantNotFound, "feature grant not found")

// FormatVersion is a version as shown: "" is "any".
func FormatVersion(v string) string {
	if v == "" {
		return "any"
	}
	return v
}
