package distributed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Grant -> record. An acquisition is granted in the live state
// (acquire.lua counts the seats atomically) and recorded before it is
// answered; a grant the record refuses is taken back, one whose record is
// in doubt is settled by a rebuild (doc.go, "Write order", "Crash cases").

// maxAttempts bounds how often one call goes round when the live state
// changes under it (a rebuild, a concurrent end); each round is cheap.
const maxAttempts = 6

func (s *Store) Acquire(ctx context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	if req.Feature != "" {
		return s.acquirePools(ctx, req) // features.go
	}
	var g live.Acquisition
	for range maxAttempts {
		licenseID, cached, err := s.resolveKey(ctx, req.LicenseKey)
		if err != nil {
			return server.AcquireResult{}, err
		}
		if s.hasPolicy(licenseID) {
			return s.acquirePools(ctx, req) // policy.go
		}
		// req.LeaseID is a new one after a grant that was not recorded.
		if err := s.live.Acquire(ctx, licenseID, &req, &g); err != nil {
			return server.AcquireResult{}, s.fail("acquire", err)
		}
		var (
			r     server.AcquireResult
			retry bool
		)
		switch g.Status {
		case live.StatusGranted:
			r, retry, err = s.recordNew(ctx, &req, &g)
		case live.StatusHandedBack:
			r, retry, err = s.recordRenewal(ctx, req, &g)
		case live.StatusPolicy:
			s.notePolicy(licenseID, true)
			return s.acquirePools(ctx, req)
		default:
			retry, err = s.acquireRefused(ctx, &req, licenseID, cached, &g)
		}
		if !retry && err != nil {
			return server.AcquireResult{}, err
		}
		if !retry {
			return r, nil
		}
	}
	return server.AcquireResult{}, s.fail("acquire", errors.New("live state kept changing; giving up"))
}

// acquireRefused handles acquire.lua's answers other than a grant: the
// error for the caller, or retry: the live state changed under the call, judge it anew.
func (s *Store) acquireRefused(ctx context.Context, req *server.AcquireRequest, licenseID string, cached bool, g *live.Acquisition) (retry bool, err error) {
	switch g.Status {
	case live.StatusNoState:
		err := s.ensureLive(ctx, licenseID)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			s.licenseKeys.Drop(req.LicenseKey)
			if cached {
				return true, nil // the key may open another license now
			}
		}
		if err != nil {
			return false, s.fail("acquire: build live state", err)
		}
		return true, nil
	case live.StatusDeleted:
		s.licenseKeys.Drop(req.LicenseKey)
		if !cached {
			return false, server.ErrLicenseNotFound
		}
		return true, nil
	case live.StatusInactive:
		return false, server.ErrLicenseInactive
	case live.StatusLicenseExpired:
		return false, server.ErrLicenseExpired
	case live.StatusExhausted:
		return false, server.SeatsExhausted(g.InUse, g.Limit)
	case live.StatusNoBorrow, live.StatusBorrowLong, live.StatusBorrowPastExpiry, live.StatusBorrowLimit:
		// The same rule the embedded store applies, on the settings and
		// at the time the script judged by, for the same error; the script
		// counted the borrowed seats (live and returned early) against
		// their limit.
		if g.Status == live.StatusBorrowLimit {
			return false, server.BorrowLimit(g.InUse, g.Limit)
		}
		if err := g.License.CheckBorrow(g.Acquired, req.BorrowFor, 0, 0); err != nil {
			return false, err
		}
		return false, s.fail("acquire", fmt.Errorf("script refused a borrow (%s) the license allows", g.Status))
	case live.StatusDuplicate:
		return false, server.AlreadyExists("lease_id", "lease")
	case live.StatusFailed:
		return false, s.fail("acquire", fmt.Errorf("script: %s", g.Message))
	default:
		return false, s.fail("acquire", fmt.Errorf("unexpected script reply %q", g.Status))
	}
}

// recordNew makes a granted lease durable: the seat is counted in Redis,
// the lease is recorded in PostgreSQL before Acquire returns. If it cannot
// be recorded the grant is undone; retry asks the caller to try anew.
func (s *Store) recordNew(ctx context.Context, req *server.AcquireRequest, g *live.Acquisition) (out server.AcquireResult, retry bool, err error) {
	l := &out.Lease
	l.ID, l.LicenseID, l.TenantID, l.TokenHash = g.LeaseID, g.License.ID, g.License.TenantID, req.TokenHash
	l.Fingerprint, l.User, l.Hostname, l.Metadata = req.Fingerprint, req.User, req.Hostname, cloneMap(req.Metadata)
	l.IdempotencyKey, l.DedupeKey, l.State = req.IdempotencyKey, g.DedupeKey, server.LeaseActive
	l.AcquiredAt, l.LastHeartbeatAt, l.ExpiresAt = g.Acquired, g.Heartbeat, g.Deadline
	l.Borrowed, l.Feature, l.Version, l.Reservation = req.BorrowFor > 0, req.Feature, req.Version, g.Reservation
	// The lapsed leases whose seats or keys this grant took are recorded
	// expired first, and the live lease it replaced revoked: otherwise a
	// rebuild (Redis loss) could count them again next to this one.
	if g.Replaced != nil {
		if err := s.recordReplaced(ctx, l.ID, g.Replaced, g.Acquired); err != nil {
			s.takeBack(ctx, l.LicenseID, l.ID)
			return server.AcquireResult{}, false, s.fail("acquire: record the end of the lease replaced", err)
		}
	}
	if len(g.Displaced) > 0 {
		if err := s.expireDisplaced(ctx, l.LicenseID, g.Displaced, g.DisplacedPools); err != nil {
			s.takeBack(ctx, l.LicenseID, l.ID)
			return server.AcquireResult{}, false, s.fail("acquire: record the expiry of lapsed leases", err)
		}
	}
	// Recorded with the acquisitions that come at the same time (group
	// commit, record/commit.go), each under the conditions of its insert.
	inserted, err := s.insertSession(ctx, l, g.Epoch, g.Version)
	if err == nil && inserted {
		s.leaseInfo.Put(l.ID, infoOf(l))
		s.live.NoteDeadline(ctx, l.LicenseID, g.PrevFirst, l.ExpiresAt)
		out.License, out.SeatsInUse = g.License, g.InUse
		return out, false, nil
	}
	retry, err = s.notRecorded(ctx, req, l.LicenseID, l.ID, g, err)
	return server.AcquireResult{}, retry, err
}

// recordReplaced records the end of the live lease of another user or
// host that a grant under a site policy replaced (acquire_pools.lua took
// it out of the live state into the expiring hash, as take.lua does):
// revoked, audited as the store's own act with the lease that replaced
// it, then dropped from Redis. If it ended meanwhile (its expiry was
// observed), that end stands, unaudited.
func (s *Store) recordReplaced(ctx context.Context, by string, rp *live.ReplacedLease, now time.Time) error {
	ended, ok, err := s.rec.EndLease(ctx, rp.LeaseID, server.LeaseRevoked, now, &rp.Heartbeat, &rp.Deadline)
	if err != nil || !ok {
		return err
	}
	err = s.rec.AppendAudit(ctx, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: ended.TenantID, Actor: "system", Action: "lease.replace",
		Resource: "lease", ResourceID: ended.ID, At: now,
		Details: map[string]string{"license_id": ended.LicenseID, "replaced_by": by},
	})
	if err != nil {
		return err
	}
	// Held in the expiring hash, it holds no seat: a failed drop is
	// finished by the reconciliation of recorded ends (dropEnded).
	if err := s.dropEnded(ctx, rp.PoolID, rp.LeaseID); err != nil {
		s.log.Warn("distributed store: drop a replaced lease from Redis; the reconciliation will", "lease", rp.LeaseID, "err", err)
	}
	return nil
}

// insertSession records a granted lease (record.InsertSession), through
// the tests' insertHook when set.
func (s *Store) insertSession(ctx context.Context, l *server.Lease, epoch, version int64) (bool, error) {
	if s.insertHook != nil {
		return s.insertHook(func() (bool, error) { return s.rec.InsertSession(ctx, l, epoch, version) })
	}
	return s.rec.InsertSession(ctx, l, epoch, version)
}

// expireDisplaced records the expiry of lapsed leases a grant took the
// seats or keys of (acquire.lua moved them to the expiring hash); pools
// names the pool of each when they may be in other pools of the license
// (acquire_pools.lua), nil when all are the grant's.
func (s *Store) expireDisplaced(ctx context.Context, licenseID string, ids, pools []string) error {
	refs := make([]server.LeaseRef, len(ids))
	for i, id := range ids {
		refs[i] = server.LeaseRef{LicenseID: licenseID, LeaseID: id}
		if pools != nil {
			refs[i].LicenseID = pools[i]
		}
	}
	_, err := s.ExpireLeases(ctx, refs)
	return err
}

// takeBack gives back the seat of a grant that is certainly not recorded.
func (s *Store) takeBack(ctx context.Context, licenseID, leaseID string) {
	if err := s.endLive(ctx, licenseID, []string{leaseID}); err != nil {
		s.log.Error("distributed store: give back the seat of an unrecorded grant; it holds it until its deadline", "license", licenseID, "err", err)
	}
}

// notRecorded handles a grant that was not recorded (err, or a deleted
// license, a rebuilt live state or newer settings) and says what to do.
func (s *Store) notRecorded(ctx context.Context, req *server.AcquireRequest, licenseID, leaseID string, g *live.Acquisition, err error) (retry bool, _ error) {
	if err != nil && !record.SurelyNotWritten(err) {
		// The insert's outcome is unknown: the session may be recorded.
		// Taking the grant back would then leave an active session that
		// Redis does not hold, which a later rebuild would count next to
		// the grant of this client's retry (two seats for one client).
		// Rebuild from the record instead: its lock on the license row
		// waits for the insert, the grant stays if the insert committed
		// and goes if not, and the new epoch keeps a late commit out. In
		// the background, so that callers do not pile up behind a
		// PostgreSQL that is already slow; a retry of the client meanwhile
		// is handed the grant back and recordRenewal settles it. If the
		// rebuild fails, the grant holds its seat until its deadline at
		// most.
		s.background(func(ctx context.Context) {
			if rerr := s.rebuildFrom(ctx, licenseID, g.Epoch); rerr != nil {
				s.log.Warn("distributed store: a grant whose record is in doubt keeps its seat until its deadline or its client's retry",
					"license", licenseID, "err", rerr)
			}
		})
		return false, s.fail("acquire: record lease", err)
	}
	s.takeBack(ctx, licenseID, leaseID)
	if record.IsUniqueViolation(err) {
		return false, server.AlreadyExists("lease_id", "lease")
	}
	if err != nil {
		return false, s.fail("acquire: record lease", err)
	}
	retry, err = s.grantOutdated(ctx, req, licenseID, g)
	if retry {
		// The next round is a new grant under a new id: if the take-back
		// failed, the old grant is still in Redis, and acquire.lua would
		// answer the same id as a replay of it, judged by the settings the
		// record just refused.
		req.LeaseID = server.NewID(server.PrefixLeaseID)
	}
	return retry, err
}

// grantOutdated handles a grant the record refused because its license is
// deleted, its live state was rebuilt, or its settings changed since
// (UpdateLicense: Redis judged by settings older than the record's).
func (s *Store) grantOutdated(ctx context.Context, req *server.AcquireRequest, licenseID string, g *live.Acquisition) (retry bool, _ error) {
	lic, err := s.rec.License(ctx, licenseID)
	switch {
	case err == nil && lic.Deleted && lic.IsGrant():
		return true, nil // the grant went: judge the license's grants anew
	case errors.Is(err, record.ErrNotFound) || (err == nil && lic.Deleted):
		s.licenseKeys.Drop(req.LicenseKey)
		return false, server.ErrLicenseNotFound
	case err != nil:
		return false, s.fail("acquire: read license", err)
	}
	if lic.Epoch == g.Epoch && lic.Version != g.Version {
		// The change did not reach Redis (or not yet): push it now, and
		// grant nothing until it is there.
		if err := s.setConf(ctx, lic); err != nil {
			return false, s.fail("acquire: push license settings", err)
		}
		return true, nil
	}
	// The live state was rebuilt since the grant: grant again on the new one.
	if err := s.ensureLive(ctx, licenseID); err != nil {
		return false, s.fail("acquire: build live state", err)
	}
	return true, nil
}

// recordRenewal records the token rotation of a lease handed back, so that
// the new token survives a loss of Redis.
func (s *Store) recordRenewal(ctx context.Context, req server.AcquireRequest, g *live.Acquisition) (out server.AcquireResult, retry bool, err error) {
	wait := 2 * time.Millisecond
	giveUp := time.Now().Add(s.recordWait)
	for {
		row, err := s.rec.RecordRenewal(ctx, record.Renewal{LeaseID: g.LeaseID, TokenHash: req.TokenHash,
			TokenSeq: g.TokenSeq, Heartbeat: g.Heartbeat, Deadline: g.Deadline, Epoch: g.Epoch, Version: g.Version,
			Reclaimed: g.Reclaimed})
		if err == nil {
			return s.renewed(ctx, g, row.Lease, req.TokenHash), false, nil
		}
		if !errors.Is(err, record.ErrNotFound) {
			return out, false, s.fail("acquire: record token rotation", err)
		}
		// Nothing written: find out why.
		var lic record.LicenseRow
		row, err = s.rec.Session(ctx, g.LeaseID)
		found := err == nil
		switch {
		case errors.Is(err, record.ErrNotFound):
		case err != nil:
			return out, false, s.fail("acquire: read lease", err)
		default:
			if lic, err = s.rec.License(ctx, row.LicenseID); err != nil {
				return out, false, s.fail("acquire: read license", err)
			}
		}
		switch {
		case !found:
			// The acquisition that created the lease has not recorded it
			// yet: wait for it, or for it to give the seat back.
			vals, _, err := s.peek(ctx, g.License.ID, g.LeaseID)
			if err != nil {
				return out, false, s.fail("acquire", err)
			}
			if v, ok := vals[g.LeaseID]; !ok || v.Expiring {
				return out, true, nil // given back: acquire anew
			}
			if time.Now().After(giveUp) {
				// Its acquisition died between grant and record. Rebuild
				// the live state from the record: that drops the grant and
				// makes sure it can never be recorded.
				s.log.Warn("distributed store: dropping a lease granted but never recorded", "lease", g.LeaseID, "license", g.License.ID)
				if err := s.rebuildFrom(ctx, g.License.ID, g.Epoch); err != nil {
					return out, false, s.fail("acquire: rebuild live state", err)
				}
				return out, true, nil
			}
			select {
			case <-ctx.Done():
				return out, false, server.Unavailable(ctx.Err())
			case <-time.After(wait):
			}
			wait = min(2*wait, 50*time.Millisecond)
		case lic.Deleted && lic.IsGrant():
			return out, true, nil // the grant went: judge the license's grants anew
		case lic.Deleted:
			s.licenseKeys.Drop(req.LicenseKey)
			return out, false, server.ErrLicenseNotFound
		case row.State != server.LeaseActive:
			// It ended in the record (the record is the truth), and Redis
			// may not know: the process that ended it died before end.lua,
			// or end.lua failed. acquire.lua would otherwise hand the
			// lease back to every retry, moving its deadline each time,
			// so that it never lapses. Drop it, then acquire anew.
			if err := s.dropEnded(ctx, g.License.ID, g.LeaseID); err != nil {
				return out, false, s.fail("acquire", err)
			}
			return out, true, nil
		case lic.Epoch != g.Epoch:
			if err := s.ensureLive(ctx, row.LicenseID); err != nil {
				return out, false, s.fail("acquire: build live state", err)
			}
			return out, true, nil
		case lic.Version != g.Version:
			// Handed back under settings older than the record's: bring
			// Redis up to date and judge again.
			if err := s.setConf(ctx, lic); err != nil {
				return out, false, s.fail("acquire: push license settings", err)
			}
			return out, true, nil
		case row.TokenSeq >= g.TokenSeq:
			// A later rotation is recorded already.
			return s.renewed(ctx, g, row.Lease, req.TokenHash), false, nil
		}
	}
}

func (s *Store) renewed(ctx context.Context, g *live.Acquisition, rec server.Lease, tokenHash string) server.AcquireResult {
	s.leaseInfo.Put(rec.ID, infoOf(&rec))
	l := infoOf(&rec).lease(rec.ID, tokenHash, g.Heartbeat, g.Deadline)
	s.live.NoteDeadline(ctx, rec.LicenseID, g.PrevFirst, g.Deadline)
	return server.AcquireResult{Lease: l, License: g.License, SeatsInUse: g.InUse, Existing: true}
}

// resolveKey finds the live license of a key: from the process cache, else
// from PostgreSQL. cached tells which, since a cached answer may be stale
// (the license deleted, the key reused).
func (s *Store) resolveKey(ctx context.Context, key string) (id string, cached bool, err error) {
	if id, ok := s.licenseKeys.Get(key); ok {
		return id, true, nil
	}
	if id, err = s.rec.LicenseIDByKey(ctx, key); err != nil {
		return "", false, err
	}
	s.licenseKeys.Put(key, id)
	return id, false, nil
}
