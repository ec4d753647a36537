package distributed

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Feature grants. A grant is a pool of its own (invariant 12): a row of
// licenses in the record (record/grants.go) with a live state of its own
// under its license's hash tag (live/keys.go), counted, rebuilt, cleaned
// up and tombstoned by the same code as a license, keyed by the grant's id.
//
// A feature acquisition needs the license's grants to choose the pools it
// judges (License.GrantsFor). They are cached per process (licenseGrants)
// with the license's settings version they were read at; every change of
// a license's grants bumps that version in the record (in the same
// transaction) and pushes it to the license's live settings before it
// returns. acquire_pools.lua compares the version in Redis with the
// cached one in the same atomic step as the grant: a cache older than
// Redis is read again (STALE), so a grant created, changed or deleted is
// what the next acquisition on any instance judges by, once the push
// landed (if Redis refused it, the flush loop pushes it again every tick:
// retryConf, and the leader's syncConf). A refusal judged on cached grants
// (no grant of the feature or version) is confirmed against the version
// in Redis first.

// licenseGrants is a license with its grants and its site policy, at a
// settings version.
type licenseGrants struct {
	version int64
	license server.License
	policy  *licensePolicy // nil: the license has no policy
	// covering memoizes coverage per feature and version asked (the
	// grants GrantsFor picks, and their PoolSet): a license's acquisitions
	// mostly ask the same few. At most maxCovering entries: versions are
	// the clients' strings, and the ones past that are judged unmemoized.
	covering sync.Map // feature + "\x00" + version -> *coverage
	memoized atomic.Int32
}

// maxCovering bounds licenseGrants.covering.
const maxCovering = 64

// coverage is what License.GrantsFor answers for a feature and version,
// with the PoolSet of the grants it picks.
type coverage struct {
	grants []server.Grant
	err    error
	set    *live.PoolSet
}

// coverageOf returns the grants that may grant feature at version, in
// pick order, and their PoolSet (or GrantsFor's refusal). Feature "" is
// the license's base pool (a license with a site policy: policy.go).
// The PoolSet of a license with a policy has the feature's other grants
// too: the policy counts the leases of all of them.
func (s *Store) coverageOf(licenseID string, lg *licenseGrants, feature, version string) *coverage {
	k := feature + "\x00" + version
	if c, ok := lg.covering.Load(k); ok {
		return c.(*coverage)
	}
	c := &coverage{}
	if feature == "" {
		c.set = s.poolSet(licenseID, lg, []string{licenseID}, nil)
	} else if c.grants, c.err = lg.license.GrantsFor(feature, version); c.err == nil {
		pools := make([]string, len(c.grants))
		for i := range c.grants {
			pools[i] = c.grants[i].ID
		}
		var others []string
		if lg.policy != nil {
			for _, g := range lg.license.Grants {
				if g.Feature == feature && !slices.Contains(pools, g.ID) {
					others = append(others, g.ID)
				}
			}
		}
		c.set = s.poolSet(licenseID, lg, pools, others)
	}
	if lg.memoized.Add(1) <= maxCovering {
		lg.covering.Store(k, c)
	}
	return c
}

// poolSet is the PoolSet of pools (and others, with a policy) of lg.
func (s *Store) poolSet(licenseID string, lg *licenseGrants, pools, others []string) *live.PoolSet {
	if lg.policy != nil {
		return s.live.NewPolicyPoolSet(licenseID, lg.version, pools, others)
	}
	return s.live.NewPoolSet(licenseID, lg.version, pools)
}

// grantsOf returns a license with its grants: cached, unless fresh.
// ErrLicenseNotFound if the license does not exist (any more).
func (s *Store) grantsOf(ctx context.Context, licenseID string, fresh bool) (*licenseGrants, bool, error) {
	if !fresh {
		if g, ok := s.licenseGrants.Get(licenseID); ok {
			return g, true, nil
		}
	}
	r, err := s.rec.LicenseWithGrants(ctx, licenseID)
	if err != nil {
		return nil, false, err
	}
	g := &licenseGrants{version: r.Version, license: r.License, policy: newLicensePolicy(r.Policy)}
	s.licenseGrants.Put(licenseID, g)
	return g, false, nil
}

// grantsChanged makes the new grants of a license the ones every instance
// judges by: this process's cache forgets them, and the license's bumped
// settings version goes to its live settings.
func (s *Store) grantsChanged(ctx context.Context, lic record.LicenseRow) {
	s.licenseGrants.Drop(lic.ID)
	s.pushConf(ctx, lic)
}

// CreateGrant records the grant (a pool row of the license, whose version
// it bumps) and pushes the license's new version to the live state. The
// grant's own live state is built from the record on its first use.
func (s *Store) CreateGrant(ctx context.Context, g server.Grant) (server.Grant, error) {
	pool, lic, err := s.rec.CreateGrant(ctx, g)
	if err != nil {
		return server.Grant{}, err
	}
	s.grantsChanged(ctx, lic)
	return pool.Grant(), nil
}

// UpdateGrant changes the grant's record, then its pool's live settings,
// then the license's version (so that an instance that reads the new
// grants finds the pool's new settings there already).
func (s *Store) UpdateGrant(ctx context.Context, tenantID, licenseID, grantID string, update func(*server.Grant) error) (server.Grant, error) {
	pool, lic, err := s.rec.UpdateGrant(ctx, tenantID, licenseID, grantID, update)
	if err != nil {
		return server.Grant{}, err
	}
	s.pushConf(ctx, pool)
	s.grantsChanged(ctx, lic)
	return pool.Grant(), nil
}

// DeleteGrant revokes the grant's leases and deletes it in one transaction
// (record.DeleteGrant), then tombstones its pool's live state, as
// DeleteLicense does for a license.
func (s *Store) DeleteGrant(ctx context.Context, tenantID, licenseID, grantID string) (int, error) {
	if _, err := s.rec.TenantLicense(ctx, tenantID, licenseID); err != nil {
		return 0, err
	}
	if !server.IsGrantID(grantID) || server.PoolLicense(grantID) != licenseID {
		return 0, server.ErrGrantNotFound
	}
	if _, err := s.rec.TenantPool(ctx, tenantID, grantID); server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return 0, s.grantDeletedAlready(ctx, tenantID, grantID)
	} else if err != nil {
		return 0, s.fail("delete grant", err)
	}
	vals, now, err := s.liveValues(ctx, grantID)
	if err != nil {
		return 0, s.fail("delete grant", err)
	}
	revoked, lic, pool, err := s.rec.DeleteGrant(ctx, tenantID, licenseID, grantID, now, vals)
	switch server.ErrorReason(err) {
	case server.ReasonGrantNotFound:
		return 0, s.grantDeletedAlready(ctx, tenantID, grantID)
	case server.ReasonLicenseNotFound, server.ReasonInvalidArgument: // the policy would break
		return 0, err
	}
	if err != nil {
		return 0, s.fail("delete grant", err)
	}
	s.grantsChanged(ctx, lic)
	if err := s.live.Tombstone(ctx, grantID, pool.Version, pool.TenantID); err != nil {
		return 0, s.fail("delete grant: drop live state", err)
	}
	s.hb.forget(vals.IDs...)
	return revoked, nil
}

// grantDeletedAlready is deletedAlready for a grant: NOT_FOUND once its
// pool's live state is tombstoned (a retried delete whose tombstone failed).
func (s *Store) grantDeletedAlready(ctx context.Context, tenantID, grantID string) error {
	err := s.deletedAlready(ctx, tenantID, grantID)
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return server.ErrGrantNotFound
	}
	return err
}

// liveValues reads the live values of a pool's leases for their final
// record (a delete).
func (s *Store) liveValues(ctx context.Context, poolID string) (record.LiveValues, time.Time, error) {
	var vals record.LiveValues
	held, now, err := s.peek(ctx, poolID)
	if err != nil {
		return vals, now, err
	}
	for lid, v := range held {
		vals.IDs, vals.Heartbeats, vals.Deadline = append(vals.IDs, lid), append(vals.Heartbeats, v.Heartbeat), append(vals.Deadline, v.Deadline)
	}
	return vals, now, nil
}

// withGrant returns a license for a caller and a copy of the grant of
// poolID in it. The license's Grants are the cached ones (shared, never
// modified: a change of grants caches a new licenseGrants): a feature's
// acquisition copies no 50 grants.
func withGrant(l server.License, poolID string) (server.License, *server.Grant) {
	g := l.Grant(poolID)
	if g == nil {
		return l, nil
	}
	c := *g
	return l, &c
}
