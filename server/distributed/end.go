package distributed

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// End -> record, then live. A release, revoke or observed expiry is
// recorded first and only then removed from the live state, and the caller
// is told only once both happened: an observed end is final.

func (s *Store) Release(ctx context.Context, leaseID, tokenHash string) (server.Lease, error) {
	info, err := s.leaseInfoOf(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	for range maxAttempts {
		c, err := s.live.Check(ctx, info.LicenseID, leaseID, tokenHash)
		if err != nil {
			return server.Lease{}, s.fail("release", err)
		}
		if c.Status == live.StatusLingered || c.Status == live.StatusLingering {
			return s.recordLinger(ctx, info.LicenseID, leaseID, tokenHash, c)
		}
		if c.Status != live.StatusLive {
			if l, retry, err := s.releaseRefused(ctx, info.LicenseID, leaseID, tokenHash, c.Status); !retry {
				return l, err
			}
			continue
		}
		if info.Borrowed { // fixed at acquisition; the token was checked
			// Early return, if the license allows it: the release below
			// records the certificate as returned in the same statement
			// (record.releaseManySQL), and end.lua keeps the lease in the
			// borrowed set until its deadline (the borrow cap counts it).
			lic, err := s.rec.License(ctx, info.LicenseID)
			if err != nil {
				return server.Lease{}, s.fail("release", err)
			}
			if !lic.AllowEarlyReturn {
				return server.Lease{}, server.BorrowedNotReturnable(c.Deadline)
			}
		}
		var l server.Lease
		ok, err := s.rec.ReleaseSession(ctx, leaseID, c.Now, c.Heartbeat, c.Deadline, &l)
		if err != nil {
			return server.Lease{}, s.fail("release", err)
		}
		if !ok { // ended meanwhile: by another release (then idempotent) or not
			l, err := s.releaseEnded(ctx, leaseID, tokenHash)
			if err == nil || server.ErrorReason(err) == server.ReasonLeaseRevoked {
				// Released or revoked in the record yet live in Redis: the
				// removal after that end failed (or has not run yet).
				if derr := s.dropEnded(ctx, info.LicenseID, leaseID); derr != nil {
					return server.Lease{}, s.fail("release", derr)
				}
			}
			return l, err
		}
		if err := s.dropEnded(ctx, info.LicenseID, leaseID); err != nil {
			return server.Lease{}, s.fail("release", err)
		}
		return l, nil
	}
	return server.Lease{}, s.fail("release", errors.New("live state kept changing; giving up"))
}

// recordLinger records a release that lingers (server/linger.go): check.lua
// made the lease linger (now, or an earlier call whose record may not have
// been written) in the live state, which judged it with the pool's linger
// in one step with its liveness; the record follows before the caller is
// told, so that a rebuild after a loss of Redis brings the linger back. A
// lease whose linger has lapsed ends now, released (ExpireLeases: one
// usage event, no zombie).
func (s *Store) recordLinger(ctx context.Context, licenseID, leaseID, tokenHash string, c live.Check) (server.Lease, error) {
	if c.Status == live.StatusLingered {
		s.live.NoteDeadline(ctx, licenseID, c.PrevFirst, c.Deadline) // a linger may end before the deadline it had
		s.hb.forget(leaseID)                                         // older than the release (WriteBeats skips it anyway)
	}
	l, ok, err := s.rec.LingerSession(ctx, leaseID, c.Heartbeat, c.Deadline, c.TokenSeq)
	if err != nil {
		return server.Lease{}, s.fail("release", err)
	}
	if !ok {
		// Ended meanwhile (revoked; its lapsed linger recorded), or taken
		// back by its client since (a later token): as for an ended lease.
		l, err := s.releaseEnded(ctx, leaseID, tokenHash)
		if err == nil || server.ErrorReason(err) == server.ReasonLeaseRevoked {
			if derr := s.dropEnded(ctx, licenseID, leaseID); derr != nil {
				return server.Lease{}, s.fail("release", derr)
			}
		}
		return l, err
	}
	if c.Deadline.After(c.Now) {
		return l, nil
	}
	if _, err := s.ExpireLeases(ctx, []server.LeaseRef{{LicenseID: licenseID, LeaseID: leaseID}}); err != nil {
		return server.Lease{}, err
	}
	return s.releaseEnded(ctx, leaseID, tokenHash)
}

// releaseRefused handles check.lua's answers other than LIVE: the error
// or the answer for the caller, or retry: the live state changed under the call, judge it anew.
func (s *Store) releaseRefused(ctx context.Context, licenseID, leaseID, tokenHash string, status live.Status) (_ server.Lease, retry bool, err error) {
	switch status {
	case live.StatusNoState:
		err := s.ensureLive(ctx, licenseID)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			l, err := s.releaseEnded(ctx, leaseID, tokenHash)
			return l, false, err
		}
		if err != nil {
			return server.Lease{}, false, s.fail("release: build live state", err)
		}
		return server.Lease{}, true, nil
	case live.StatusDeleted, live.StatusNoLease:
		l, err := s.releaseEnded(ctx, leaseID, tokenHash)
		return l, false, err
	case live.StatusWrongToken:
		return server.Lease{}, false, server.ErrLeaseToken
	case live.StatusExpired:
		retry, err := s.observeExpiry(ctx, licenseID, leaseID)
		if server.ErrorReason(err) == server.ReasonLeaseReleased { // a lapsed linger, recorded released
			l, err := s.releaseEnded(ctx, leaseID, tokenHash)
			return l, false, err
		}
		return server.Lease{}, retry, err
	default:
		return server.Lease{}, false, s.fail("release", fmt.Errorf("unexpected script reply %q", status))
	}
}

// releaseEnded answers a release of a lease that is not live, from its
// record: a released lease is returned unchanged.
func (s *Store) releaseEnded(ctx context.Context, leaseID, tokenHash string) (server.Lease, error) {
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	if !tokenMatches(l.TokenHash, tokenHash) {
		return server.Lease{}, server.ErrLeaseToken
	}
	if l.State == server.LeaseReleased {
		return l, nil
	}
	return server.Lease{}, l.State.EndError()
}

func (s *Store) Revoke(ctx context.Context, tenantID, leaseID string) (server.Lease, error) {
	l, err := s.tenantLease(ctx, tenantID, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	if l.State.Terminal() {
		// Ended already, perhaps by a call whose removal from Redis failed:
		// make sure it is gone before saying so.
		if err := s.dropEnded(ctx, l.LicenseID, leaseID); err != nil {
			return server.Lease{}, s.fail("revoke", err)
		}
		return l, nil
	}
	vals, now, err := s.peek(ctx, l.LicenseID, leaseID)
	if err != nil {
		return server.Lease{}, s.fail("revoke", err)
	}
	var hb, dl *time.Time
	if v, ok := vals[leaseID]; ok {
		hb, dl = &v.Heartbeat, &v.Deadline
	}
	ended, ok, err := s.rec.EndLease(ctx, leaseID, server.LeaseRevoked, now, hb, dl)
	if err != nil {
		return server.Lease{}, s.fail("revoke", err)
	}
	if !ok { // ended meanwhile: answer as for an ended lease
		if ended, err = s.readLease(ctx, leaseID); err != nil {
			return server.Lease{}, err
		}
	}
	if err := s.dropEnded(ctx, l.LicenseID, leaseID); err != nil {
		return server.Lease{}, s.fail("revoke", err)
	}
	return ended, nil
}

// RevokeUnconfirmed: take.lua judges the lease and, while it is as
// granted, takes it out of the live state in the same step (every
// heartbeat after it is refused); then the revocation is recorded and
// end.lua drops it, as for Revoke. A crash between the two, or a failed
// record write (the call then answers UNAVAILABLE), leaves it in the
// expiring hash, holding no seat: the next cleanup pass, or its next
// heartbeat, records it as expired. Unlike Revoke's, that failure does
// change something (the unconfirmed grant is already out of the live
// state), by design: the step that judged it is the one that took it. A missing live state judges nothing:
// the rebuild gives time back, and a seat is never taken on a guess.
func (s *Store) RevokeUnconfirmed(ctx context.Context, granted server.Lease) (server.Lease, bool, error) {
	l, err := s.tenantLease(ctx, granted.TenantID, granted.ID)
	if err != nil || l.State.Terminal() {
		return l, false, err
	}
	status, taken, now, err := s.live.Take(ctx, l.LicenseID, l.ID,
		live.TakenLease{Heartbeat: granted.LastHeartbeatAt, Deadline: granted.ExpiresAt})
	switch {
	case errors.Is(err, live.ErrNoState):
		return l, false, nil
	case err != nil:
		return server.Lease{}, false, s.fail("revoke an unconfirmed lease", err)
	case status != live.TakeTaken:
		return l, false, nil
	}
	ended, ok, err := s.rec.EndLease(ctx, l.ID, server.LeaseRevoked, now, &taken.Heartbeat, &taken.Deadline)
	if err != nil {
		return server.Lease{}, false, s.fail("revoke an unconfirmed lease", err)
	}
	if !ok { // ended meanwhile (its expiry observed): not ours
		if ended, err = s.readLease(ctx, l.ID); err != nil {
			return server.Lease{}, false, err
		}
	}
	if err := s.dropEnded(ctx, l.LicenseID, l.ID); err != nil {
		return server.Lease{}, false, s.fail("revoke an unconfirmed lease", err)
	}
	return ended, ok, nil
}

// observeExpiry answers a call that found the lease past its deadline
// (and not revived). Observed ends are final: the expiry is recorded
// before anyone is told, so that no rebuild or revival brings the lease
// back, and the caller is told only once Redis remembers the end too
// (end.lua, as for a release): a rebuild whose snapshot of the record was
// read before the expiry was recorded then leaves the lease out.
// retry: the lease was renewed meanwhile, judge the call anew.
func (s *Store) observeExpiry(ctx context.Context, licenseID, leaseID string) (retry bool, err error) {
	if _, err := s.ExpireLeases(ctx, []server.LeaseRef{{LicenseID: licenseID, LeaseID: leaseID}}); err != nil {
		return false, err
	}
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return false, err
	}
	if l.State == server.LeaseActive {
		return true, nil
	}
	if err := s.dropEnded(ctx, licenseID, leaseID); err != nil {
		return false, s.fail("record an expiry", err)
	}
	return false, l.State.EndError()
}

// endedError is the answer for a lease that is not in the live state,
// from its record, after the same token check. A lease the record holds
// as active although Redis does not hold it (an orphan, see doc.go) holds
// no seat: its expiry is recorded before the caller is told.
func (s *Store) endedError(ctx context.Context, leaseID, tokenHash string) error {
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return err
	}
	if !tokenMatches(l.TokenHash, tokenHash) {
		return server.ErrLeaseToken
	}
	if l.State == server.LeaseActive {
		if err := s.expireOrphan(ctx, l.LicenseID, leaseID); err != nil {
			return s.fail("record the expiry of a lease Redis does not hold", err)
		}
		if l, err = s.readLease(ctx, leaseID); err != nil {
			return err
		}
		if l.State == server.LeaseActive {
			// Redis holds it after all (a rebuild brought it in): the
			// caller tries again.
			return server.Unavailable(errors.New("lease came back to the live state"))
		}
		// As in observeExpiry: told only once Redis remembers the end.
		if err := s.dropEnded(ctx, l.LicenseID, leaseID); err != nil {
			return s.fail("record the expiry of a lease Redis does not hold", err)
		}
	}
	return l.State.EndError()
}

// expireOrphan records the expiry of an active lease that Redis does not
// hold: adopt.lua hands it to the expiring hash (unless Redis holds it),
// then ExpireLeases records it.
func (s *Store) expireOrphan(ctx context.Context, licenseID, leaseID string) error {
	r, err := s.rec.Session(ctx, leaseID)
	if errors.Is(err, record.ErrNotFound) || (err == nil && r.State != server.LeaseActive) {
		return nil // ended meanwhile
	}
	if err != nil {
		return err
	}
	if _, err := s.adoptOne(ctx, licenseID, []live.Lease{liveLease(r)}); err != nil {
		return err
	}
	_, err = s.ExpireLeases(ctx, []server.LeaseRef{{LicenseID: licenseID, LeaseID: leaseID}})
	return err
}

func tokenMatches(stored, given string) bool {
	return subtle.ConstantTimeCompare([]byte(stored), []byte(given)) == 1
}

// dropEnded removes released or revoked leases from the live state after
// their end is recorded. Callers tell nobody the lease ended until it
// succeeds (an observed end is final): on an error they answer UNAVAILABLE
// and a retry finds the end recorded and tries again. If nobody retries
// (the process died, the caller gave up), the write-behind flush finds the
// lease ended in the record at its next heartbeat and drops it (flush.go),
// and, heartbeat or not, the cleanup leader's reconciliation finds the
// note the record keeps of the end and drops it (dropRecordedEnds).
func (s *Store) dropEnded(ctx context.Context, licenseID string, ids ...string) error {
	if err := s.endLive(ctx, licenseID, ids); err != nil {
		return fmt.Errorf("remove ended leases from Redis: %w", err)
	}
	s.hb.forget(ids...)
	return nil
}

// endLive runs end.lua, within 5 s even when ctx has ended (a release whose
// caller went away still gives the seat back).
func (s *Store) endLive(ctx context.Context, licenseID string, ids []string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return s.endLiveNow(ctx, licenseID, ids)
}

func (s *Store) endLiveNow(ctx context.Context, licenseID string, ids []string) error {
	return s.live.End(ctx, licenseID, ids)
}

func (s *Store) ReturnedCertificates(ctx context.Context, tenantID string) ([]server.ReturnedCertificate, error) {
	return s.rec.ReturnedCertificates(ctx, tenantID)
}
