package service

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/seatd/seatd/server"
)

// GrantInput is a feature grant as an admin sends it. CreateGrant reads
// every field of GrantFields; UpdateGrant only those its paths name.
type GrantInput struct {
	ID                string // names the grant to update; the server's to make
	Feature, Version  string
	Seats, Overdraft  int64
	StartsAt          *time.Time // nil: from its creation
	ExpiresAt         *time.Time // nil: never (the license's expiry still applies)
	MaxBorrowDuration time.Duration
	MaxBorrowedSeats  int64
	// Malformed holds, by field path, what the caller could not read from
	// the request (as LicenseInput.Malformed).
	Malformed map[string]error
}

// GrantFields are the fields CreateGrant reads, by their field paths.
// UpdateGrant may change all of them but feature (UpdatableGrantFields).
var GrantFields = []string{
	"feature", "version", "seats", "overdraft", "starts_at", "expires_at", "max_borrow_duration", "max_borrowed_seats",
}

// UpdatableGrantFields are the fields UpdateGrant may change: a grant's
// feature is what its leases were taken for, so it never changes.
var UpdatableGrantFields = GrantFields[1:]

// GrantView is a grant with its live leases counted when it was read.
type GrantView struct {
	server.Grant
	SeatsInUse int
}

// applyGrantField sets one field (path) of in onto g, refusing values no
// grant may have; the rules of the fields together are checkGrant's.
func applyGrantField(g *server.Grant, in GrantInput, path string, now time.Time) error {
	if err := in.Malformed[path]; err != nil {
		return err
	}
	field := "grant." + path
	switch path {
	case "feature":
		if err := server.CheckFeature(field, in.Feature); err != nil {
			return err
		}
		g.Feature = in.Feature
	case "version":
		if in.Version != "" {
			if err := server.CheckVersion(field, in.Version); err != nil {
				return err
			}
		}
		g.Version = in.Version
	case "seats":
		if in.Seats < 0 || in.Seats > server.MaxSeats {
			return server.Invalid(field, "must be between 0 and %d", server.MaxSeats)
		}
		g.Seats = int(in.Seats)
	case "overdraft":
		if in.Overdraft < 0 || in.Overdraft > server.MaxSeats {
			return server.Invalid(field, "must be between 0 and %d", server.MaxSeats)
		}
		g.Overdraft = int(in.Overdraft)
	case "starts_at":
		g.StartsAt = time.Time{}
		if in.StartsAt != nil {
			g.StartsAt = *in.StartsAt
		}
	case "expires_at":
		g.ExpiresAt = time.Time{}
		if in.ExpiresAt == nil {
			return nil
		}
		if !in.ExpiresAt.After(now) {
			return server.Invalid(field, "must be in the future")
		}
		g.ExpiresAt = *in.ExpiresAt
	case "max_borrow_duration":
		if in.MaxBorrowDuration < 0 || in.MaxBorrowDuration > server.MaxBorrowDuration {
			return server.Invalid(field, "must be between 0s (no borrowing) and %s", server.MaxBorrowDuration)
		}
		g.MaxBorrowDuration = in.MaxBorrowDuration
	case "max_borrowed_seats":
		if in.MaxBorrowedSeats < 0 || in.MaxBorrowedSeats > server.MaxSeats {
			return server.Invalid(field, "must be between 0 (as many as there are seats) and the grant's seats")
		}
		g.MaxBorrowedSeats = int(in.MaxBorrowedSeats)
	default:
		return server.Invalid("update_mask", "unknown or read-only field %q", path)
	}
	return nil
}

// checkGrant judges a grant's fields together (Grant.Validate), and that
// its borrowed seats are some of its seats, as a license's are.
func checkGrant(g *server.Grant) error {
	if err := g.Validate("grant"); err != nil {
		return err
	}
	if g.MaxBorrowedSeats > g.Seats {
		return server.Invalid("grant.max_borrowed_seats", "must be between 0 (as many as there are seats) and the grant's seats (%d)", g.Seats)
	}
	return nil
}

// tooManyGrants refuses a grant beyond server.MaxGrantsPerLicense: a
// feature's acquisition judges all its grants in one atomic step.
func tooManyGrants() error {
	return &server.Error{
		Code: server.EEXHAUSTED, Reason: server.ReasonQuotaExceeded,
		Message:  fmt.Sprintf("a license holds at most %d feature grants: delete one that has run out first", server.MaxGrantsPerLicense),
		Metadata: map[string]string{"quota": "grants_per_license", "limit": strconv.Itoa(server.MaxGrantsPerLicense)},
	}
}

// checkGrantID refuses a grant id that is not one of licenseID's (the
// store would not find it either): GRANT_NOT_FOUND.
func checkGrantID(licenseID, grantID string) error {
	if grantID == "" {
		return server.Invalid("grant_id", "is required")
	}
	if !server.IsGrantID(grantID) || server.PoolLicense(grantID) != licenseID {
		return server.ErrGrantNotFound
	}
	return nil
}

// CreateGrant adds a feature grant to a license of the tenant: validated
// (nothing is written for bad input), at most MaxGrantsPerLicense per
// license, its seats within the tenant's seats quota (grants' seats count
// as licenses' do), audited.
func (s *Service) CreateGrant(ctx context.Context, actor, tenant, licenseID string, in GrantInput) (GrantView, error) {
	if err := s.refuseLocked(); err != nil {
		return GrantView{}, err
	}
	if err := required("license_id", licenseID); err != nil {
		return GrantView{}, err
	}
	if in.ID != "" {
		return GrantView{}, server.Invalid("grant.id", "is assigned by the server; leave it empty")
	}
	now := s.now()
	var g server.Grant
	for _, path := range GrantFields {
		if err := applyGrantField(&g, in, path, now); err != nil {
			return GrantView{}, err
		}
	}
	if err := checkGrant(&g); err != nil {
		return GrantView{}, err
	}
	// The count of grants and the seats quota are judged with the create
	// that they allow, per tenant on this instance (quotaLocks).
	defer s.quotaLocks.lock(tenant)()
	lic, err := s.store.GetLicense(ctx, tenant, licenseID)
	if err != nil {
		return GrantView{}, err
	}
	if len(lic.Grants) >= server.MaxGrantsPerLicense {
		return GrantView{}, tooManyGrants()
	}
	if s.quotas.Seats > 0 {
		_, seats, err := s.seatUsage(ctx, tenant, "")
		if err != nil {
			return GrantView{}, err
		}
		if seats+int64(g.SeatLimit()) > s.quotas.Seats {
			return GrantView{}, quotaExceeded("seats", s.quotas.Seats)
		}
	}
	g.ID, g.LicenseID, g.TenantID = server.NewGrantID(lic.ID), lic.ID, tenant
	g.CreatedAt, g.UpdatedAt = now, now
	g, err = s.store.CreateGrant(ctx, g)
	if err != nil {
		return GrantView{}, err
	}
	s.audit(ctx, actor, tenant, "feature_grant.create", "feature_grant", g.ID, map[string]string{
		"license_id": g.LicenseID, "feature": g.Feature, "version": server.FormatVersion(g.Version), "seats": itoa(g.Seats),
	})
	return GrantView{Grant: g}, nil
}

// UpdateGrant changes the fields paths names of grant in.ID of a license
// of the tenant: validated before the store is asked and again on the
// stored grant (nothing changes for bad input); a grant's feature cannot
// change; raising its seats stays within the seats quota. It answers the
// grant with its live leases counted after the change.
func (s *Service) UpdateGrant(ctx context.Context, actor, tenant, licenseID string, in GrantInput, paths []string) (GrantView, error) {
	if err := s.refuseLocked(); err != nil {
		return GrantView{}, err
	}
	if err := required("license_id", licenseID); err != nil {
		return GrantView{}, err
	}
	if in.ID == "" {
		return GrantView{}, server.Invalid("grant.id", "is required")
	}
	if len(paths) == 0 {
		return GrantView{}, server.Invalid("update_mask", "name at least one field to change")
	}
	if slices.Contains(paths, "feature") {
		return GrantView{}, server.Invalid("grant.feature", "cannot change once the grant is created: create a grant of the other feature (and delete this one)")
	}
	now := s.now()
	var probe server.Grant // bad input is refused before the store is asked
	for _, path := range paths {
		if err := applyGrantField(&probe, in, path, now); err != nil {
			return GrantView{}, err
		}
	}
	if err := checkGrantID(licenseID, in.ID); err != nil {
		return GrantView{}, err
	}
	others := int64(-1) // the tenant's other seats, when the seats quota applies
	if s.quotas.Seats > 0 && slices.ContainsFunc(paths, func(p string) bool { return p == "seats" || p == "overdraft" }) {
		defer s.quotaLocks.lock(tenant)()
		var err error
		if _, others, err = s.seatUsage(ctx, tenant, in.ID); err != nil {
			return GrantView{}, err
		}
	}
	g, err := s.store.UpdateGrant(ctx, tenant, licenseID, in.ID, func(g *server.Grant) error {
		before := g.SeatLimit()
		for _, path := range paths {
			if err := applyGrantField(g, in, path, now); err != nil {
				return err
			}
		}
		if err := checkGrant(g); err != nil {
			return err
		}
		// Lowering seats is always allowed, also above the quota.
		if others >= 0 && g.SeatLimit() > before && others+int64(g.SeatLimit()) > s.quotas.Seats {
			return quotaExceeded("seats", s.quotas.Seats)
		}
		return nil
	})
	if err != nil {
		return GrantView{}, err
	}
	s.forgetLicenseFacts(licenseID)
	details := map[string]string{"license_id": g.LicenseID, "feature": g.Feature}
	for _, path := range paths {
		details["field."+path] = "changed"
	}
	s.audit(ctx, actor, tenant, "feature_grant.update", "feature_grant", g.ID, details)
	n, err := s.store.SeatsInUse(ctx, tenant, g.ID)
	if err != nil {
		return GrantView{}, err
	}
	return GrantView{Grant: g, SeatsInUse: n}, nil
}

// DeleteGrant removes a grant of a license of the tenant, revoking its
// leases, and audits how many it revoked.
func (s *Service) DeleteGrant(ctx context.Context, actor, tenant, licenseID, grantID string) (int, error) {
	if err := s.refuseLocked(); err != nil {
		return 0, err
	}
	if err := required("license_id", licenseID); err != nil {
		return 0, err
	}
	if err := checkGrantID(licenseID, grantID); err != nil {
		return 0, err
	}
	n, err := s.store.DeleteGrant(ctx, tenant, licenseID, grantID)
	if err != nil {
		return 0, err
	}
	s.forgetLicenseFacts(licenseID)
	s.audit(ctx, actor, tenant, "feature_grant.delete", "feature_grant", grantID, map[string]string{
		"license_id": licenseID, "revoked_leases": itoa(n),
	})
	return n, nil
}

func required(field, v string) error {
	if v == "" {
		return server.Invalid(field, "is required")
	}
	return nil
}
