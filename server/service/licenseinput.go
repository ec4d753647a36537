package service

import (
	"time"

	"github.com/seatd/seatd/server"
)

// LicenseInput is a license as an admin sends it. CreateLicense reads every
// field of LicenseFields; UpdateLicense only those its paths name.
type LicenseInput struct {
	ID, Key         string // ID names the license to update; both are the server's to make
	Name            string
	Seats           int64
	Overdraft       int64
	LeaseTTL        *time.Duration // nil: server.DefaultLeaseTTL
	RevivalWindow   time.Duration
	LeasingStrategy server.LeasingStrategy
	Active          *bool      // nil: active
	ExpiresAt       *time.Time // nil: never
	Metadata        map[string]string
	// Borrowing: 0 turns it off, and leaves the seats borrowed at once
	// unbounded (but for the seat limit).
	MaxBorrowDuration time.Duration
	MaxBorrowedSeats  int64
	// AllowEarlyReturn: a borrowed seat may be returned before its
	// deadline (off by default: the return is refused).
	AllowEarlyReturn bool
	// Malformed holds, by field path, what the caller could not read from
	// the request (text that breaks the text rule, an invalid duration, an
	// unknown enum value). It is reported when that field's turn comes, so
	// that the first bad field named is the same whoever found it.
	Malformed map[string]error
}

// LicenseFields are the fields CreateLicense reads and UpdateLicense may
// change, by their field paths.
var LicenseFields = []string{
	"name", "seats", "overdraft", "lease_ttl", "revival_window", "leasing_strategy", "active", "expires_at", "metadata",
	"max_borrow_duration", "max_borrowed_seats", "allow_early_return",
}

// applyField sets one field (path) of in onto l, refusing values no
// license may have.
func applyField(l *server.License, in LicenseInput, path string, now time.Time) error {
	if err := in.Malformed[path]; err != nil {
		return err
	}
	field := "license." + path
	switch path {
	case "name":
		l.Name = in.Name
	case "seats":
		if in.Seats < 1 || in.Seats > server.MaxSeats {
			return server.Invalid(field, "must be between 1 and %d", server.MaxSeats)
		}
		l.Seats = int(in.Seats)
	case "overdraft":
		if in.Overdraft < 0 || in.Overdraft > server.MaxSeats {
			return server.Invalid(field, "must be between 0 and %d", server.MaxSeats)
		}
		l.Overdraft = int(in.Overdraft)
	case "lease_ttl":
		d := server.DefaultLeaseTTL
		if in.LeaseTTL != nil {
			d = *in.LeaseTTL
		}
		if d < server.MinLeaseTTL || d > server.MaxLeaseTTL {
			return server.Invalid(field, "must be between %s and %s", server.MinLeaseTTL, server.MaxLeaseTTL)
		}
		l.LeaseTTL = d
	case "revival_window":
		if in.RevivalWindow < 0 || in.RevivalWindow > 24*time.Hour {
			return server.Invalid(field, "must be between 0s and 24h")
		}
		l.RevivalWindow = in.RevivalWindow
	case "leasing_strategy":
		l.LeasingStrategy = in.LeasingStrategy
	case "active":
		l.Active = in.Active == nil || *in.Active
	case "expires_at":
		if in.ExpiresAt == nil {
			l.ExpiresAt = time.Time{}
			return nil
		}
		if !in.ExpiresAt.After(now) {
			return server.Invalid(field, "must be in the future")
		}
		l.ExpiresAt = *in.ExpiresAt
	case "metadata":
		l.Metadata = in.Metadata
	case "max_borrow_duration":
		if in.MaxBorrowDuration < 0 || in.MaxBorrowDuration > server.MaxBorrowDuration {
			return server.Invalid(field, "must be between 0s (no borrowing) and 720h (30 days)")
		}
		l.MaxBorrowDuration = in.MaxBorrowDuration
	case "max_borrowed_seats":
		if in.MaxBorrowedSeats < 0 || in.MaxBorrowedSeats > server.MaxSeats {
			return server.Invalid(field, "must be between 0 (as many as there are seats) and the license's seats")
		}
		l.MaxBorrowedSeats = int(in.MaxBorrowedSeats)
	case "allow_early_return":
		l.AllowEarlyReturn = in.AllowEarlyReturn
	case "key":
		return server.Invalid("update_mask", "license key cannot be changed")
	default:
		return server.Invalid("update_mask", "unknown or read-only field %q", path)
	}
	return nil
}

// checkLicense judges the fields of a license together, once each has
// passed applyField: borrowed seats are some of its seats.
func checkLicense(l *server.License) error {
	if l.MaxBorrowedSeats > l.Seats {
		return server.Invalid("license.max_borrowed_seats", "must be between 0 (as many as there are seats) and the license's seats (%d)", l.Seats)
	}
	return nil
}
