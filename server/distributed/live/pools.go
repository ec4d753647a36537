package live

import (
	"context"
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
}

// NewPoolSet makes the PoolSet of pools of licenseID at its settings
// version licVersion.
func (rs *Redis) NewPoolSet(licenseID string, licVersion int64, pools []string) *PoolSet {
	keys := make([]string, 0, 8*len(pools)+1)
	for _, p := range pools {
		keys = append(keys, rs.keysOf(p)...)
	}
	keys = append(keys, rs.keysOf(licenseID)[0])
	// The acquisitions on the same pools at the same version that wait at
	// the same moment share a run, in the pipeline of the other calls.
	group := licenseID + "@" + strconv.FormatInt(licVersion, 10) + ":" + strings.Join(pools, ",")
	return &PoolSet{licenseID: licenseID, version: licVersion, pools: slices.Clone(pools), keys: keys, group: group}
}

// AcquirePools judges one acquisition over pools of one license, in order
// (acquire_pools.lua): a live lease of its keys in any of them is handed
// back, else the first usable one with a free seat grants. licVersion is
// the license's settings version the pools were chosen at: a newer one in
// Redis answers StatusStale.
func (rs *Redis) AcquirePools(ctx context.Context, licenseID string, licVersion int64, pools []string, req *server.AcquireRequest, out *PoolAcquisition) error {
	return rs.AcquirePoolSet(ctx, rs.NewPoolSet(licenseID, licVersion, pools), req, out)
}

// AcquirePoolSet is AcquirePools over a PoolSet.
func (rs *Redis) AcquirePoolSet(ctx context.Context, set *PoolSet, req *server.AcquireRequest, out *PoolAcquisition) error {
	licenseID, pools := set.licenseID, set.pools
	args := make([]any, 0, 6+2*len(strategies))
	args = append(args, strconv.FormatInt(set.version, 10), len(pools))
	args = append(args, leaseKey(req.LeaseID), tokenKey(req.TokenHash), req.IdempotencyKey, borrowUS(req.BorrowFor))
	for _, st := range strategies {
		args = append(args, string(st), server.DedupeKey(st, req.Fingerprint, req.User, req.Hostname))
	}
	r, err := rs.batches.Do(ctx, licReq{scriptAcquirePools, set.group, args, set.keys})
	if err != nil {
		return err
	}
	*out = PoolAcquisition{}
	poolOf := func(v any) string {
		i := int(replyInt(v))
		if i == 0 {
			return licenseID
		}
		return pools[i-1]
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
	}
	a := &out.Acquisition
	a.Status = Status(replyString(res[0]))
	if a.Status == StatusFailed {
		a.Message = replyString(res[2])
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
	if a.Status == StatusUnusable {
		unusable(r, out)
		return nil
	}
	if i == 0 {
		return nil
	}
	jsons, _ := r.shared(1).([]any)
	epochs, _ := r.shared(2).([]any)
	versions, _ := r.shared(3).([]any)
	if len(jsons) < i || len(epochs) < i || len(versions) < i {
		return fmt.Errorf("acquire_pools.lua: unexpected reply %v", r.reply)
	}
	a.Epoch, a.Version = replyInt(epochs[i-1]), replyInt(versions[i-1])
	return rs.licenseOf(replyString(jsons[i-1]), &a.License)
}

// unusable reads why each pool may not grant, and when each starts.
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
