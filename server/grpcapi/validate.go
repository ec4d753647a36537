package grpcapi

import (
	"regexp"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
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
func clientFields(r service.SeatRequest) error {
	if err := required("license_key", r.LicenseKey); err != nil {
		return err
	}
	if err := maxLen("license_key", r.LicenseKey, 256); err != nil {
		return err
	}
	if err := required("fingerprint", r.Fingerprint); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"fingerprint", r.Fingerprint}, {"user", r.User}, {"hostname", r.Hostname}, {"idempotency_key", r.IdempotencyKey},
	} {
		if err := maxLen(f.name, f.v, server.MaxLabelLength); err != nil {
			return err
		}
	}
	if err := validMetadata("metadata", r.Metadata); err != nil {
		return err
	}
	if err := service.CheckFeatureRequest(r.Feature, r.Version); err != nil {
		return err
	}
	return service.CheckNonce(r.Nonce)
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

// licenseInput converts a License message for the service. What does not
// convert (text that breaks the text rule, an invalid duration or
// timestamp, an unknown strategy) goes to Malformed by field path: the
// service reports it when that field's turn comes, after the rules of the
// fields before it.
func licenseInput(in *seatdv1.License) service.LicenseInput {
	l := service.LicenseInput{
		ID: in.GetId(), Key: in.GetKey(), Name: in.GetName(),
		Seats: int64(in.GetSeats()), Overdraft: int64(in.GetOverdraft()),
		Active: in.Active, Metadata: in.GetMetadata(),
		Malformed: map[string]error{},
	}
	malformed := func(path string, err error) {
		if err != nil {
			l.Malformed[path] = err
		}
	}
	malformed("name", maxLen("license.name", in.GetName(), server.MaxLabelLength))
	malformed("metadata", validMetadata("license.metadata", in.GetMetadata()))
	if d := in.GetLeaseTtl(); d != nil {
		ttl := d.AsDuration()
		l.LeaseTTL = &ttl
		if d.CheckValid() != nil {
			malformed("lease_ttl", server.Invalid("license.lease_ttl", "is not a valid duration"))
		}
	}
	if d := in.GetRevivalWindow(); d != nil {
		l.RevivalWindow = d.AsDuration()
		if d.CheckValid() != nil {
			malformed("revival_window", server.Invalid("license.revival_window", "is not a valid duration"))
		}
	}
	strategy, ok := strategyFromProto[in.GetLeasingStrategy()]
	l.LeasingStrategy = strategy
	if !ok {
		malformed("leasing_strategy", server.Invalid("license.leasing_strategy", "is not a known leasing strategy"))
	}
	if t := in.GetExpiresAt(); t != nil {
		at := t.AsTime()
		l.ExpiresAt = &at
		if t.CheckValid() != nil {
			malformed("expires_at", server.Invalid("license.expires_at", "is not a valid timestamp"))
		}
	}
	if d := in.GetMaxBorrowDuration(); d != nil {
		l.MaxBorrowDuration = d.AsDuration()
		if d.CheckValid() != nil {
			malformed("max_borrow_duration", server.Invalid("license.max_borrow_duration", "is not a valid duration"))
		}
	}
	l.MaxBorrowedSeats = int64(in.GetMaxBorrowedSeats())
	l.AllowEarlyReturn = in.GetAllowEarlyReturn()
	return l
}
