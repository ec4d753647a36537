package distributed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

// Site policies (server.PolicyStore). The record keeps a license's policy
// on its row with the groups it names copied in (record/policy.go); every
// change of it, or of a group it names, bumps the license's settings
// version and is pushed to the live state, as a change of its grants is
// (grants.go): acquisitions judge by the policy of the license version
// Redis holds, in the same atomic step as the count.
//
// Acquisitions. A license with a policy is acquired only through
// acquire_pools.lua, its base pool too (acquire.lua answers POLICY;
// policied remembers such licenses, so that their base acquisitions go
// there at once): the process compiles the policy once per license
// version (licensePolicy, cached with the grants), decides each
// acquisition (server.CompiledPolicy.Decide) and passes the decision
// (live.Judgement); the script judges it as server.Judge does, with the
// live counts of the policy index, after handing back a live lease of the
// same keys (not judged: the same seat) and before taking a seat; a
// refusal's counts come back, and server.Judge on them gives the client
// the embedded store's error. A version in Redis other than the one the
// decision was made at answers STALE, as for grants.
//
// The policy index (live/policy.go) is built from the record whenever
// Redis does not hold it for the license's policy generation
// (buildPolicyIndex): when the policy is switched on, after a loss of
// Redis, after a rebuild of one of the license's pools. Nothing is
// granted on the license meanwhile. The cleanup leader prunes it
// (prunePolicyIndexes).
//
// Revival: the live settings of every pool of a license with a policy
// hold the revival window negated (live.Conf), so that heartbeat.lua
// leaves the revival of a lapsed lease to revive (revive.lua), which
// revives it only if the policy would grant its client a seat now, the
// reservation it may take being only its own.

// SetPolicy writes the policy (record.SetPolicy), then pushes the new
// settings: the grants' pools first (their versions bumped: a feature's
// acquisition judged by the policy before is not recorded; switched on or
// off, their revivals are then judged by the policy, or no longer), then
// the license's.
func (s *Store) SetPolicy(ctx context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	lic, pools, err := s.rec.SetPolicy(ctx, tenantID, licenseID, p)
	if err != nil {
		return server.License{}, err
	}
	for _, pool := range pools {
		s.pushConf(ctx, pool)
	}
	s.policyChanged(ctx, lic)
	if lic.PolicyGen == 0 {
		// No policy: its index is of no use (one switched on again is
		// built for its new generation). Dropped only while the live
		// settings say no policy (live.DropPolicyIndex). Best effort.
		if err := s.live.DropPolicyIndex(ctx, lic.ID); err != nil {
			s.log.Warn("distributed store: drop the policy index of a license without a policy", "license", lic.ID, "err", err)
		}
	}
	return lic.License, nil
}

// policyChanged makes a license's new policy (or the new groups of its
// policy) the one every instance judges by, as grantsChanged does for its
// grants.
func (s *Store) policyChanged(ctx context.Context, lic record.LicenseRow) {
	s.licenseGrants.Drop(lic.ID)
	s.pushConf(ctx, lic)
}

// PutGroup stores the group and rewrites the policies naming it
// (record.PutGroup), then pushes the new settings of those licenses'
// grants (versions bumped, as SetPolicy's) and of the licenses.
func (s *Store) PutGroup(ctx context.Context, g server.Group) (server.Group, error) {
	if err := g.Validate("group"); err != nil {
		return server.Group{}, err
	}
	out, lics, pools, err := s.rec.PutGroup(ctx, g)
	if err != nil {
		return server.Group{}, err
	}
	for _, pool := range pools {
		s.pushConf(ctx, pool)
	}
	for _, lic := range lics {
		s.policyChanged(ctx, lic)
	}
	return out, nil
}

func (s *Store) DeleteGroup(ctx context.Context, tenantID, name string) error {
	return s.rec.DeleteGroup(ctx, tenantID, name)
}

func (s *Store) ListGroups(ctx context.Context, tenantID string) ([]server.Group, error) {
	return s.rec.ListGroups(ctx, tenantID)
}

// licensePolicy is a license's policy as its acquisitions are decided:
// compiled once per license version.
type licensePolicy struct {
	compiled *server.CompiledPolicy
	// members are the members of each group the policy names, encoded for
	// a cap of the group as a whole (a host group's lower-cased).
	members map[string]live.Names
	// groupsWanted: acquire_pools.lua has asked for the members of a
	// group capped as a whole (live.Judgement.GroupsWanted): the
	// decisions of this license version carry them from then on.
	groupsWanted atomic.Bool
}

// newLicensePolicy compiles p (nil: no policy).
func newLicensePolicy(p *server.Policy) *licensePolicy {
	if p == nil {
		return nil
	}
	lp := &licensePolicy{compiled: server.Compile(p), members: make(map[string]live.Names, len(p.Groups))}
	for _, g := range p.Groups {
		ms := g.Members
		if g.Kind == server.SubjectHostGroup {
			ms = make([]string, len(g.Members))
			for i, m := range g.Members {
				ms[i] = strings.ToLower(m)
			}
		}
		lp.members[g.Name] = live.EncodeNames(ms...)
	}
	return lp
}

// judgement decides req on feature ("" the base pool) and gives the
// decision as acquire_pools.lua judges it.
func (lp *licensePolicy) judgement(feature string, req *server.AcquireRequest) (server.Decision, *live.Judgement) {
	d := lp.compiled.Decide(feature, server.Identity{User: req.User, Host: req.Hostname})
	host := strings.ToLower(req.Hostname)
	j := &live.Judgement{Scope: feature, User: req.User, Host: host, Refused: d.Refusal != nil,
		OwnHandBack: lp.compiled.HasRules(feature)}
	if len(d.Caps) > 0 {
		j.Caps = make([]live.JudgedCap, len(d.Caps))
	}
	for i, c := range d.Caps {
		jc := live.JudgedCap{Limit: c.Limit}
		switch {
		case c.Subject.Kind == server.SubjectUser, c.Subject.Kind == server.SubjectGroup && c.EachMember:
			jc.Names = live.EncodeNames(req.User)
		case c.Subject.Kind == server.SubjectHost, c.Subject.Kind == server.SubjectHostGroup && c.EachMember:
			jc.Host, jc.Names = true, live.EncodeNames(host)
		case c.Subject.Kind == server.SubjectGroup:
			jc.Group, jc.Names = true, lp.members[c.Subject.Name]
		default:
			jc.Group, jc.Host, jc.Names = true, true, lp.members[c.Subject.Name]
		}
		if jc.Group {
			j.GroupsWanted = &lp.groupsWanted
		}
		j.Caps[i] = jc
	}
	if len(d.Reservations) > 0 {
		j.Reservations = make([]live.JudgedReservation, len(d.Reservations))
	}
	for i, r := range d.Reservations {
		j.Reservations[i] = live.JudgedReservation{Key: r.Key, Seats: r.Seats, Member: r.Member}
	}
	return d, j
}

// policyRefusal is the error for a refusal of acquire_pools.lua: server.Judge
// on the counts the script judged by gives the verdict, so that the client
// gets the embedded store's error.
func (s *Store) policyRefusal(feature string, d *server.Decision, g *live.PoolAcquisition) error {
	caps := make(map[string]int, len(g.CapCounts))
	for k, n := range g.CapCounts {
		if k < len(d.Caps) {
			caps[d.Caps[k].Key] = n
		}
	}
	held := make(map[string]int, len(g.Held))
	for k, n := range g.Held {
		if k < len(d.Reservations) {
			held[d.Reservations[k].Key] = n
		}
	}
	v := server.Judge(*d, g.InUse, g.Limit, caps, held)
	if v.Grant {
		return s.fail("acquire", fmt.Errorf("acquire_pools.lua refused what server.Judge grants (in use %d of %d)", g.InUse, g.Limit))
	}
	return v.Err(feature)
}

// hasPolicy reports whether the license was last seen with a site policy.
func (s *Store) hasPolicy(licenseID string) bool {
	_, ok := s.policied.Load(licenseID)
	return ok
}

// notePolicy remembers whether a license has a site policy (writing only
// what changes: a read of a sync.Map that is not written is lock-free).
func (s *Store) notePolicy(licenseID string, has bool) {
	switch {
	case has && !s.hasPolicy(licenseID):
		s.policied.Store(licenseID, struct{}{})
	case !has && s.hasPolicy(licenseID):
		s.policied.Delete(licenseID)
	}
}

// buildPolicyIndex builds the policy index of a license from the record,
// for its policy generation (one build per license at a time in this
// process; across processes they join: live.BeginPolicyIndex).
func (s *Store) buildPolicyIndex(ctx context.Context, licenseID string) error {
	ch := s.rebuilds.DoChan("policy:"+licenseID, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rebuildTimeout)
		defer cancel()
		return nil, s.writePolicyIndex(ctx, licenseID)
	})
	select {
	case <-ctx.Done():
		return server.Unavailable(ctx.Err())
	case r := <-ch:
		return r.Err
	}
}

// maxIndexBuilds bounds how often one build of a policy index starts
// again because its marker went meanwhile (a loss of Redis, a rebuild of
// one of the license's pools).
const maxIndexBuilds = 10

// writePolicyIndex begins a build (before the snapshot: a loss or a pool
// rebuild after it takes the marker away, and the build starts again),
// reads the holders of the license's live leases from the record and
// writes them. It then pushes the license's settings, in case Redis is
// behind the generation it built for.
func (s *Store) writePolicyIndex(ctx context.Context, licenseID string) error {
	for range maxIndexBuilds {
		lic, err := s.rec.License(ctx, licenseID)
		if errors.Is(err, record.ErrNotFound) {
			return nil // the next round finds the license gone
		}
		if err != nil {
			return err
		}
		if lic.Deleted || lic.PolicyGen == 0 {
			s.pushConf(ctx, lic) // Redis is behind the record
			return nil
		}
		token, built, err := s.live.BeginPolicyIndex(ctx, licenseID, lic.PolicyGen)
		if err != nil || built {
			return err
		}
		snap, err := s.rec.PolicyIndexSnapshot(ctx, licenseID)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		if snap.License.PolicyGen != lic.PolicyGen {
			continue // switched off or on again meanwhile
		}
		holders := make([]live.PolicyHolder, 0, len(snap.Holders))
		for _, h := range snap.Holders {
			scope, ok := snap.Pools[h.PoolID]
			if !ok {
				continue
			}
			holders = append(holders, live.PolicyHolder{Scope: scope, PoolID: h.PoolID, LeaseID: h.LeaseID,
				User: h.User, Host: h.Hostname, Reservation: h.Reservation})
		}
		err = s.live.WritePolicyIndex(ctx, licenseID, token, lic.PolicyGen, holders)
		if errors.Is(err, live.ErrPolicyIndexLost) {
			continue
		}
		if err != nil {
			return err
		}
		s.log.Debug("distributed store: built the policy index of a license from PostgreSQL", "license", licenseID,
			"holders", len(holders))
		s.pushConf(ctx, snap.License)
		return nil
	}
	return errors.New("the policy index kept being taken away while it was built")
}

// pruneBatch is how many members of a policy index one call of
// policy_prune.lua reads, and prunePerPass how many calls a license gets
// per reconciliation: a large index is gone through over several passes
// (a call holds Redis about a millisecond).
const (
	pruneBatch   = 1000
	prunePerPass = 16
)

// prunePolicyIndexes removes from the policy index of every license with
// a policy the members of ended leases that no acquisition has met (their
// holders did not come back): the leader runs it with its reconciliation,
// going on each time where the last pass stopped, so that an index holds
// about as many members as its license has live leases, plus the ends of
// the few minutes a sweep takes.
func (s *Store) prunePolicyIndexes(ctx context.Context) error {
	lics, err := s.rec.PolicyPools(ctx)
	if err != nil {
		return err
	}
	s.reconcileMu.Lock()
	from := s.pruneAfter
	s.pruneAfter = make(map[string]string, len(lics))
	s.reconcileMu.Unlock()
	var errs []error
	for id, pl := range lics {
		ids := make([]string, 0, len(pl.Pools))
		for p := range pl.Pools {
			ids = append(ids, p)
		}
		after := from[id]
		for range prunePerPass {
			next, _, err := s.live.PrunePolicyIndex(ctx, id, pl.Version, ids, after, pruneBatch)
			if err != nil {
				errs = append(errs, fmt.Errorf("prune the policy index of license %s: %w", id, err))
				break
			}
			if after = next; after == "" {
				break
			}
		}
		if after != "" {
			s.reconcileMu.Lock()
			s.pruneAfter[id] = after
			s.reconcileMu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// revive judges the revival of a lapsed lease of a license with a site
// policy (heartbeat.lua answered StatusJudgeRevival) and gives
// revive.lua's Beat; StatusDeleted when the lease's pool is gone.
func (s *Store) revive(ctx context.Context, info *leaseInfo, leaseID, tokenHash string) (live.Beat, error) {
	licenseID := server.PoolLicense(info.LicenseID)
	fresh := false
	for range maxAttempts {
		lg, _, err := s.grantsOf(ctx, licenseID, fresh)
		if server.ErrorReason(err) == server.ReasonLicenseNotFound {
			return live.Beat{Status: live.StatusDeleted}, nil
		}
		if err != nil {
			return live.Beat{}, s.fail("heartbeat: read license", err)
		}
		set := s.revivalSet(licenseID, lg, info)
		if set == nil {
			return live.Beat{Status: live.StatusDeleted}, nil // its grant went
		}
		var j *live.Judgement
		if lg.policy != nil {
			_, j = lg.policy.judgement(info.Feature, &server.AcquireRequest{User: info.User, Hostname: info.Hostname})
			for i := range j.Reservations {
				j.Reservations[i].Member = info.Reservation != "" && j.Reservations[i].Key == info.Reservation
			}
		}
		r, err := s.live.Revive(ctx, set, info.LicenseID, leaseID, tokenHash, j)
		if err != nil {
			return live.Beat{}, s.fail("heartbeat: revive", err)
		}
		fresh = true
		switch r.Status {
		case live.StatusStale:
			if _, err := s.staleGrants(ctx, licenseID, lg, r.RedisVersion); err != nil {
				return live.Beat{}, err
			}
		case live.StatusNoState:
			for _, p := range r.NoState {
				if err := s.ensureLive(ctx, p); err != nil && server.ErrorReason(err) != server.ReasonLicenseNotFound {
					return live.Beat{}, s.fail("heartbeat: build live state", err)
				}
			}
		case live.StatusNoPolicyIndex:
			if err := s.buildPolicyIndex(ctx, licenseID); err != nil {
				return live.Beat{}, s.fail("heartbeat: build the policy index", err)
			}
		case live.StatusDeleted:
			if r.DeletedPool == info.LicenseID || r.DeletedPool == licenseID {
				return live.Beat{Status: live.StatusDeleted}, nil
			}
		default:
			return r.Beat, nil
		}
	}
	return live.Beat{}, s.fail("heartbeat", errors.New("live state kept changing; giving up"))
}

// revivalSet is the PoolSet a lapsed lease's revival is judged over: the
// pools that may grant its feature and version (its base pool alone for a
// license's lease), then the feature's other grants; nil when the lease's
// pool is no longer one of them.
func (s *Store) revivalSet(licenseID string, lg *licenseGrants, info *leaseInfo) *live.PoolSet {
	if info.LicenseID == licenseID {
		return s.live.NewPolicyPoolSet(licenseID, lg.version, []string{licenseID}, nil)
	}
	covering, _ := lg.license.GrantsFor(info.Feature, info.Version)
	var pools, others []string
	for _, g := range covering {
		pools = append(pools, g.ID)
	}
	found := false
	for _, g := range lg.license.Grants {
		if g.Feature != info.Feature {
			continue
		}
		found = found || g.ID == info.LicenseID
		if !slices.Contains(pools, g.ID) {
			others = append(others, g.ID)
		}
	}
	if !found {
		return nil
	}
	return s.live.NewPolicyPoolSet(licenseID, lg.version, pools, others)
}
