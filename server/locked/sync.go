package locked

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
)

// Actor names the license file in the audit log: the sync's changes are
// the file's, not an admin's.
const Actor = "license-file"

// MetadataFileLicenseID is the license metadata key that names the file's
// license (its vendor's id) a seatd license is.
const MetadataFileLicenseID = "license_file.license_id"

// Changes counts what a Sync changed.
type Changes struct {
	LicensesCreated, LicensesUpdated, LicensesDeactivated int
	GrantsCreated, GrantsUpdated, GrantsDeleted           int
}

// None reports whether the sync changed nothing.
func (c Changes) None() bool { return c == Changes{} }

// Sync makes the store's licenses those of f, in the default tenant:
//   - each license of f is the seatd license licensefile.LicenseID(its
//     id), created if missing (with a new key, kept by every later sync)
//     or updated where it differs: its seats, overdraft, TTL, strategy,
//     borrowing, early return, expiry (never past f's not_after), active;
//   - its grants are the file's (ids licensefile.GrantID): created,
//     updated, and deleted when the file no longer has them (their leases
//     revoked, as DeleteGrant does);
//   - every other license, of any tenant, is deactivated, never deleted:
//     its history stays, its leases run out (a heartbeat is refused).
//
// Each change is one store call, judged by the store as any (fewer seats
// end no lease: none is granted over the new limit until use is under
// it), and audited with the actor Actor. It writes nothing where the
// store agrees with f, so running it again is cheap, and it takes what
// another instance created meanwhile as its own. It returns what it
// changed, also on error (a sync that failed midway is completed by the
// next).
func Sync(ctx context.Context, st server.Store, f *licensefile.File, now time.Time) (Changes, error) {
	s := syncer{st: st, f: f, now: now}
	want := map[string]bool{}
	for _, fl := range f.Licenses {
		id := licensefile.LicenseID(fl.ID)
		want[id] = true
		if err := s.license(ctx, id, fl); err != nil {
			return s.c, fmt.Errorf("license %s (%s of the license file): %w", id, fl.ID, err)
		}
	}
	if err := s.deactivateOthers(ctx, want); err != nil {
		return s.c, err
	}
	return s.c, nil
}

type syncer struct {
	st  server.Store
	f   *licensefile.File
	now time.Time
	c   Changes
}

const tenant = server.DefaultTenantID

func (s *syncer) license(ctx context.Context, id string, fl licensefile.License) error {
	cur, err := s.st.GetLicense(ctx, tenant, id)
	if server.ErrorCode(err) == server.ENOTFOUND {
		l := server.License{ID: id, TenantID: tenant, Key: server.NewSecret(server.PrefixLicenseKey), CreatedAt: s.now, UpdatedAt: s.now}
		s.apply(&l, fl)
		cur, err = s.st.CreateLicense(ctx, l)
		switch {
		case err == nil:
			s.c.LicensesCreated++
			s.audit(ctx, "license.create", "license", id, map[string]string{"seats": strconv.Itoa(l.Seats)})
		case server.ErrorCode(err) == server.ECONFLICT:
			// Another instance created it meanwhile: it is the file's too.
			// Or it was deleted (before locked mode): a store never
			// reuses a deleted license's id.
			cur, err = s.st.GetLicense(ctx, tenant, id)
			if server.ErrorCode(err) == server.ENOTFOUND {
				return fmt.Errorf("a deleted license has its id (deleted before locked mode), and seatd never reuses a deleted license's id: the vendor must give it another id")
			}
		}
	}
	if err != nil {
		return err
	}
	if want := s.applied(cur, fl); !sameLicense(cur, want) {
		cur, err = s.st.UpdateLicense(ctx, tenant, id, func(l *server.License) error {
			s.apply(l, fl)
			return nil
		})
		if err != nil {
			return err
		}
		s.c.LicensesUpdated++
		s.audit(ctx, "license.update", "license", id, map[string]string{"seats": strconv.Itoa(cur.Seats)})
	}
	return s.grants(ctx, cur, fl)
}

// applied is l with fl's terms applied.
func (s *syncer) applied(l server.License, fl licensefile.License) server.License {
	l.Metadata = maps.Clone(l.Metadata)
	s.apply(&l, fl)
	return l
}

// apply sets the terms of fl onto l; the rest of l (its key, revival
// window, policy, other metadata) is the site's.
func (s *syncer) apply(l *server.License, fl licensefile.License) {
	l.Name, l.Seats, l.Overdraft, l.LeaseTTL = fl.Name, fl.Seats, fl.Overdraft, fl.LeaseTTL.Std()
	l.LeasingStrategy = cmp.Or(fl.LeasingStrategy, server.PerFingerprint)
	l.AllowEarlyReturn = fl.AllowEarlyReturn
	l.MaxBorrowDuration, l.MaxBorrowedSeats = fl.MaxBorrowDuration.Std(), fl.MaxBorrowedSeats
	// No license outlives the file: from not_after on, it grants nothing
	// (and no borrow may run past it).
	l.ExpiresAt = s.f.NotAfter
	if !fl.ExpiresAt.IsZero() && fl.ExpiresAt.Before(s.f.NotAfter) {
		l.ExpiresAt = fl.ExpiresAt
	}
	l.Active = true
	if l.Metadata == nil {
		l.Metadata = map[string]string{}
	}
	l.Metadata[MetadataFileLicenseID] = fl.ID
}

func sameLicense(a, b server.License) bool {
	return a.Name == b.Name && a.Seats == b.Seats && a.Overdraft == b.Overdraft && a.LeaseTTL == b.LeaseTTL &&
		a.LeasingStrategy == b.LeasingStrategy && a.AllowEarlyReturn == b.AllowEarlyReturn &&
		a.MaxBorrowDuration == b.MaxBorrowDuration && a.MaxBorrowedSeats == b.MaxBorrowedSeats &&
		a.ExpiresAt.Equal(b.ExpiresAt) && a.Active == b.Active && maps.Equal(a.Metadata, b.Metadata)
}

// grants makes l's grants those of fl: deletes first, so that the
// license never holds more grants than either file allows.
//
// A store never reuses the id of a deleted grant (its leases and events
// keep it), so a file grant has a sequence of seatd ids (grantIDs): the
// first, licensefile.GrantID, and others for when it comes back after it
// was deleted (a file dropped it, or changed its feature: a grant of
// another feature is another grant, whose leases were taken for the old
// one). It is the live grant whose id is one of those.
func (s *syncer) grants(ctx context.Context, l server.License, fl licensefile.License) error {
	live := map[string]server.Grant{}
	for _, g := range l.Grants {
		live[g.ID] = g
	}
	have := map[string]server.Grant{} // by the vendor's grant id
	for _, g := range fl.Grants {
		for _, id := range grantIDs(l.ID, g.ID) {
			if cur, ok := live[id]; ok && cur.Feature == g.Feature {
				have[g.ID] = cur
				delete(live, id) // each live grant is one file grant's
				break
			}
		}
	}
	for _, g := range live { // the grants no file grant is
		if err := s.deleteGrant(ctx, l.ID, g.ID); err != nil {
			return err
		}
	}
	for _, g := range fl.Grants {
		w := g.ServerGrant(l.ID)
		cur, ok := have[g.ID]
		switch {
		case !ok:
			if err := s.createGrant(ctx, l.ID, g.ID, w); err != nil {
				return fmt.Errorf("grant %s of the license file: %w", g.ID, err)
			}
		case !sameGrant(cur, w):
			if _, err := s.st.UpdateGrant(ctx, tenant, l.ID, cur.ID, func(g *server.Grant) error {
				setGrant(g, w)
				return nil
			}); err != nil {
				return fmt.Errorf("grant %s (%s of the license file): %w", cur.ID, g.ID, err)
			}
			s.c.GrantsUpdated++
			s.audit(ctx, "feature_grant.update", "feature_grant", cur.ID, map[string]string{"license_id": l.ID, "feature": w.Feature, "seats": strconv.Itoa(w.Seats)})
		}
	}
	return nil
}

// maxGrantIncarnations bounds how often one file grant may come back
// after its seatd grant was deleted.
const maxGrantIncarnations = 64

// grantIDs are the seatd ids a file grant (the vendor's id vendorID) may
// have in the license licenseID, in the order they are used.
func grantIDs(licenseID, vendorID string) []string {
	ids := make([]string, maxGrantIncarnations)
	ids[0] = licensefile.GrantID(licenseID, licensefile.Grant{ID: vendorID})
	for n := 1; n < maxGrantIncarnations; n++ {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", vendorID, n))
		ids[n] = licenseID + "." + hex.EncodeToString(sum[:4])
	}
	return ids
}

// createGrant creates w under the first of the file grant's ids that no
// grant, live or deleted, has; one created by another instance meanwhile
// (live, of w's feature) is taken as it stands and made w's.
func (s *syncer) createGrant(ctx context.Context, licenseID, vendorID string, w server.Grant) error {
	w.TenantID, w.CreatedAt, w.UpdatedAt = tenant, s.now, s.now
	for _, id := range grantIDs(licenseID, vendorID) {
		w.ID = id
		_, err := s.st.CreateGrant(ctx, w)
		if err == nil {
			s.c.GrantsCreated++
			s.audit(ctx, "feature_grant.create", "feature_grant", w.ID, map[string]string{
				"license_id": w.LicenseID, "feature": w.Feature, "version": server.FormatVersion(w.Version), "seats": strconv.Itoa(w.Seats),
			})
			return nil
		}
		if server.ErrorCode(err) != server.ECONFLICT {
			return err
		}
		l, err := s.st.GetLicense(ctx, tenant, licenseID)
		if err != nil {
			return err
		}
		if g := l.Grant(id); g != nil && g.Feature == w.Feature {
			_, err := s.st.UpdateGrant(ctx, tenant, licenseID, id, func(cur *server.Grant) error {
				setGrant(cur, w)
				return nil
			})
			return err
		}
		// A deleted grant's id (or a live one of another feature, which
		// the next sync deletes): the next id.
	}
	return fmt.Errorf("it came back after its grant was deleted more than %d times: give it a new id", maxGrantIncarnations)
}

func (s *syncer) deleteGrant(ctx context.Context, licenseID, grantID string) error {
	n, err := s.st.DeleteGrant(ctx, tenant, licenseID, grantID)
	if server.ErrorCode(err) == server.ENOTFOUND {
		return nil // another instance deleted it meanwhile
	}
	if err != nil {
		return fmt.Errorf("grant %s: %w", grantID, err)
	}
	s.c.GrantsDeleted++
	s.audit(ctx, "feature_grant.delete", "feature_grant", grantID, map[string]string{"license_id": licenseID, "revoked_leases": strconv.Itoa(n)})
	return nil
}

// setGrant sets the terms of w onto g (not its feature: a grant of
// another feature is another grant).
func setGrant(g *server.Grant, w server.Grant) {
	g.Version, g.Seats, g.Overdraft = w.Version, w.Seats, w.Overdraft
	g.StartsAt, g.ExpiresAt = w.StartsAt, w.ExpiresAt
	g.MaxBorrowDuration, g.MaxBorrowedSeats = w.MaxBorrowDuration, w.MaxBorrowedSeats
}

func sameGrant(a, b server.Grant) bool {
	return a.Feature == b.Feature && a.Version == b.Version && a.Seats == b.Seats && a.Overdraft == b.Overdraft &&
		a.StartsAt.Equal(b.StartsAt) && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.MaxBorrowDuration == b.MaxBorrowDuration && a.MaxBorrowedSeats == b.MaxBorrowedSeats
}

// deactivateOthers deactivates every active license of every tenant that
// is not one of the file's (want): one made before locked mode, or one a
// later file dropped.
func (s *syncer) deactivateOthers(ctx context.Context, want map[string]bool) error {
	return eachTenant(ctx, s.st, func(tenantID string) error {
		return eachLicense(ctx, s.st, tenantID, func(l server.License) error {
			if !l.Active || (tenantID == tenant && want[l.ID]) {
				return nil
			}
			_, err := s.st.UpdateLicense(ctx, tenantID, l.ID, func(l *server.License) error {
				l.Active = false
				return nil
			})
			if server.ErrorCode(err) == server.ENOTFOUND {
				return nil
			}
			if err != nil {
				return fmt.Errorf("deactivate license %s of tenant %s: %w", l.ID, tenantID, err)
			}
			s.c.LicensesDeactivated++
			s.auditIn(ctx, tenantID, "license.update", "license", l.ID, map[string]string{"field.active": "changed", "reason": "not in the license file"})
			return nil
		})
	})
}

func eachTenant(ctx context.Context, st server.Store, f func(tenantID string) error) error {
	p := server.Page{Size: server.MaxPageSize}
	for {
		ts, next, err := st.ListTenants(ctx, p)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := f(t.ID); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		p.Token = next
	}
}

func eachLicense(ctx context.Context, st server.Store, tenantID string, f func(server.License) error) error {
	p := server.Page{Size: server.MaxPageSize}
	for {
		ls, next, err := st.ListLicenses(ctx, tenantID, p)
		if err != nil {
			return err
		}
		for _, l := range ls {
			if err := f(l); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		p.Token = next
	}
}

func (s *syncer) audit(ctx context.Context, action, resource, id string, details map[string]string) {
	s.auditIn(ctx, tenant, action, resource, id, details)
}

// auditIn records a change of the sync. The change happened: a failure
// to record it does not undo it, and the next sync does not repeat it,
// so it is not returned (the store logs its own failures).
func (s *syncer) auditIn(ctx context.Context, tenantID, action, resource, id string, details map[string]string) {
	details["license_file_serial"] = strconv.FormatInt(s.f.Serial, 10)
	_ = s.st.AppendAudit(ctx, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: tenantID, Actor: Actor, Action: action,
		Resource: resource, ResourceID: id, Details: details, At: s.now,
	})
}
