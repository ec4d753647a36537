package distributed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// A feature's acquisition: the grants that may grant it (License.GrantsFor,
// on the license's grants at a settings version: grants.go) are judged in
// one script run over their pools' keys (acquire_pools.lua, invariant 12);
// the grant is then recorded exactly as a license's (acquire.go:
// recordNew, recordRenewal), under the pool that granted it. An
// acquisition of the base pool of a license with a site policy comes this
// way too (req.Feature ""), its pool the license's own: only
// acquire_pools.lua judges a policy (policy.go).

func (s *Store) acquirePools(ctx context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	var (
		g     live.PoolAcquisition
		d     server.Decision
		fresh bool // read the grants from the record, not the cache
	)
	for range maxAttempts {
		licenseID, cached, err := s.resolveKey(ctx, req.LicenseKey)
		if err != nil {
			return server.AcquireResult{}, err
		}
		lg, fromCache, err := s.grantsOf(ctx, licenseID, fresh)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound && cached {
			s.licenseKeys.Drop(req.LicenseKey) // the key may open another license now
			continue
		}
		if err != nil {
			return server.AcquireResult{}, err
		}
		if req.Feature == "" {
			s.notePolicy(licenseID, lg.policy != nil)
		}
		c := s.coverageOf(licenseID, lg, req.Feature, req.Version)
		if c.err != nil {
			retry, err := s.notCovered(ctx, &req, licenseID, cached, lg, fromCache, c.err)
			if retry {
				fresh = true
				continue
			}
			return server.AcquireResult{}, err
		}
		var j *live.Judgement
		if lg.policy != nil {
			d, j = lg.policy.judgement(req.Feature, &req)
		}
		if err := s.live.AcquirePoolSet(ctx, c.set, &req, j, &g); err != nil {
			return server.AcquireResult{}, s.fail("acquire", err)
		}
		r, retry, err := s.judgedPools(ctx, &req, licenseID, cached, lg, &d, &g)
		if !retry {
			return r, err
		}
		fresh = true
	}
	return server.AcquireResult{}, s.fail("acquire", errors.New("live state kept changing; giving up"))
}

// judgedPools acts on acquire_pools.lua's answer: records a grant, or
// says why not, or asks for another round (retry). d is the policy's
// decision the script judged (the zero Decision without a policy).
func (s *Store) judgedPools(ctx context.Context, req *server.AcquireRequest, licenseID string, cached bool, lg *licenseGrants, d *server.Decision, g *live.PoolAcquisition) (server.AcquireResult, bool, error) {
	var (
		r     server.AcquireResult
		retry bool
		err   error
	)
	switch g.Status {
	case live.StatusGranted:
		r, retry, err = s.recordNew(ctx, req, &g.Acquisition)
	case live.StatusHandedBack:
		r, retry, err = s.recordRenewal(ctx, *req, &g.Acquisition)
	case live.StatusNoState:
		retry, err = s.buildPools(ctx, req, licenseID, cached, g.NoState)
	case live.StatusStale:
		retry, err = s.staleGrants(ctx, licenseID, lg, g.RedisVersion)
	case live.StatusNoPolicyIndex:
		if err := s.buildPolicyIndex(ctx, licenseID); err != nil {
			return r, false, s.fail("acquire: build the policy index", err)
		}
		return r, true, nil
	case live.StatusPolicyRefused:
		return r, false, s.policyRefusal(req.Feature, d, g)
	case live.StatusDeleted:
		if g.DeletedPool != licenseID {
			return r, true, nil // a grant went: read the grants anew
		}
		s.licenseKeys.Drop(req.LicenseKey)
		if !cached {
			return r, false, server.ErrLicenseNotFound
		}
		return r, true, nil
	case live.StatusUnusable:
		return r, false, unusableError(req.Feature, g)
	case live.StatusExhausted:
		if req.Feature == "" {
			return r, false, server.SeatsExhausted(g.InUse, g.Limit)
		}
		return r, false, server.FeatureSeatsExhausted(req.Feature, g.InUse, g.Limit)
	default:
		retry, err = s.acquireRefused(ctx, req, licenseID, cached, &g.Acquisition)
	}
	if err != nil || retry {
		return server.AcquireResult{}, retry, err
	}
	if req.Feature == "" {
		r.License = lg.license // the base pool: no grant
		return r, false, nil
	}
	r.License, r.Grant = withGrant(lg.license, g.PoolID)
	if r.Grant == nil { // never: the pool is one of lg's grants
		return server.AcquireResult{}, false, s.fail("acquire", fmt.Errorf("grant %s not among the license's", g.PoolID))
	}
	return r, false, nil
}

// buildPools builds the live state of the pools that have none (the
// license's own too: its settings carry the version of its grants), as
// ensureLive does for a license, before the script judges them again.
func (s *Store) buildPools(ctx context.Context, req *server.AcquireRequest, licenseID string, cached bool, pools []string) (retry bool, err error) {
	for _, p := range pools {
		err := s.ensureLive(ctx, p)
		switch {
		case server.ErrorReason(err) != server.ReasonLicenseNotFound:
		case p != licenseID:
			continue // a grant deleted meanwhile: the next round reads the grants anew
		default:
			s.licenseKeys.Drop(req.LicenseKey)
			if cached {
				return true, nil // the key may open another license now
			}
		}
		if err != nil {
			return false, s.fail("acquire: build live state", err)
		}
	}
	return true, nil
}

// staleGrants handles a license whose settings version in Redis is not
// the one its grants were read at: older grants are read again (the
// caller's next round does); a Redis behind the record gets the record's
// settings first, as grantOutdated does for a license's.
func (s *Store) staleGrants(ctx context.Context, licenseID string, lg *licenseGrants, inRedis int64) (retry bool, err error) {
	if inRedis > lg.version {
		return true, nil
	}
	lic, err := s.rec.License(ctx, licenseID)
	if err != nil {
		return false, s.fail("acquire: read license", err)
	}
	if lic.Version > inRedis {
		if err := s.setConf(ctx, lic); err != nil {
			return false, s.fail("acquire: push license settings", err)
		}
	}
	return true, nil
}

// notCovered answers a feature request that no grant of lg covers
// (refusal: FeatureNotLicensed or VersionNotLicensed). The license's own
// state comes first, as for the base pool: an inactive or expired license
// says so, judged on its live settings at the store's clock (usable.lua;
// only this refused path pays the round trip). Else grants read from the
// cache at a settings version Redis no longer holds are read anew
// (retry) before the refusal stands.
func (s *Store) notCovered(ctx context.Context, req *server.AcquireRequest, licenseID string, cached bool, lg *licenseGrants, fromCache bool, refusal error) (retry bool, err error) {
	st, err := s.live.Usable(ctx, licenseID)
	if err != nil {
		return false, s.fail("acquire: read license state", err)
	}
	switch st.Status {
	case live.StatusInactive:
		return false, server.ErrLicenseInactive
	case live.StatusLicenseExpired:
		return false, server.ErrLicenseExpired
	case live.StatusNoState:
		if err := s.ensureLive(ctx, licenseID); err != nil && server.ErrorReason(err) != server.ReasonLicenseNotFound {
			return false, s.fail("acquire: build live state", err)
		}
		return true, nil
	case live.StatusDeleted:
		s.licenseKeys.Drop(req.LicenseKey)
		if !cached {
			return false, server.ErrLicenseNotFound
		}
		return true, nil
	}
	if fromCache && st.Version != lg.version {
		return true, nil
	}
	return false, refusal
}

// unusableError is the refusal when no covering grant is usable now
// (server.LeaseStore.Acquire): the license switched off; else, if some
// grant has yet to start, GrantNotStarted with the earliest start; else
// the grants (or the license) have expired.
func unusableError(feature string, g *live.PoolAcquisition) error {
	var first time.Time
	for i, st := range g.Unusable {
		switch st {
		case live.StatusInactive:
			return server.ErrLicenseInactive
		case live.StatusNotStarted:
			if at := g.Starts[i]; first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	if !first.IsZero() {
		return server.GrantNotStarted(feature, first)
	}
	return server.ErrLicenseExpired
}
