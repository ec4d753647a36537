package grpcapi

import (
	"regexp"
	"time"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

var (
	tenantIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

func required(field, v string) error {
	if v == "" {
		return server.Invalid(field, "is required")
	}
	return nil
}

// maxLen bounds one field and applies the text rule again: checkRequest
// applies it to every request first, but a handler does not rely on that.
func maxLen(field, v string, n int) error {
	if len(v) > n {
		return server.Invalid(field, "must be at most %d bytes", n)
	}
	if p := textProblem(v); p != "" {
		return server.Invalid(field, "%s", p)
	}
	return nil
}

func validMetadata(field string, m map[string]string) error {
	if len(m) > server.MaxMetadataEntries {
		return server.Invalid(field, "must have at most %d entries", server.MaxMetadataEntries)
	}
	for k, v := range m {
		if k == "" || len(k) > 64 || textProblem(k) != "" {
			return server.Invalid(field, "keys must be 1-64 bytes of UTF-8 without control characters")
		}
		if err := maxLen(mapEntryPath(field, k), v, server.MaxMetadataValue); err != nil {
			return err
		}
	}
	return nil
}

func validTenantID(field, id string) error {
	if !tenantIDPattern.MatchString(id) {
		return server.Invalid(field, "must be 1-63 lowercase letters, digits or dashes, starting with a letter or digit")
	}
	return nil
}

func validPageSize(n int32) error {
	if n < 0 || n > server.MaxPageSize {
		return server.Invalid("page_size", "must be between 0 and %d", server.MaxPageSize)
	}
	return nil
}

// clientFields validates what AcquireSeat and WaitForSeat share.
func clientFields(licenseKey, fingerprint, user, hostname, idem string, md map[string]string) error {
	if err := required("license_key", licenseKey); err != nil {
		return err
	}
	if err := maxLen("license_key", licenseKey, 256); err != nil {
		return err
	}
	if err := required("fingerprint", fingerprint); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"fingerprint", fingerprint}, {"user", user}, {"hostname", hostname}, {"idempotency_key", idem},
	} {
		if err := maxLen(f.name, f.v, server.MaxLabelLength); err != nil {
			return err
		}
	}
	return validMetadata("metadata", md)
}

func leaseCredentials(id, token string) error {
	if err := required("lease_id", id); err != nil {
		return err
	}
	if err := maxLen("lease_id", id, 128); err != nil {
		return err
	}
	if err := required("lease_token", token); err != nil {
		return err
	}
	return maxLen("lease_token", token, 256)
}

// licenseField applies one field of a License message onto l, validating it.
// path is the field mask path ("seats", "lease_ttl", ...).
func licenseField(l *server.License, in *seatdv1.License, path string, now time.Time) error {
	field := "license." + path
	switch path {
	case "name":
		if err := maxLen(field, in.GetName(), server.MaxLabelLength); err != nil {
			return err
		}
		l.Name = in.GetName()
	case "seats":
		if in.GetSeats() < 1 || in.GetSeats() > server.MaxSeats {
			return server.Invalid(field, "must be between 1 and %d", server.MaxSeats)
		}
		l.Seats = int(in.GetSeats())
	case "overdraft":
		if in.GetOverdraft() < 0 || in.GetOverdraft() > server.MaxSeats {
			return server.Invalid(field, "must be between 0 and %d", server.MaxSeats)
		}
		l.Overdraft = int(in.GetOverdraft())
	case "lease_ttl":
		d := server.DefaultLeaseTTL
		if in.GetLeaseTtl() != nil {
			if err := in.GetLeaseTtl().CheckValid(); err != nil {
				return server.Invalid(field, "is not a valid duration")
			}
			d = in.GetLeaseTtl().AsDuration()
		}
		if d < server.MinLeaseTTL || d > server.MaxLeaseTTL {
			return server.Invalid(field, "must be between %s and %s", server.MinLeaseTTL, server.MaxLeaseTTL)
		}
		l.LeaseTTL = d
	case "revival_window":
		var d time.Duration
		if in.GetRevivalWindow() != nil {
			if err := in.GetRevivalWindow().CheckValid(); err != nil {
				return server.Invalid(field, "is not a valid duration")
			}
			d = in.GetRevivalWindow().AsDuration()
		}
		if d < 0 || d > 24*time.Hour {
			return server.Invalid(field, "must be between 0s and 24h")
		}
		l.RevivalWindow = d
	case "leasing_strategy":
		s, ok := strategyFromProto[in.GetLeasingStrategy()]
		if !ok {
			return server.Invalid(field, "is not a known leasing strategy")
		}
		l.LeasingStrategy = s
	case "active":
		l.Active = in.Active == nil || in.GetActive()
	case "expires_at":
		if in.GetExpiresAt() == nil {
			l.ExpiresAt = time.Time{}
			return nil
		}
		if err := in.GetExpiresAt().CheckValid(); err != nil {
			return server.Invalid(field, "is not a valid timestamp")
		}
		t := in.GetExpiresAt().AsTime()
		if !t.After(now) {
			return server.Invalid(field, "must be in the future")
		}
		l.ExpiresAt = t
	case "metadata":
		if err := validMetadata(field, in.GetMetadata()); err != nil {
			return err
		}
		l.Metadata = in.GetMetadata()
	case "key":
		return server.Invalid("update_mask", "license key cannot be changed")
	default:
		return server.Invalid("update_mask", "unknown or read-only field %q", path)
	}
	return nil
}

// updatableLicenseFields are the fields CreateLicense reads and UpdateLicense may change.
var updatableLicenseFields = []string{
	"name", "seats", "overdraft", "lease_ttl", "revival_window", "leasing_strategy", "active", "expires_at", "metadata",
}
