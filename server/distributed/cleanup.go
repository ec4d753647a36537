package distributed

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// reconcileLimit bounds the leases one reconciliation reads.
const reconcileLimit = 10_000

// DueLeases walks the expiry hint: only licenses whose hint is at or before
// now are asked (due.lua), in hint order, and the walk stops as soon as no
// further license can hold one of the first `limit` due leases. The cost
// grows with the licenses holding due (or recently renewed) leases, not
// with all leases.
func (s *Store) DueLeases(ctx context.Context, after *server.LeaseRef, limit int) ([]server.LeaseRef, error) {
	if limit <= 0 {
		limit = server.DefaultPageSize
	}
	now, err := s.redisNow(ctx)
	if err != nil {
		return nil, s.fail("due leases", err)
	}
	nowUS := timeUS(now)
	if after == nil {
		s.maybeReconcile(ctx, now)
	}
	keys := s.keys.expiry()
	cands, err := s.rdb.ZRangeByScoreWithScores(ctx, keys[0], &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(nowUS, 10)}).Result()
	if err != nil {
		return nil, s.fail("due leases", err)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	members := make([]string, len(cands))
	for i, c := range cands {
		members[i] = fmt.Sprint(c.Member)
	}
	gens, err := s.rdb.HMGet(ctx, keys[1], members...).Result()
	if err != nil {
		return nil, s.fail("due leases", err)
	}

	var out []server.LeaseRef
	for i, c := range cands {
		hint := int64(c.Score)
		if len(out) >= limit && hint > timeUS(out[limit-1].ExpiresAt) {
			break // every lease of the rest is due later than the page's last
		}
		licenseID := members[i]
		refs, first, err := s.dueOf(ctx, licenseID, nowUS, after, limit)
		if err != nil {
			return nil, s.fail("due leases", err)
		}
		out = append(out, refs...)
		slices.SortFunc(out, compareRefs)
		out = out[:min(len(out), limit)]
		switch {
		case first < 0 || first > hint:
			gen := "0"
			if gens[i] != nil {
				gen = fmt.Sprint(gens[i])
			}
			if err := scriptFixHint.Run(ctx, s.rdb, keys, licenseID, hint, gen, first).Err(); err != nil {
				s.log.Warn("distributed store: repair expiry hint", "license", licenseID, "err", err)
			}
		case first < hint:
			s.lowerHint(ctx, licenseID, first)
		}
	}
	return out, nil
}

// dueOf lists the due leases of one license after the cursor, and the
// earliest deadline it holds (-1: none).
func (s *Store) dueOf(ctx context.Context, licenseID string, nowUS int64, after *server.LeaseRef, limit int) ([]server.LeaseRef, int64, error) {
	cdl, cid := "", ""
	if after != nil {
		cdl, cid = strconv.FormatInt(timeUS(after.ExpiresAt), 10), after.LeaseID
	}
	for range maxAttempts {
		res, err := scriptDue.Run(ctx, s.rdb, s.keys.license(licenseID), nowUS, cdl, cid, limit).Slice()
		if err != nil {
			return nil, 0, err
		}
		if str(res[0]) == "NOCONF" {
			err := s.ensureLive(ctx, licenseID)
			if server.ErrorReason(err) == server.ReasonLicenseNotFound {
				return nil, -1, nil
			}
			if err != nil {
				return nil, 0, err
			}
			continue
		}
		refs := make([]server.LeaseRef, 0, (len(res)-2)/2)
		for i := 2; i+1 < len(res); i += 2 {
			refs = append(refs, server.LeaseRef{LeaseID: str(res[i]), LicenseID: licenseID, ExpiresAt: usTime(num(res[i+1]))})
		}
		return refs, num(res[1]), nil
	}
	return nil, 0, fmt.Errorf("license %s: live state kept changing", licenseID)
}

func compareRefs(a, b server.LeaseRef) int {
	return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.LeaseID, b.LeaseID))
}

// maybeReconcile re-derives expiry hints from PostgreSQL, at most every
// reconcileEvery: the active leases whose recorded deadline has passed. It
// repairs what the hint can lose (a crash between a grant and its hint, a
// Redis restart) and hands the cleaner orphans (adopt.lua). Failures are
// logged; the next pass tries again.
func (s *Store) maybeReconcile(ctx context.Context, now time.Time) {
	s.reconcileMu.Lock()
	if !s.lastReconcile.IsZero() && time.Since(s.lastReconcile) < reconcileEvery {
		s.reconcileMu.Unlock()
		return
	}
	s.lastReconcile = time.Now()
	s.reconcileMu.Unlock()
	if err := s.reconcile(ctx, now); err != nil {
		s.log.Warn("distributed store: reconcile expiry hints from PostgreSQL", "err", err)
	}
}

func (s *Store) reconcile(ctx context.Context, now time.Time) error {
	rows, _ := s.pool.Query(ctx, `SELECT `+sessionCols("")+` FROM sessions
		WHERE state = 'active' AND expires_at <= $1 ORDER BY expires_at LIMIT $2`, now, reconcileLimit)
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessionRow, error) { return scanSession(r) })
	if err != nil {
		return err
	}
	byLicense := map[string][]any{}
	for _, l := range recs {
		byLicense[l.LicenseID] = append(byLicense[l.LicenseID], l.ID, l.TokenHash, timeUS(l.AcquiredAt),
			timeUS(l.LastHeartbeatAt), timeUS(l.ExpiresAt), l.DedupeKey, l.IdempotencyKey, l.tokenSeq)
	}
	for licenseID, args := range byLicense {
		for range 2 {
			res, err := scriptAdopt.Run(ctx, s.rdb, s.keys.license(licenseID), args...).Slice()
			if err != nil {
				return err
			}
			if str(res[0]) == "NOCONF" {
				if err := s.ensureLive(ctx, licenseID); err != nil && server.ErrorReason(err) != server.ReasonLicenseNotFound {
					return err
				}
				continue
			}
			if n := num(res[1]); n > 0 {
				s.log.Warn("distributed store: adopted active leases unknown to Redis for cleanup", "license", licenseID, "leases", n)
			}
			s.lowerHint(ctx, licenseID, num(res[2]))
			break
		}
	}
	return nil
}

// ExpireLeases ends zombies in three steps (doc.go): per license, a script
// takes the leases still past their deadline out of the live state into the
// expiring hash; one PostgreSQL statement records all of them (state,
// usage and cleanup events, audit), exactly once; then they leave the
// expiring hash. If the record fails they stay there: they hold no seat,
// and the next pass finds them again (invariant 6).
func (s *Store) ExpireLeases(ctx context.Context, refs []server.LeaseRef) ([]server.Lease, error) {
	byLicense := map[string][]any{}
	seen := make(map[string]bool, len(refs))
	for _, ref := range refs {
		if seen[ref.LeaseID] {
			continue
		}
		seen[ref.LeaseID] = true
		licenseID := ref.LicenseID
		if licenseID == "" {
			info, err := s.leaseInfoOf(ctx, ref.LeaseID)
			if server.ErrorCode(err) == server.ENOTFOUND {
				continue
			}
			if err != nil {
				return nil, err
			}
			licenseID = info.LicenseID
		}
		byLicense[licenseID] = append(byLicense[licenseID], ref.LeaseID)
	}
	var (
		ids, owners    []string
		hbs, dls, nows []time.Time
	)
	for licenseID, args := range byLicense {
		for attempt := 0; ; attempt++ {
			if attempt == maxAttempts {
				return nil, s.fail("expire leases", fmt.Errorf("license %s: live state kept changing", licenseID))
			}
			res, err := scriptExpire.Run(ctx, s.rdb, s.keys.license(licenseID), args...).Slice()
			if err != nil {
				return nil, s.fail("expire leases", err)
			}
			if str(res[0]) == "NOCONF" {
				err := s.ensureLive(ctx, licenseID)
				if server.ErrorReason(err) == server.ReasonLicenseNotFound {
					break
				}
				if err != nil {
					return nil, s.fail("expire leases: build live state", err)
				}
				continue
			}
			now := usTime(num(res[1]))
			for i := 2; i+3 < len(res); i += 4 {
				ids = append(ids, str(res[i]))
				owners = append(owners, licenseID)
				hbs = append(hbs, usTime(num(res[i+2])))
				dls = append(dls, usTime(num(res[i+3])))
				nows = append(nows, now)
			}
			break
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}

	rows, _ := s.pool.Query(ctx, `
		WITH v AS (
			SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[]) AS v(id, hb, dl, now)
		), locked AS (
			-- Lock in id order, so that two cleaners never deadlock.
			SELECT s.id FROM sessions s WHERE s.id IN (SELECT id FROM v) AND s.state = 'active'
			ORDER BY s.id FOR UPDATE
		), ended AS (
			UPDATE sessions s SET state = 'expired',
				ended_at = GREATEST(v.now, s.acquired_at), expired_at = GREATEST(v.now, s.acquired_at),
				last_heartbeat_at = GREATEST(s.last_heartbeat_at, v.hb), expires_at = v.dl
			FROM v, locked WHERE s.id = v.id AND s.id = locked.id AND s.state = 'active'
			RETURNING `+sessionCols("s")+`
		), usage AS (
			INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
			SELECT id, license_id, tenant_id, 'expired', acquired_at, last_heartbeat_at,
				`+sqlDurationUS("last_heartbeat_at", "acquired_at")+`
			FROM ended ON CONFLICT (lease_id) DO NOTHING
		), cleanup AS (
			INSERT INTO cleanup_events (lease_id, license_id, tenant_id, cleanup_type, last_heartbeat_at, expires_at, cleaned_at)
			SELECT id, license_id, tenant_id, 'zombie', last_heartbeat_at, expires_at, ended_at
			FROM ended ON CONFLICT (lease_id) DO NOTHING
		), audit AS (
			INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
			SELECT `+sqlAuditID+`, tenant_id, 'system', 'lease.expire', 'lease', id,
				jsonb_build_object('license_id', license_id), ended_at
			FROM ended
		)
		SELECT `+sessionCols("")+` FROM ended`, ids, hbs, dls, nows)
	expired, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Lease, error) {
		l, err := scanSession(r)
		return l.Lease, err
	})
	if err != nil {
		// Nothing is recorded; the leases stay in the expiring hash and
		// the next pass records them.
		return nil, s.fail("expire leases", err)
	}

	// Recorded now, or ended before by someone else: forget them in Redis.
	done := map[string][]string{}
	for i, id := range ids {
		done[owners[i]] = append(done[owners[i]], id)
	}
	for licenseID, lids := range done {
		s.dropLive(ctx, licenseID, lids...)
	}
	return expired, nil
}
