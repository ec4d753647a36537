package distributed

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"

	"github.com/seatd/seatd/server"
)

// maxAttempts bounds how often one call goes round when the live state
// changes under it (a rebuild, a concurrent end); each round is cheap.
const maxAttempts = 6

func (s *Store) Acquire(ctx context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	// The work is done through pointers, in small stack frames: the frames
	// of the hot path decide whether a call's goroutine (new for every RPC)
	// must grow its stack, and a growth, which copies the stack, cost more
	// than the rest of the call.
	out := new(server.AcquireResult)
	if err := s.acquire(ctx, &req, out); err != nil {
		return server.AcquireResult{}, err
	}
	return *out, nil
}

func (s *Store) acquire(ctx context.Context, req *server.AcquireRequest, out *server.AcquireResult) error {
	g := new(live.Acquisition)
	for range maxAttempts {
		licenseID, cached, err := s.resolveKey(ctx, req.LicenseKey)
		if err != nil {
			return err
		}
		// req.LeaseID is a new one after a grant that was not recorded.
		if err := s.live.Acquire(ctx, licenseID, req, g); err != nil {
			return s.fail("acquire", err)
		}
		var again bool
		switch g.Status {
		case live.StatusGranted:
			again, err = s.recordNew(ctx, req, g, out)
		case live.StatusHandedBack:
			again, err = s.recordRenewalTo(ctx, req, g, out)
		default:
			again, err = s.acquireRefused(ctx, req, licenseID, cached, g)
		}
		if !again {
			return err
		}
	}
	return s.fail("acquire", errors.New("live state kept changing; giving up"))
}

// acquireRefused handles acquire.lua's answers other than a grant: the
// error for the caller, or again to try anew.
func (s *Store) acquireRefused(ctx context.Context, req *server.AcquireRequest, licenseID string, cached bool, g *live.Acquisition) (again bool, err error) {
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
	case live.StatusDuplicate:
		return false, server.AlreadyExists("lease_id", "lease")
	case live.StatusFailed:
		return false, s.fail("acquire", fmt.Errorf("script: %s", g.Message))
	default:
		return false, s.fail("acquire", fmt.Errorf("unexpected script reply %q", g.Status))
	}
}

// recordRenewalTo is recordRenewal writing its result to out.
func (s *Store) recordRenewalTo(ctx context.Context, req *server.AcquireRequest, g *live.Acquisition, out *server.AcquireResult) (again bool, err error) {
	r, again, err := s.recordRenewal(ctx, *req, g)
	if err == nil && !again {
		*out = r
	}
	return again, err
}

// recordNew makes a granted lease durable: the seat is counted in Redis,
// the lease is recorded in PostgreSQL before Acquire returns. If it cannot
// be recorded the grant is undone. again asks the caller to try anew.
func (s *Store) recordNew(ctx context.Context, req *server.AcquireRequest, g *live.Acquisition, out *server.AcquireResult) (again bool, err error) {
	l := &out.Lease // field by field: no temporary copy on the stack
	l.ID, l.LicenseID, l.TenantID, l.TokenHash = g.LeaseID, g.License.ID, g.License.TenantID, req.TokenHash
	l.Fingerprint, l.User, l.Hostname, l.Metadata = req.Fingerprint, req.User, req.Hostname, cloneMap(req.Metadata)
	l.IdempotencyKey, l.DedupeKey, l.State = req.IdempotencyKey, g.DedupeKey, server.LeaseActive
	l.AcquiredAt, l.LastHeartbeatAt, l.ExpiresAt = g.Acquired, g.Heartbeat, g.Deadline
	// The lapsed leases whose seats this grant took are recorded expired
	// first: otherwise a rebuild (Redis loss) could count them again next
	// to this one.
	if len(g.Displaced) > 0 {
		if err := s.expireDisplaced(ctx, l.LicenseID, g.Displaced); err != nil {
			s.takeBack(ctx, l.LicenseID, l.ID)
			return false, s.fail("acquire: record the expiry of lapsed leases", err)
		}
	}
	// Recorded with the acquisitions that come at the same time (group
	// commit, commit.go), each under the conditions of insertOneSQL.
	inserted, err := s.insertSession(ctx, l, g.Epoch, g.Version)
	if err == nil && inserted {
		s.leaseInfo.Put(l.ID, infoOf(l))
		s.live.NoteDeadline(ctx, l.LicenseID, g.PrevFirst, l.ExpiresAt)
		out.License, out.SeatsInUse = g.License, g.InUse
		return false, nil
	}
	return s.notRecorded(ctx, req, l.LicenseID, l.ID, g, err)
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
// seats of (acquire.lua moved them to the expiring hash).
func (s *Store) expireDisplaced(ctx context.Context, licenseID string, ids []string) error {
	refs := make([]server.LeaseRef, len(ids))
	for i, id := range ids {
		refs[i] = server.LeaseRef{LicenseID: licenseID, LeaseID: id}
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
func (s *Store) notRecorded(ctx context.Context, req *server.AcquireRequest, licenseID, leaseID string, g *live.Acquisition, err error) (again bool, _ error) {
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
	again, err = s.grantOutdated(ctx, req, licenseID, g)
	if again {
		// The next round is a new grant under a new id: if the take-back
		// failed, the old grant is still in Redis, and acquire.lua would
		// answer the same id as a replay of it, judged by the settings the
		// record just refused.
		req.LeaseID = server.NewID(server.PrefixLeaseID)
	}
	return again, err
}

// grantOutdated handles a grant the record refused because its license is
// deleted, its live state was rebuilt, or its settings changed since
// (UpdateLicense: Redis judged by settings older than the record's).
func (s *Store) grantOutdated(ctx context.Context, req *server.AcquireRequest, licenseID string, g *live.Acquisition) (again bool, _ error) {
	lic, err := s.rec.License(ctx, licenseID)
	switch {
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
func (s *Store) recordRenewal(ctx context.Context, req server.AcquireRequest, g *live.Acquisition) (out server.AcquireResult, again bool, err error) {
	wait := 2 * time.Millisecond
	giveUp := time.Now().Add(s.recordWait)
	for {
		row, err := s.rec.RecordRenewal(ctx, record.Renewal{LeaseID: g.LeaseID, TokenHash: req.TokenHash,
			TokenSeq: g.TokenSeq, Heartbeat: g.Heartbeat, Deadline: g.Deadline, Epoch: g.Epoch, Version: g.Version})
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

// dropEnded removes released or revoked leases from the live state after
// their end is recorded. Callers tell nobody the lease ended until it
// succeeds (an observed end is final): on an error they answer UNAVAILABLE
// and a retry finds the end recorded and tries again. If nobody retries
// (the process died, the caller gave up), the write-behind flush finds the
// lease ended in the record at its next heartbeat and drops it (flush.go),
// and a lease that stops heartbeating stops counting at its deadline.
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

func (s *Store) Heartbeat(ctx context.Context, leaseID, tokenHash string) (server.Lease, error) {
	var l server.Lease
	if err := s.heartbeat(ctx, leaseID, tokenHash, &l); err != nil {
		return server.Lease{}, err
	}
	return l, nil
}

// heartbeat is Heartbeat writing the renewed lease to out, in small stack
// frames (see Acquire).
func (s *Store) heartbeat(ctx context.Context, leaseID, tokenHash string, out *server.Lease) error {
	info, err := s.leaseInfoOf(ctx, leaseID)
	if err != nil {
		return err
	}
	for range maxAttempts {
		b, err := s.live.Heartbeat(ctx, info.LicenseID, leaseID, tokenHash)
		if err != nil {
			return s.fail("heartbeat", err)
		}
		if b.Status == live.StatusRenewed {
			s.hb.add(leaseID, b.Heartbeat, b.Deadline)
			s.live.NoteDeadline(ctx, info.LicenseID, b.PrevFirst, b.Deadline)
			info.leaseTo(out, leaseID, tokenHash, b.Heartbeat, b.Deadline)
			return nil
		}
		if again, err := s.heartbeatRefused(ctx, info.LicenseID, leaseID, tokenHash, b.Status); !again {
			return err
		}
	}
	return s.fail("heartbeat", errors.New("live state kept changing; giving up"))
}

// heartbeatRefused handles heartbeat.lua's answers other than a renewal:
// the error for the caller, or again to try anew.
func (s *Store) heartbeatRefused(ctx context.Context, licenseID, leaseID, tokenHash string, status live.Status) (again bool, err error) {
	switch status {
	case live.StatusNoState:
		err := s.ensureLive(ctx, licenseID)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			return false, s.endedError(ctx, leaseID, tokenHash)
		}
		if err != nil {
			return false, s.fail("heartbeat: build live state", err)
		}
		return true, nil
	case live.StatusDeleted, live.StatusNoLease:
		return false, s.endedError(ctx, leaseID, tokenHash)
	case live.StatusWrongToken:
		return false, server.ErrLeaseToken
	case live.StatusExpired:
		return s.observeExpiry(ctx, licenseID, leaseID)
	case live.StatusInactive:
		return false, server.ErrLicenseInactive
	case live.StatusLicenseExpired:
		return false, server.ErrLicenseExpired
	default:
		return false, s.fail("heartbeat", fmt.Errorf("unexpected script reply %q", status))
	}
}

// observeExpiry answers a call that found the lease past its deadline
// (and not revived). Observed ends are final: the expiry is recorded
// before anyone is told, so that no rebuild or revival brings the lease
// back, and the caller is told only once Redis remembers the end too
// (end.lua, as for a release): a rebuild whose snapshot of the record was
// read before the expiry was recorded then leaves the lease out.
// again: the lease was renewed meanwhile, judge the call anew.
func (s *Store) observeExpiry(ctx context.Context, licenseID, leaseID string) (again bool, err error) {
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
	return false, endError(l.State)
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
	return endError(l.State)
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

// endError is the error for using a lease in state st. An active lease that
// is not in the live state holds no seat: it counts as expired.
func endError(st server.LeaseState) error {
	switch st {
	case server.LeaseReleased:
		return server.ErrLeaseReleased
	case server.LeaseRevoked:
		return server.ErrLeaseRevoked
	default:
		return server.ErrLeaseExpired
	}
}

func tokenMatches(stored, given string) bool {
	return subtle.ConstantTimeCompare([]byte(stored), []byte(given)) == 1
}

func (s *Store) Release(ctx context.Context, leaseID, tokenHash string) (server.Lease, error) {
	var l server.Lease
	if err := s.release(ctx, leaseID, tokenHash, &l); err != nil {
		return server.Lease{}, err
	}
	return l, nil
}

// release is Release writing the released lease to out, in small stack
// frames (see Acquire).
func (s *Store) release(ctx context.Context, leaseID, tokenHash string, out *server.Lease) error {
	info, err := s.leaseInfoOf(ctx, leaseID)
	if err != nil {
		return err
	}
	for range maxAttempts {
		c, err := s.live.Check(ctx, info.LicenseID, leaseID, tokenHash)
		if err != nil {
			return s.fail("release", err)
		}
		if c.Status != live.StatusLive {
			if again, err := s.releaseRefused(ctx, info.LicenseID, leaseID, tokenHash, c.Status, out); !again {
				return err
			}
			continue
		}
		ok, err := s.rec.ReleaseSession(ctx, leaseID, c.Now, c.Heartbeat, c.Deadline, out)
		if err != nil {
			return s.fail("release", err)
		}
		if !ok { // ended meanwhile: by another release (then idempotent) or not
			err := s.releaseEndedTo(ctx, leaseID, tokenHash, out)
			if err == nil || server.ErrorReason(err) == server.ReasonLeaseRevoked {
				// Released or revoked in the record yet live in Redis: the
				// removal after that end failed (or has not run yet).
				if derr := s.dropEnded(ctx, info.LicenseID, leaseID); derr != nil {
					return s.fail("release", derr)
				}
			}
			return err
		}
		if err := s.dropEnded(ctx, info.LicenseID, leaseID); err != nil {
			*out = server.Lease{}
			return s.fail("release", err)
		}
		return nil
	}
	return s.fail("release", errors.New("live state kept changing; giving up"))
}

// releaseRefused handles check.lua's answers other than LIVE: the error
// or the answer for the caller (in out), or again to try anew.
func (s *Store) releaseRefused(ctx context.Context, licenseID, leaseID, tokenHash string, status live.Status, out *server.Lease) (again bool, err error) {
	switch status {
	case live.StatusNoState:
		err := s.ensureLive(ctx, licenseID)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			return false, s.releaseEndedTo(ctx, leaseID, tokenHash, out)
		}
		if err != nil {
			return false, s.fail("release: build live state", err)
		}
		return true, nil
	case live.StatusDeleted, live.StatusNoLease:
		return false, s.releaseEndedTo(ctx, leaseID, tokenHash, out)
	case live.StatusWrongToken:
		return false, server.ErrLeaseToken
	case live.StatusExpired:
		return s.observeExpiry(ctx, licenseID, leaseID)
	default:
		return false, s.fail("release", fmt.Errorf("unexpected script reply %q", status))
	}
}

// releaseEndedTo is releaseEnded writing its lease to out.
func (s *Store) releaseEndedTo(ctx context.Context, leaseID, tokenHash string, out *server.Lease) error {
	l, err := s.releaseEnded(ctx, leaseID, tokenHash)
	if err == nil {
		*out = l
	}
	return err
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
	return server.Lease{}, endError(l.State)
}

func (s *Store) Revoke(ctx context.Context, tenantID, leaseID string) (server.Lease, error) {
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	if l.TenantID != tenantID {
		return server.Lease{}, server.ErrLeaseNotFound
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

// readLease reads the record of a lease. ErrLeaseNotFound if none.
func (s *Store) readLease(ctx context.Context, leaseID string) (server.Lease, error) {
	r, err := s.rec.Lease(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	s.leaseInfo.Put(r.ID, infoOf(&r.Lease))
	return r.Lease, nil
}

// leaseInfoOf returns the fixed fields of a lease, cached.
func (s *Store) leaseInfoOf(ctx context.Context, leaseID string) (*leaseInfo, error) {
	if i, ok := s.leaseInfo.Get(leaseID); ok {
		return i, nil
	}
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return nil, err
	}
	return infoOf(&l), nil
}

func (s *Store) GetLease(ctx context.Context, tenantID, leaseID string) (server.Lease, error) {
	l, err := s.readLease(ctx, leaseID)
	if err != nil {
		return server.Lease{}, err
	}
	if l.TenantID != tenantID {
		return server.Lease{}, server.ErrLeaseNotFound
	}
	if l.State != server.LeaseActive {
		return l, nil
	}
	vals, _, err := s.peek(ctx, l.LicenseID, leaseID)
	if err != nil {
		return server.Lease{}, s.fail("get lease", err)
	}
	if v, ok := vals[leaseID]; ok {
		l = overlay(l, v)
	}
	return l, nil
}

func (s *Store) ListLeases(ctx context.Context, tenantID, licenseID string, state server.LeaseState, p server.Page) ([]server.Lease, string, error) {
	if _, err := s.rec.TenantLicense(ctx, tenantID, licenseID); err != nil {
		return nil, "", err
	}
	page, next, err := s.rec.ListSessions(ctx, licenseID, state, p)
	if err != nil {
		return nil, "", err
	}
	var active []string
	for _, l := range page {
		if l.State == server.LeaseActive {
			active = append(active, l.ID)
		}
	}
	if len(active) > 0 {
		vals, _, err := s.peek(ctx, licenseID, active...)
		if err != nil {
			return nil, "", s.fail("list leases", err)
		}
		for i, l := range page {
			if v, ok := vals[l.ID]; ok {
				page[i] = overlay(l, v)
			}
		}
	}
	return page, next, nil
}

func (s *Store) SeatsInUse(ctx context.Context, tenantID, licenseID string) (int, error) {
	var c live.Count
	err := s.withLiveState(ctx, licenseID, func() (err error) {
		c, err = s.live.Count(ctx, licenseID)
		return err
	})
	if err != nil {
		return 0, s.fail("seats in use", err)
	}
	if c.TenantID != tenantID || c.Deleted {
		return 0, server.ErrLicenseNotFound
	}
	return c.InUse, nil
}
