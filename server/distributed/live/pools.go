package live

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
)

// Statuses of a feature's acquisition (AcquirePools) besides acquire.lua's.
const (
	StatusStale      Status = "STALE"      // the license's grants changed since the caller read them
	StatusUnusable   Status = "UNUSABLE"   // no pool is usable now (PoolAcquisition.Unusable says why)
	StatusNotStarted Status = "NOTSTARTED" // a pool's grant has not started yet
	// The license's site policy refused it (PoolAcquisition.CapCounts,
	// Held, InUse and Limit: the counts it judged by).
	StatusPolicyRefused Status = "POLICYREFUSED"
	// The license's policy index is missing, or was built for another
	// policy generation: build it (BuildPolicyIndex), ask again.
	StatusNoPolicyIndex Status = "NOPOLICYINDEX"
)

// PoolAcquisition is acquire_pools.lua's answer: an Acquisition in the
// pool PoolID (Displaced may then be in other pools of the license:
// DisplacedPools[i] is the pool of Displaced[i]), or why none granted.
type PoolAcquisition struct {
	Acquisition
	PoolID       string
	NoState      []string    // StatusNoState: the pools (the license's id too) without live state
	DeletedPool  string      // StatusDeleted: the pool (or the license) deleted
	RedisVersion int64       // StatusStale: the license's settings version in Redis
	Unusable     []Status    // per pool: why it may not grant now ("" usable)
	Starts       []time.Time // per pool: its grant's start (zero: none)
	// StatusPolicyRefused: the live leases counted under each cap of the
	// Judgement and each of its reservations, as far as it judged them
	// (InUse and Limit: the pools' seats in use and limit).
	CapCounts, Held []int
}

// PoolSet is the pools of one license an acquisition is judged over, in
// order, at a settings version of the license, with their keys and their
// batching group made once (NewPoolSet): the store keeps one per license
// version, feature and version asked, so that a feature's acquisition
// does not build 8 keys a pool each time.
type PoolSet struct {
	licenseID string
	version   int64
	pools     []string
	keys      []string
	group     string
	// A set for a license with a site policy: the pools of the scope that
	// may not grant (all the grants of the feature count for the policy),
	// after pools in keys, and the name each pool of the scope has in the
	// policy index (JSON).
	others []string
	names  []byte
}

// at is the pool of each place of the script's KEYS (from 1).
func (ps *PoolSet) at(i int) string {
	if i <= len(ps.pools) {
		return ps.pools[i-1]
	}
	return ps.others[i-1-len(ps.pools)]
}

// NewPoolSet makes the PoolSet of pools of licenseID at its settings
// version licVersion.
func (rs *Redis) NewPoolSet(licenseID string, licVersion int64, pools []string) *PoolSet {
	return rs.newPoolSet(licenseID, licVersion, pools, nil, false)
}

// NewPolicyPoolSet is NewPoolSet for a license with a site policy: pools
// may grant (the license's own, alone, for its base pool), others are the
// other pools of the scope (the feature's grants that do not cover the
// version asked), whose leases count for the policy too.
func (rs *Redis) NewPolicyPoolSet(licenseID string, licVersion int64, pools, others []string) *PoolSet {
	return rs.newPoolSet(licenseID, licVersion, pools, others, true)
}

func (rs *Redis) newPoolSet(licenseID string, licVersion int64, pools, others []string, policy bool) *PoolSet {
	keys := make([]string, 0, 8*(len(pools)+len(others))+3)
	for _, p := range pools {
		keys = append(keys, rs.keysOf(p)...)
	}
	for _, p := range others {
		keys = append(keys, rs.keysOf(p)...)
	}
	keys = append(keys, rs.keysOf(licenseID)[0])
	keys = append(keys, rs.keys.Policy(licenseID)...)
	// The acquisitions on the same pools at the same version that wait at
	// the same moment share a run, in the pipeline of the other calls.
	group := licenseID + "@" + strconv.FormatInt(licVersion, 10) + ":" + strings.Join(pools, ",")
	if policy {
		group += "+" + strings.Join(others, ",")
	}
	set := &PoolSet{licenseID: licenseID, version: licVersion, pools: slices.Clone(pools), keys: keys, group: group,
		others: slices.Clone(others)}
	if policy {
		names := make([]string, 0, len(pools)+len(others))
		for _, p := range append(slices.Clone(pools), others...) {
			names = append(names, indexPoolName(p))
		}
		set.names, _ = json.Marshal(names)
	}
	return set
}

// AcquirePools judges one acquisition over pools of one license, in order
// (acquire_pools.lua): a live lease of its keys in any of them is handed
// back, else the first usable one with a free seat grants. licVersion is
// the license's settings version the pools were chosen at: a newer one in
// Redis answers StatusStale.
func (rs *Redis) AcquirePools(ctx context.Context, licenseID string, licVersion int64, pools []string, req *server.AcquireRequest, out *PoolAcquisition) error {
	return rs.AcquirePoolSet(ctx, rs.NewPoolSet(licenseID, licVersion, pools), req, nil, out)
}

// AcquirePoolSet is AcquirePools over a PoolSet. j is the decision of
// the license's site policy on the acquisition (nil: the license has no
// policy), on a set made by NewPolicyPoolSet: a grant then takes the seat
// of the reservation out.Reservation names, or a shared one ("").
func (rs *Redis) AcquirePoolSet(ctx context.Context, set *PoolSet, req *server.AcquireRequest, j *Judgement, out *PoolAcquisition) error {
	licenseID, pools := set.licenseID, set.pools
	args := make([]any, 0, 8+2*len(strategies))
	args = append(args, strconv.FormatInt(set.version, 10), len(pools), len(pools)+len(set.others))
	args = append(args, leaseKey(req.LeaseID), tokenKey(req.TokenHash), req.IdempotencyKey, borrowUS(req.BorrowFor))
	for _, st := range strategies {
		args = append(args, string(st), server.DedupeKey(st, req.Fingerprint, req.User, req.Hostname))
	}
	withhold := j != nil && j.GroupsWanted != nil && !j.GroupsWanted.Load()
	decision := ""
	if j != nil {
		decision = string(j.encode(set.names, withhold))
	}
	args = append(args, decision)
	r, err := rs.batches.Do(ctx, licReq{scriptAcquirePools, set.group, args, set.keys})
	if err != nil {
		return err
	}
	if withhold && r.mine != nil && Status(replyString(r.mine[0])) == StatusNeedNames {
		// A group's members were left out, and its count needs them:
		// from now on they are sent (the same decision, in a new step).
		j.GroupsWanted.Store(true)
		args[len(args)-1] = string(j.encode(set.names, false))
		if r, err = rs.batches.Do(ctx, licReq{scriptAcquirePools, set.group, args, set.keys}); err != nil {
			return err
		}
	}
	*out = PoolAcquisition{}
	poolOf := func(v any) string {
		i := int(replyInt(v))
		if i == 0 {
			return licenseID
		}
		return set.at(i)
	}
	res := r.mine
	if res == nil { // for every acquisition of the run
		all, _ := r.reply.([]any)
		if len(all) != 1 {
			return fmt.Errorf("acquire_pools.lua: unexpected reply %v", r.reply)
		}
		res, _ = all[0].([]any)
		if len(res) < 2 {
			return fmt.Errorf("acquire_pools.lua: unexpected reply %v", r.reply)
		}
	}
	switch Status(replyString(res[0])) {
	case StatusNoState:
		out.Status = StatusNoState
		for _, v := range res[1:] {
			out.NoState = append(out.NoState, poolOf(v))
		}
		return nil
	case StatusDeleted:
		out.Status, out.DeletedPool = StatusDeleted, poolOf(res[1])
		return nil
	case StatusStale:
		out.Status = StatusStale
		out.RedisVersion, _ = strconv.ParseInt(replyString(res[1]), 10, 64)
		return nil
	case StatusNoPolicyIndex:
		out.Status = StatusNoPolicyIndex
		return nil
	}
	a := &out.Acquisition
	a.Status = Status(replyString(res[0]))
	switch a.Status {
	case StatusFailed:
		a.Message = replyString(res[2])
		return nil
	case StatusPolicyRefused:
		a.InUse, a.Limit = int(replyInt(res[7])), int(replyInt(res[10]))
		counts, _ := res[12].([]any)
		if len(counts) == 2 {
			out.CapCounts, out.Held = replyInts(counts[0]), replyInts(counts[1])
		}
		return nil
	}
	i := int(replyInt(res[1]))
	if i > 0 {
		out.PoolID = pools[i-1]
	}
	a.LeaseID = leaseIDOf(replyString(res[2]))
	a.Acquired, a.Heartbeat, a.Deadline = usTime(replyInt(res[3])), usTime(replyInt(res[4])), usTime(replyInt(res[5]))
	a.TokenSeq, a.InUse, a.PrevFirst = replyInt(res[6]), int(replyInt(res[7])), replyInt(res[8])
	a.DedupeKey, a.Limit = replyString(res[9]), int(replyInt(res[10]))
	if d, _ := res[11].([]any); len(d) > 0 {
		for k := 0; k+1 < len(d); k += 2 {
			a.DisplacedPools = append(a.DisplacedPools, poolOf(d[k]))
			a.Displaced = append(a.Displaced, leaseIDOf(replyString(d[k+1])))
		}
	}
	if rp, _ := res[13].([]any); len(rp) == 4 {
		a.Replaced = &ReplacedLease{PoolID: poolOf(rp[0]), LeaseID: leaseIDOf(replyString(rp[1])),
			Heartbeat: usTime(replyInt(rp[2])), Deadline: usTime(replyInt(rp[3]))}
	}
	if a.Status == StatusUnusable {
		unusable(r, out)
		return nil
	}
	if i == 0 {
		return nil
	}
	if k := int(replyInt(res[12])); j != nil && k > 0 && k <= len(j.Reservations) && a.Status == StatusGranted {
		a.Reservation = j.Reservations[k-1].Key
	}
	a.Reclaimed = a.Status == StatusHandedBack && replyInt(res[12]) == 1
	jsons, _ := r.shared(1).([]any)
	epochs, _ := r.shared(2).([]any)
	versions, _ := r.shared(3).([]any)
	if len(jsons) < i || len(epochs) < i || len(versions) < i {
		return fmt.Errorf("acquire_pools.lua: unexpected reply %v", r.reply)
	}
	// The script gives the settings only of the pools an acquisition of
	// the run looked at ("" for the others), the pool judged among them.
	if e, ok := epochs[i-1].(string); ok && e == "" {
		return fmt.Errorf("acquire_pools.lua: no settings of pool %d, which it judged: %v", i, r.reply)
	}
	a.Epoch, a.Version = replyInt(epochs[i-1]), replyInt(versions[i-1])
	return rs.licenseOf(replyString(jsons[i-1]), &a.License)
}

// unusable reads why each pool may not grant, and when each starts (the
// script looked at every pool when none was usable).
func unusable(r licRes, out *PoolAcquisition) {
	bads, _ := r.shared(4).([]any)
	starts, _ := r.shared(5).([]any)
	for k := range bads {
		out.Unusable = append(out.Unusable, Status(replyString(bads[k])))
		var st time.Time
		if k < len(starts) {
			if us := replyInt(starts[k]); us > 0 {
				st = usTime(us)
			}
		}
		out.Starts = append(out.Starts, st)
	}
}
