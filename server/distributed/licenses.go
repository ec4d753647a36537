package distributed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/record"
)

// Licenses live in PostgreSQL. Redis holds a copy of the settings that
// acquisitions and heartbeats judge by (the "conf" hash of the license's
// live state). Only a rebuild creates that copy (rebuild.go); changes update
// it after they commit, and only ever to a higher version.

// UpdateLicense changes the record (the license's row and the settings its
// grants' pools take from it), then copies the settings into the live
// state (pushConf): each grant's pool's, then the license's.
func (s *Store) UpdateLicense(ctx context.Context, tenantID, id string, update func(*server.License) error) (server.License, error) {
	next, pools, err := s.rec.UpdateLicense(ctx, tenantID, id, update)
	if err != nil {
		return server.License{}, err
	}
	for _, p := range pools {
		s.pushConf(ctx, p)
	}
	s.licenseGrants.Drop(id)
	s.pushConf(ctx, next)
	return next.License, nil
}

// pushConf brings the Redis copy of the settings up to r's version, if the
// live state exists. A failure is logged and the license is retried by the
// flush loop (retryConf); the leader's reconciliation (syncConf) is the
// backstop if this process goes away first. Nothing is lost in the record.
func (s *Store) pushConf(ctx context.Context, r record.LicenseRow) {
	if err := s.setConf(ctx, r); err != nil {
		s.log.Error("distributed store: push license settings to Redis; retrying", "license", r.ID, "err", err)
		s.confBehindMu.Lock()
		s.confBehind[r.ID] = true
		s.confBehindMu.Unlock()
	}
}

func (s *Store) setConf(ctx context.Context, r record.LicenseRow) error {
	return s.live.SetConf(ctx, confOf(r))
}

// retryConf pushes again, as recorded now, the settings of the licenses
// whose push failed, and stops at the first failure (PostgreSQL or Redis
// still not answering). A license leaves the list only once its push lands.
func (s *Store) retryConf(ctx context.Context) {
	s.confBehindMu.Lock()
	ids := slices.Collect(maps.Keys(s.confBehind))
	s.confBehindMu.Unlock()
	for _, id := range ids {
		r, err := s.rec.License(ctx, id)
		switch {
		case errors.Is(err, record.ErrNotFound), err == nil && r.Deleted:
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
		s.confBehindMu.Lock()
		delete(s.confBehind, id)
		s.confBehindMu.Unlock()
	}
}

// syncConf brings the Redis settings of every license whose live state is
// behind its record up to date, and tombstones the live state of every
// deleted license Redis still serves: the backstop for a push or a
// tombstone that failed on a process that went away before retrying it.
// One query and one pipelined HMGET per license; a push only for the
// licenses behind.
func (s *Store) syncConf(ctx context.Context) error {
	lics, err := s.rec.LicenseVersions(ctx)
	if err != nil {
		return err
	}
	return s.syncConfOf(ctx, lics)
}

// syncConfOf is syncConf with the licenses read already.
func (s *Store) syncConfOf(ctx context.Context, lics []record.LicenseVersion) error {
	ids := make([]string, len(lics))
	for i, l := range lics {
		ids[i] = l.ID
	}
	have, err := s.live.ConfVersions(ctx, ids)
	if err != nil {
		return err
	}
	for k, v := range have {
		switch {
		case !v.Present:
			continue // no live state: a rebuild reads the record
		case lics[k].Deleted && !v.Deleted:
			s.log.Warn("distributed store: a deleted license was still live in Redis; dropping it", "license", ids[k])
			if err := s.live.Tombstone(ctx, ids[k], lics[k].Version, lics[k].TenantID); err != nil {
				return fmt.Errorf("tombstone deleted license: %w", err)
			}
		case lics[k].Deleted || v.Version >= lics[k].Version:
			continue // tombstoned, or current
		default:
			r, err := s.rec.License(ctx, ids[k])
			if err != nil {
				return err
			}
			s.log.Warn("distributed store: license settings in Redis were behind the record; pushing them", "license", r.ID,
				"redis_version", v.Version, "version", r.Version)
			s.pushConf(ctx, r)
		}
	}
	return nil
}

// DeleteLicense revokes the active leases and soft-deletes the license in
// one transaction, then drops the live state in Redis (a tombstone).
//
// The row lock (FOR UPDATE) makes every acquisition that tries to record a
// lease meanwhile wait and then find the license deleted
// (record.InsertSession), so no lease is ever recorded active on a deleted license.
func (s *Store) DeleteLicense(ctx context.Context, tenantID, id string) (int, error) {
	// The tenant's own license only: reading its live values may rebuild
	// them (peek), which another tenant's call must not set off.
	if _, err := s.rec.TenantLicense(ctx, tenantID, id); server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return 0, s.deletedAlready(ctx, tenantID, id)
	} else if err != nil {
		return 0, s.fail("delete license", err)
	}
	// Take the live values (last heartbeats) of the leases for their final
	// record, the license's and its grants'; leases granted after this
	// read keep their recorded values.
	pools, err := s.rec.PoolsOf(ctx, id, false)
	if err != nil {
		return 0, s.fail("delete license", err)
	}
	var (
		vals record.LiveValues
		now  time.Time
	)
	for _, p := range pools {
		v, at, err := s.liveValues(ctx, p)
		if err != nil {
			return 0, s.fail("delete license", err)
		}
		vals.IDs, vals.Heartbeats, vals.Deadline = append(vals.IDs, v.IDs...), append(vals.Heartbeats, v.Heartbeats...), append(vals.Deadline, v.Deadline...)
		if now.IsZero() {
			now = at
		}
	}
	revoked, lic, grants, err := s.rec.DeleteLicense(ctx, tenantID, id, now, vals)
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return 0, s.deletedAlready(ctx, tenantID, id)
	}
	if err != nil {
		return 0, s.fail("delete license", err)
	}
	s.licenseKeys.Drop(lic.Key)
	s.licenseGrants.Drop(id)
	// The record is complete, but its leases may still heartbeat in
	// Redis: not done until the tombstones are there. Acquisitions are
	// refused meanwhile (they cannot be recorded on a deleted license),
	// and the leader's reconciliation (syncConf) applies the tombstones if
	// nobody retries.
	for _, g := range grants {
		if err := s.live.Tombstone(ctx, g.ID, g.Version, g.TenantID); err != nil {
			return 0, s.fail("delete license: drop live state of a grant", err)
		}
	}
	if err := s.live.Tombstone(ctx, id, lic.Version, lic.TenantID); err != nil {
		return 0, s.fail("delete license: drop live state", err)
	}
	s.hb.forget(vals.IDs...)
	return revoked, nil
}

// deletedAlready answers a delete of a license that is not there: NOT_FOUND,
// but only once the live state of a license of the tenant that was deleted
// is tombstoned, since the caller may be retrying a delete whose tombstone
// failed, and will take NOT_FOUND to mean the license is gone.
func (s *Store) deletedAlready(ctx context.Context, tenantID, id string) error {
	version, err := s.rec.DeletedVersion(ctx, tenantID, id)
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return err
	}
	if err != nil {
		return s.fail("delete license", err)
	}
	if err := s.live.Tombstone(ctx, id, version, tenantID); err != nil {
		return s.fail("delete license: drop live state", err)
	}
	return server.ErrLicenseNotFound
}
