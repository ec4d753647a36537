package distributed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// Licenses live in PostgreSQL. Redis holds a copy of the settings that
// acquisitions and heartbeats judge by (the "conf" hash of the license's
// live state). Only a rebuild creates that copy (live.go); changes update
// it after they commit, and only ever to a higher version.

func (s *Store) CreateLicense(ctx context.Context, l server.License) (server.License, error) {
	l = normalizeLicense(l)
	_, err := s.pool.Exec(ctx, `INSERT INTO licenses (id, tenant_id, key, name, seats, overdraft, lease_ttl_us,
		revival_window_us, leasing_strategy, active, expires_at, metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14)`,
		l.ID, l.TenantID, l.Key, l.Name, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(),
		l.RevivalWindow.Microseconds(), string(l.LeasingStrategy), l.Active, optTime(l.ExpiresAt),
		jsonMap(l.Metadata), l.CreatedAt, l.UpdatedAt)
	if pe := pgError(err); pe != nil {
		switch {
		case pe.Code == pgForeignKeyViolation:
			return server.License{}, server.ErrTenantNotFound
		case pe.Code == pgUniqueViolation && pe.ConstraintName == "licenses_key_live_key":
			return server.License{}, conflict("license.key", "license key")
		case pe.Code == pgUniqueViolation:
			return server.License{}, conflict("license.id", "license")
		}
	}
	if err != nil {
		return server.License{}, s.fail("create license", err)
	}
	return l, nil
}

// normalizeLicense gives a license the shape it has after a round trip
// through the database.
func normalizeLicense(l server.License) server.License {
	l.Metadata = cloneMap(l.Metadata)
	l.ExpiresAt = l.ExpiresAt.UTC().Truncate(time.Microsecond)
	l.CreatedAt = l.CreatedAt.UTC().Truncate(time.Microsecond)
	l.UpdatedAt = l.UpdatedAt.UTC().Truncate(time.Microsecond)
	l.LeaseTTL = l.LeaseTTL.Truncate(time.Microsecond)
	l.RevivalWindow = l.RevivalWindow.Truncate(time.Microsecond)
	return l
}

func (s *Store) GetLicense(ctx context.Context, tenantID, id string) (server.License, error) {
	r, err := s.liveLicense(ctx, s.pool, tenantID, id, "")
	if err != nil {
		return server.License{}, err
	}
	return r.License, nil
}

func (s *Store) LicenseByKey(ctx context.Context, key string) (server.License, error) {
	r, err := scanLicense(s.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses WHERE key = $1 AND deleted_at IS NULL`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.License{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return server.License{}, s.fail("find license by key", err)
	}
	return r.License, nil
}

// liveLicense reads an undeleted license of the tenant, optionally with a
// row lock ("FOR UPDATE", "FOR NO KEY UPDATE").
func (s *Store) liveLicense(ctx context.Context, q querier, tenantID, id, lock string) (licenseRow, error) {
	r, err := scanLicense(q.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL `+lock, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return licenseRow{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return licenseRow{}, s.fail("get license", err)
	}
	return r, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Store) ListLicenses(ctx context.Context, tenantID string, p server.Page) ([]server.License, string, error) {
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var rows pgx.Rows
	if after == nil {
		rows, _ = s.pool.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT $2`, tenantID, size+1)
	} else {
		rows, _ = s.pool.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE tenant_id = $1 AND deleted_at IS NULL AND (created_at, id) > ($2, $3)
			ORDER BY created_at, id LIMIT $4`, tenantID, after.time(), after.ID, size+1)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.License, error) {
		l, err := scanLicense(r)
		return l.License, err
	})
	if err != nil {
		return nil, "", s.fail("list licenses", err)
	}
	page, next := pageOf(out, size, func(l server.License) cursor { return cursor{At: timeUS(l.CreatedAt), ID: l.ID} })
	return page, next, nil
}

func (s *Store) UpdateLicense(ctx context.Context, tenantID, id string, update func(*server.License) error) (server.License, error) {
	var (
		next      licenseRow
		updateErr error // the caller's, returned as is
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// FOR NO KEY UPDATE serialises updates of the license without
		// blocking the acquisitions that record leases on it.
		cur, err := s.liveLicense(ctx, tx, tenantID, id, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		l := cur.License
		l.Metadata = cloneMap(cur.Metadata)
		// update is the caller's code: it runs while the row is locked
		// against other changes of this license (acquisitions go on).
		if updateErr = update(&l); updateErr != nil {
			return updateErr
		}
		l.ID, l.TenantID, l.Key, l.CreatedAt = cur.ID, cur.TenantID, cur.Key, cur.CreatedAt
		l = normalizeLicense(l)
		next, err = scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET name = $2, seats = $3, overdraft = $4,
			lease_ttl_us = $5, revival_window_us = $6, leasing_strategy = $7, active = $8, expires_at = $9,
			metadata = $10::jsonb, updated_at = date_trunc('microseconds', clock_timestamp()), version = version + 1
			WHERE id = $1 RETURNING `+licenseCols,
			id, l.Name, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(), l.RevivalWindow.Microseconds(),
			string(l.LeasingStrategy), l.Active, optTime(l.ExpiresAt), jsonMap(l.Metadata)))
		return err
	})
	if updateErr != nil {
		return server.License{}, updateErr
	}
	if err != nil {
		return server.License{}, s.fail("update license", err)
	}
	s.pushConf(ctx, next)
	return next.License, nil
}

// pushConf brings the Redis copy of the settings up to r's version, if the
// live state exists. A failure is logged and the license is retried by the
// flush loop (retryConf); the leader's reconciliation (syncConf) is the
// backstop if this process goes away first. Nothing is lost in the record.
func (s *Store) pushConf(ctx context.Context, r licenseRow) {
	if err := s.setConf(ctx, r); err != nil {
		s.log.Error("distributed store: push license settings to Redis; retrying", "license", r.ID, "err", err)
		s.behindMu.Lock()
		s.confBehind[r.ID] = true
		s.behindMu.Unlock()
	}
}

func (s *Store) setConf(ctx context.Context, r licenseRow) error {
	args := append([]any{r.version}, confArgs(r)...)
	return scriptSetConf.Run(ctx, s.rdb, s.keys.license(r.ID), args...).Err()
}

// retryConf pushes again, as recorded now, the settings of the licenses
// whose push failed, and stops at the first failure (PostgreSQL or Redis
// still not answering). A license leaves the list only once its push lands.
func (s *Store) retryConf(ctx context.Context) {
	s.behindMu.Lock()
	ids := slices.Collect(maps.Keys(s.confBehind))
	s.behindMu.Unlock()
	for _, id := range ids {
		r, err := s.readLicenseRow(ctx, id)
		switch {
		case errors.Is(err, pgx.ErrNoRows), err == nil && r.deleted:
			// Gone; DeleteLicense tombstones the live state itself.
		case err != nil:
			s.log.Warn("distributed store: re-read license to push its settings; retrying next tick", "license", id, "err", err)
			return
		default:
			if err := s.setConf(ctx, r); err != nil {
				s.log.Error("distributed store: push license settings to Redis; retrying next tick", "license", id, "err", err)
				return
			}
		}
		s.behindMu.Lock()
		delete(s.confBehind, id)
		s.behindMu.Unlock()
	}
}

// readLicenseRow reads a license's row, deleted or not.
func (s *Store) readLicenseRow(ctx context.Context, id string) (licenseRow, error) {
	return scanLicense(s.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses WHERE id = $1`, id))
}

// syncConf brings the Redis settings of every license whose live state is
// behind its record up to date, and tombstones the live state of every
// deleted license Redis still serves: the backstop for a push or a
// tombstone that failed on a process that went away before retrying it.
// One query and one pipelined HMGET per license; a push only for the
// licenses behind.
func (s *Store) syncConf(ctx context.Context) error {
	rows, _ := s.pool.Query(ctx, `SELECT id, version, deleted_at IS NOT NULL, tenant_id FROM licenses`)
	var (
		ids      []string
		versions []int64
		deleted  []bool
		tenants  []string
		id, tn   string
		version  int64
		gone     bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &version, &gone, &tn}, func() error {
		ids, versions, deleted, tenants = append(ids, id), append(versions, version), append(deleted, gone), append(tenants, tn)
		return nil
	}); err != nil {
		return err
	}
	for start := 0; start < len(ids); start += 1000 {
		end := min(start+1000, len(ids))
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, end-start)
		for i := start; i < end; i++ {
			cmds[i-start] = pipe.HMGet(ctx, s.keys.license(ids[i])[0], "version", "deleted")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for i, c := range cmds {
			v := c.Val()
			if len(v) < 2 || v[0] == nil {
				continue // no live state: a rebuild reads the record
			}
			have := num(v[0])
			k := start + i
			switch {
			case deleted[k] && str(v[1]) != "1":
				s.log.Warn("distributed store: a deleted license was still live in Redis; dropping it", "license", ids[k])
				if err := scriptTombstone.Run(ctx, s.rdb, s.keys.license(ids[k]), versions[k], tenants[k]).Err(); err != nil {
					return fmt.Errorf("tombstone deleted license: %w", err)
				}
			case deleted[k] || have >= versions[k]:
				continue // tombstoned, or current
			default:
				r, err := s.readLicenseRow(ctx, ids[k])
				if err != nil {
					return err
				}
				s.log.Warn("distributed store: license settings in Redis were behind the record; pushing them", "license", r.ID,
					"redis_version", have, "version", r.version)
				s.pushConf(ctx, r)
			}
		}
	}
	return nil
}

// confArgs are the settings of a license as the scripts take them (after
// the version): seats, overdraft, ttl, revival, active, expires, strategy,
// tenant, json.
func confArgs(r licenseRow) []any {
	active := 0
	if r.Active {
		active = 1
	}
	var exp int64
	if !r.ExpiresAt.IsZero() {
		exp = timeUS(r.ExpiresAt)
	}
	js, _ := json.Marshal(r.License)
	return []any{r.Seats, r.Overdraft, r.LeaseTTL.Microseconds(), r.RevivalWindow.Microseconds(), active, exp,
		string(r.LeasingStrategy), r.TenantID, string(js)}
}

// DeleteLicense revokes the active leases and soft-deletes the license in
// one transaction, then drops the live state in Redis (a tombstone).
//
// The row lock (FOR UPDATE) makes every acquisition that tries to record a
// lease meanwhile wait and then find the license deleted (leases.go
// insertLease), so no lease is ever recorded as active on a deleted license.
func (s *Store) DeleteLicense(ctx context.Context, tenantID, id string) (int, error) {
	// The tenant's own license only: reading its live values may rebuild
	// them (peek), which another tenant's call must not set off.
	if _, err := s.liveLicense(ctx, s.pool, tenantID, id, ""); server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return 0, s.deletedAlready(ctx, tenantID, id)
	} else if err != nil {
		return 0, s.fail("delete license", err)
	}
	// Take the live values (last heartbeats) of the leases for their final
	// record; leases granted after this read keep their recorded values.
	live, now, err := s.peekAll(ctx, id)
	if err != nil {
		return 0, s.fail("delete license", err)
	}
	var (
		ids      []string
		hbs, dls []time.Time
	)
	for lid, v := range live {
		ids, hbs, dls = append(ids, lid), append(hbs, v.hb), append(dls, v.deadline)
	}
	var (
		revoked int
		lic     licenseRow
	)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if lic, err = s.liveLicense(ctx, tx, tenantID, id, "FOR UPDATE"); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			WITH live AS (
				SELECT * FROM unnest($3::text[], $4::timestamptz[], $5::timestamptz[]) AS v(id, hb, dl)
			), locked AS (
				SELECT id FROM sessions WHERE license_id = $1 AND state = 'active' ORDER BY id FOR UPDATE
			), ended AS (
				UPDATE sessions s SET state = 'revoked', ended_at = GREATEST($2, s.acquired_at),
					last_heartbeat_at = GREATEST(s.last_heartbeat_at, (SELECT hb FROM live WHERE live.id = s.id)),
					expires_at = COALESCE((SELECT dl FROM live WHERE live.id = s.id), s.expires_at)
				FROM locked WHERE s.id = locked.id AND s.state = 'active'
				RETURNING s.id, s.license_id, s.tenant_id, s.acquired_at, s.ended_at
			), usage AS (
				INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
				SELECT id, license_id, tenant_id, 'revoked', acquired_at, ended_at, `+sqlDurationUS("ended_at", "acquired_at")+`
				FROM ended ON CONFLICT (lease_id) DO NOTHING
			), audit AS (
				INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
				SELECT `+sqlAuditID+`, tenant_id, 'system', 'lease.revoke', 'lease', id,
					jsonb_build_object('license_id', license_id, 'reason', 'license deleted'), ended_at
				FROM ended
			)
			SELECT count(*) FROM ended`, id, now, ids, hbs, dls).Scan(&revoked)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE licenses SET deleted_at = $2, version = version + 1 WHERE id = $1`, id, now)
		lic.version++
		return err
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return 0, s.deletedAlready(ctx, tenantID, id)
	}
	if err != nil {
		return 0, s.fail("delete license", err)
	}
	s.licenseKeys.drop(lic.Key)
	if err := scriptTombstone.Run(ctx, s.rdb, s.keys.license(id), lic.version, lic.TenantID).Err(); err != nil {
		// The record is complete, but its leases may still heartbeat in
		// Redis: not done until the tombstone is there. Acquisitions are
		// refused meanwhile (they cannot be recorded on a deleted
		// license), and the leader's reconciliation (syncConf) applies the
		// tombstone if nobody retries.
		return 0, s.fail("delete license: drop live state", err)
	}
	s.hb.forget(ids...)
	return revoked, nil
}

// deletedAlready answers a delete of a license that is not there: NOT_FOUND,
// but only once the live state of a license of the tenant that was deleted
// is tombstoned, since the caller may be retrying a delete whose tombstone
// failed, and will take NOT_FOUND to mean the license is gone.
func (s *Store) deletedAlready(ctx context.Context, tenantID, id string) error {
	var version int64
	err := s.pool.QueryRow(ctx, `SELECT version FROM licenses WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NOT NULL`,
		id, tenantID).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return server.ErrLicenseNotFound
	}
	if err != nil {
		return s.fail("delete license", err)
	}
	if err := scriptTombstone.Run(ctx, s.rdb, s.keys.license(id), version, tenantID).Err(); err != nil {
		return s.fail("delete license: drop live state", err)
	}
	return server.ErrLicenseNotFound
}

// sqlAuditID generates an audit entry id in SQL, in the shape of
// server.NewID("aud_"): 24 hex digits.
const sqlAuditID = `'aud_' || encode(substr(uuid_send(gen_random_uuid()), 1, 12), 'hex')`

// sqlDurationUS is the SQL for end - start in whole microseconds.
func sqlDurationUS(end, start string) string {
	return "(EXTRACT(EPOCH FROM (" + end + " - " + start + ")) * 1000000)::bigint"
}
