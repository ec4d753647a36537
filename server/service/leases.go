package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// StateAt is a lease's state as shown at now: an active lease past its
// deadline is expired though cleanup has not recorded it yet, since it no
// longer holds a seat (invariant 2).
func StateAt(l server.Lease, now time.Time) server.LeaseState {
	if l.State == server.LeaseActive && !now.Before(l.ExpiresAt) {
		return server.LeaseExpired
	}
	return l.State
}

// LeasePage is one page of a license's leases, with the time their states
// were judged at (StateAt), for showing them as listed.
type LeasePage struct {
	Leases []server.Lease
	Next   string
	At     time.Time
}

// LeaseFilter narrows ListLeases: State != "" keeps the leases whose state
// as shown (StateAt) is State; Feature != "" those of that feature's grants.
type LeaseFilter struct {
	State   server.LeaseState
	Feature string
}

// ListLeases lists a license's leases newest first (its base pool's and
// its grants'), only those f keeps. An expired lease may still be recorded
// active, so a filter on expired reads every recorded state and one on
// active drops the lapsed; the store lists every feature's leases, and the
// feature filter drops the others' from each page: a page may then hold
// fewer than p.Size (even none, with a next page token).
func (s *Service) ListLeases(ctx context.Context, tenant, licenseID string, f LeaseFilter, p server.Page) (LeasePage, error) {
	if f.Feature != "" {
		if err := server.CheckFeature("feature", f.Feature); err != nil {
			return LeasePage{}, err
		}
	}
	state := f.State
	recorded := state
	if state == server.LeaseExpired {
		recorded = ""
	}
	ls, next, err := s.store.ListLeases(ctx, tenant, licenseID, recorded, p)
	if err != nil {
		return LeasePage{}, err
	}
	page := LeasePage{Next: next, At: s.now()}
	for _, l := range ls {
		if (state == "" || StateAt(l, page.At) == state) && (f.Feature == "" || l.Feature == f.Feature) {
			page.Leases = append(page.Leases, l)
		}
	}
	return page, nil
}

// RevokeLease ends a lease of the tenant, tells its heartbeat stream (on
// whichever instance), and audits it with the admin's reason. A lease that
// has ended already is refused (server.LeaseAlreadyEnded, FAILED_PRECONDITION
// with the reason of its end state) and left as it is; one past its deadline
// but not yet recorded as expired is revoked, as the store does.
//
// A borrowed lease still live is refused (server.BorrowedNotRevocable) and
// left as it is: its holder may be offline with a certificate valid until
// its deadline, which no revocation can reach, so the seat stays counted
// until then or until the holder returns it. Deleting the license still
// ends it (the store's DeleteLicense).
func (s *Service) RevokeLease(ctx context.Context, actor, tenant, leaseID, reason string) (server.Lease, error) {
	cur, err := s.store.GetLease(ctx, tenant, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	// Borrowed is fixed at acquisition: no race with the revocation below.
	if cur.Borrowed && StateAt(cur, s.now()) == server.LeaseActive {
		return server.Lease{}, server.BorrowedNotRevocable(cur.ExpiresAt.UTC().Format(time.RFC3339))
	}
	l, err := s.store.Revoke(ctx, tenant, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	// The store answers a lease that had ended (before this call, or by
	// a release or expiry meanwhile) unchanged: say so rather than
	// "revoked", and audit and send nothing. The store was still called:
	// its answer for an ended lease also clears what a failed end left
	// behind in the live state.
	if cur.State.Terminal() || l.State != server.LeaseRevoked {
		return server.Lease{}, server.LeaseAlreadyEnded(l)
	}
	s.revocations.Revoked(ctx, l.ID)
	s.audit(ctx, actor, tenant, "lease.revoke", "lease", l.ID, leaseDetails(l, map[string]string{"reason": reason}))
	return l, nil
}

// leaseDetails are an audit entry's details of lease l: its license, and
// its grant for a lease of a feature grant, with more.
func leaseDetails(l server.Lease, more map[string]string) map[string]string {
	more["license_id"] = l.LicenseOf()
	if g := l.GrantID(); g != "" {
		more["grant_id"] = g
	}
	return more
}
