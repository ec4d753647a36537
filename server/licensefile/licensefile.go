// Package licensefile is the format of seatd's vendor-signed license
// files, for air-gapped sites (docs/concepts/license-files.md), and of the
// two documents around one: the site's request (the site key it asks a
// file for) and its signed usage export (true-up).
//
// Every document is one JWS (EdDSA, compact serialization) armoured as
// text with a readable copy of its payload (envelope.go). The vendor's
// key signs license files; the site's key signs its requests and its
// usage exports (and, in locked mode, its lease certificates): the chain
// vendor → file → site key → certificate.
//
// A file can never hold what seatd would refuse: Sign and every Verify
// judge the payload with seatd's own rules (server.Grant.Validate, the
// license limits of package server).
package licensefile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/seatd/seatd/server"
)

// File is a license file's payload: what the vendor sold one site.
type File struct {
	// Serial numbers the vendor's files for a site: a replacement must
	// have a higher one (Replaces), so an older file cannot be played
	// back. At most MaxSerial: a JavaScript verifier reads it exactly.
	Serial   int64     `json:"serial"`
	Customer string    `json:"customer"`
	IssuedAt time.Time `json:"issued_at"`
	// NotAfter: the file is refused from then on (ErrExpired); the
	// licenses in it may expire sooner (License.ExpiresAt).
	NotAfter time.Time `json:"not_after"`
	// SiteKey is the public key of the one site (seatd) that may serve the
	// file: the key its site request was signed with.
	SiteKey JWK `json:"site_key"`
	// Host, when set, also binds the file to one machine.
	Host     *HostBinding `json:"host,omitempty"`
	Licenses []License    `json:"licenses"`
}

// HostBinding binds a file to one machine, by the identity Kind names.
type HostBinding struct {
	Kind  HostKind `json:"kind"`
	Value string   `json:"value"`
}

// HostKind is what identifies a host.
type HostKind string

const (
	// BindHostname: the host's name (os.Hostname), compared without case.
	// Easy to read and to set: it stops a copy on a machine named
	// otherwise, not an admin who renames one.
	BindHostname HostKind = "hostname"
	// BindMachineID: /etc/machine-id (32 lowercase hex digits), made at
	// install: it stops a copy to another installation, not a clone of the
	// whole disk or VM.
	BindMachineID HostKind = "machine-id"
)

// License is one license the file grants: a seatd License whose terms
// only the vendor sets.
type License struct {
	// ID is the vendor's, stable across renewals: a renewal file that
	// keeps it keeps the license (its leases, its usage history). The
	// license's seatd id is "lic_" and this (LicenseID).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Seats, Overdraft, LeaseTTL, the borrowing limits and ExpiresAt as
	// server.License has them.
	Seats     int      `json:"seats"`
	Overdraft int      `json:"overdraft,omitempty"`
	LeaseTTL  Duration `json:"lease_ttl"`
	// LeasingStrategy and AllowEarlyReturn change how many machines or
	// users a seat serves, so they are terms of the sale too ("":
	// server.PerFingerprint).
	LeasingStrategy   server.LeasingStrategy `json:"leasing_strategy,omitempty"`
	AllowEarlyReturn  bool                   `json:"allow_early_return,omitempty"`
	MaxBorrowDuration Duration               `json:"max_borrow_duration,omitzero"`
	MaxBorrowedSeats  int                    `json:"max_borrowed_seats,omitempty"`
	ExpiresAt         time.Time              `json:"expires_at,omitzero"` // zero: with the file
	Grants            []Grant                `json:"grants,omitempty"`
}

// Grant is one feature grant of a license (server.Grant).
type Grant struct {
	// ID is the vendor's, stable across renewals, unique in its license:
	// the grant's seatd id is made from it (GrantID).
	ID                string    `json:"id"`
	Feature           string    `json:"feature"`
	Version           string    `json:"version,omitempty"` // "": every version
	Seats             int       `json:"seats"`
	Overdraft         int       `json:"overdraft,omitempty"`
	StartsAt          time.Time `json:"starts_at,omitzero"`
	ExpiresAt         time.Time `json:"expires_at,omitzero"`
	MaxBorrowDuration Duration  `json:"max_borrow_duration,omitzero"`
	MaxBorrowedSeats  int       `json:"max_borrowed_seats,omitempty"`
}

// Limits of a file.
const (
	// MaxSerial is the largest serial: 2^53-1, exact in every JSON reader.
	MaxSerial    = 1<<53 - 1
	MaxLicenses  = 1000
	MaxIDLength  = 63
	maxMachineID = 32
	maxHostname  = 253
)

// DefaultLeaseTTL is the lease TTL a vendor's tool writes when its input
// names none: seatd's own default.
const DefaultLeaseTTL = Duration(server.DefaultLeaseTTL)

// idPattern is a license's or grant's id: lowercase letters, digits, '-'
// and '_', so that it is a seatd id as it stands (no '.', which separates
// a grant's id from its license's: server.PoolLicense).
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// LicenseID is the seatd id of the file's license with the vendor's id
// vendorID: the same in every renewal, and a seatd license id as it
// stands (the vendor's ids are lowercase letters, digits, '-' and '_').
func LicenseID(vendorID string) string { return server.PrefixLicenseID + vendorID }

// GrantID is g's seatd grant id in the license with seatd id licenseID:
// the license's id, a dot, and 8 hex digits of the SHA-256 of the
// vendor's grant id, the form every seatd grant id has
// (server.NewGrantID). A hash, not the vendor's id itself: its length
// stays bounded (ids fit the API's 128 bytes whatever the vendor's are)
// and the same in every renewal. Validate refuses a license two of whose
// grants would share one.
func GrantID(licenseID string, g Grant) string { return licenseID + "." + grantSuffix(g.ID) }

func grantSuffix(vendorID string) string {
	sum := sha256.Sum256([]byte(vendorID))
	return hex.EncodeToString(sum[:4])
}

// Duration is a time.Duration written as Go writes one ("6m0s", "72h0m0s"),
// readable where nanoseconds would not be.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`a duration is a string such as "6m", "72h" or "1h30m"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`%q is not a duration such as "6m", "72h" or "1h30m"`, s)
	}
	*d = Duration(v)
	return nil
}

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrInvalid, server.Invalid(field, format, args...))
}

// Validate refuses a payload seatd would not serve, naming the first bad
// field (ErrInvalid wrapping a *server.Error with Field set).
func (f *File) Validate() error {
	switch {
	case f.Serial < 1 || f.Serial > MaxSerial:
		return invalid("serial", "must be between 1 and %d", int64(MaxSerial))
	case f.IssuedAt.IsZero():
		return invalid("issued_at", "is required")
	case f.NotAfter.IsZero():
		return invalid("not_after", "is required")
	case !f.NotAfter.After(f.IssuedAt):
		return invalid("not_after", "must be after issued_at")
	}
	if err := checkText("customer", f.Customer, true); err != nil {
		return err
	}
	if _, err := f.SiteKey.PublicKey("site_key"); err != nil {
		return err
	}
	if err := f.Host.validate(); err != nil {
		return err
	}
	if len(f.Licenses) == 0 {
		return invalid("licenses", "must hold at least one license")
	}
	if len(f.Licenses) > MaxLicenses {
		return invalid("licenses", "must hold at most %d licenses", MaxLicenses)
	}
	seen := map[string]bool{}
	for i := range f.Licenses {
		l := &f.Licenses[i]
		field := fmt.Sprintf("licenses[%d]", i)
		if err := l.validate(field, f.IssuedAt); err != nil {
			return err
		}
		if seen[l.ID] {
			return invalid(field+".id", "%q is the id of an earlier license", l.ID)
		}
		seen[l.ID] = true
	}
	return nil
}

func (h *HostBinding) validate() error {
	if h == nil {
		return nil
	}
	switch h.Kind {
	case BindHostname:
		if h.Value == "" || len(h.Value) > maxHostname || strings.ContainsFunc(h.Value, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.')
		}) {
			return invalid("host.value", "must be a hostname: 1-%d letters, digits, '-' and '.'", maxHostname)
		}
	case BindMachineID:
		if len(h.Value) != maxMachineID || strings.ContainsFunc(h.Value, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f')
		}) {
			return invalid("host.value", "must be a machine-id: %d lowercase hex digits, as in /etc/machine-id", maxMachineID)
		}
	default:
		return invalid("host.kind", "must be %q or %q (got %q)", BindHostname, BindMachineID, h.Kind)
	}
	return nil
}

// validate applies the rules seatd's admin API applies to a license
// (service's license fields), so that no file holds a license it would
// refuse to create.
func (l *License) validate(field string, issuedAt time.Time) error {
	if !idPattern.MatchString(l.ID) {
		return invalid(field+".id", "must be 1-%d lowercase letters, digits, '-' or '_', starting with a letter or digit (got %q)", MaxIDLength, l.ID)
	}
	if err := checkText(field+".name", l.Name, false); err != nil {
		return err
	}
	switch {
	case l.Seats < 1 || l.Seats > server.MaxSeats:
		return invalid(field+".seats", "must be between 1 and %d", server.MaxSeats)
	case l.Overdraft < 0 || l.Overdraft > server.MaxSeats:
		return invalid(field+".overdraft", "must be between 0 and %d", server.MaxSeats)
	case l.LeaseTTL.Std() < server.MinLeaseTTL || l.LeaseTTL.Std() > server.MaxLeaseTTL:
		return invalid(field+".lease_ttl", "must be between %s and %s", server.MinLeaseTTL, server.MaxLeaseTTL)
	case l.MaxBorrowDuration < 0 || l.MaxBorrowDuration.Std() > server.MaxBorrowDuration:
		return invalid(field+".max_borrow_duration", "must be between 0s (no borrowing) and %s", server.MaxBorrowDuration)
	case l.MaxBorrowedSeats < 0 || l.MaxBorrowedSeats > l.Seats:
		return invalid(field+".max_borrowed_seats", "must be between 0 (as many as there are seats) and the license's seats (%d)", l.Seats)
	case !l.ExpiresAt.IsZero() && !l.ExpiresAt.After(issuedAt):
		return invalid(field+".expires_at", "must be after the file's issued_at")
	}
	switch l.LeasingStrategy {
	case "", server.PerFingerprint, server.PerUser, server.PerHostname, server.PerAcquisition:
	default:
		return invalid(field+".leasing_strategy", "must be fingerprint, user, hostname or acquisition (got %q)", l.LeasingStrategy)
	}
	if len(l.Grants) > server.MaxGrantsPerLicense {
		return invalid(field+".grants", "must hold at most %d grants", server.MaxGrantsPerLicense)
	}
	seen := map[string]string{} // grantSuffix -> the vendor's id
	for i, g := range l.Grants {
		gf := fmt.Sprintf("%s.grants[%d]", field, i)
		if !idPattern.MatchString(g.ID) {
			return invalid(gf+".id", "must be 1-%d lowercase letters, digits, '-' or '_', starting with a letter or digit (got %q)", MaxIDLength, g.ID)
		}
		switch earlier, ok := seen[grantSuffix(g.ID)]; {
		case ok && earlier == g.ID:
			return invalid(gf+".id", "%q is the id of an earlier grant of this license", g.ID)
		case ok:
			// About one license in 20,000 of 200 grants: rename either.
			return invalid(gf+".id", "%q and the earlier grant %q would have one seatd grant id (%s): rename one", g.ID, earlier, GrantID(LicenseID(l.ID), g))
		}
		seen[grantSuffix(g.ID)] = g.ID
		sg := g.ServerGrant(LicenseID(l.ID))
		if err := sg.Validate(gf); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		switch {
		case g.MaxBorrowedSeats > g.Seats:
			return invalid(gf+".max_borrowed_seats", "must be between 0 (as many as there are seats) and the grant's seats (%d)", g.Seats)
		case !g.ExpiresAt.IsZero() && !g.ExpiresAt.After(issuedAt):
			return invalid(gf+".expires_at", "must be after the file's issued_at")
		}
	}
	return nil
}

// ServerGrant is g as seatd keeps it for the license with seatd id
// licenseID (LicenseID; no tenant, no creation times: the server's to
// fill).
func (g Grant) ServerGrant(licenseID string) server.Grant {
	return server.Grant{
		ID: GrantID(licenseID, g), LicenseID: licenseID,
		Feature: g.Feature, Version: g.Version, Seats: g.Seats, Overdraft: g.Overdraft,
		StartsAt: g.StartsAt, ExpiresAt: g.ExpiresAt,
		MaxBorrowDuration: g.MaxBorrowDuration.Std(), MaxBorrowedSeats: g.MaxBorrowedSeats,
	}
}

// checkText applies seatd's rule for names: UTF-8 without control or
// format characters, at most server.MaxLabelLength bytes.
func checkText(field, s string, required bool) error {
	switch {
	case required && strings.TrimSpace(s) == "":
		return invalid(field, "is required")
	case len(s) > server.MaxLabelLength:
		return invalid(field, "must be at most %d bytes", server.MaxLabelLength)
	case !utf8.ValidString(s):
		return invalid(field, "must be UTF-8")
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }):
		return invalid(field, "must not hold control or format characters")
	}
	return nil
}
