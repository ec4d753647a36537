package live

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Firsts reads the earliest deadline (unix µs; -1: none) that each license
// holds for the cleaner, live or expiring (firsts.lua), pipelined; errs[i]
// is ErrNoState for a license whose live state is missing.
func (rs *Redis) Firsts(ctx context.Context, licenseIDs []string) ([]int64, []error) {
	calls := make([]scriptCall, len(licenseIDs))
	for i, id := range licenseIDs {
		calls[i] = scriptCall{scriptFirsts, rs.keysOf(id), nil}
	}
	firsts, errs := make([]int64, len(licenseIDs)), make([]error, len(licenseIDs))
	for i, r := range rs.pipelineScripts(ctx, calls) {
		res, err := r.slice()
		if err == nil && Status(replyString(res[0])) == StatusNoState {
			err = ErrNoState
		}
		if errs[i] = err; err == nil {
			firsts[i] = replyInt(res[1])
		}
	}
	return firsts, errs
}

// LowerLateHints lowers the expiry hints of licenses that are missing or
// later than a deadline the license holds (dls: from Firsts), and returns
// how many it lowered. A hint is kept at or before its license's earliest
// deadline by every call that sets a deadline (NoteDeadline, LowerHint),
// so one found later was lost: without it the cleaner would never look at
// the license's due leases. Hints at or before their deadline are left
// alone (no write, no new hint generation).
func (rs *Redis) LowerLateHints(ctx context.Context, dls []Deadline) (int, error) {
	var byShard [HintShards][]Deadline
	for _, d := range dls {
		if d.At >= 0 {
			k := HintShardOf(d.LicenseID)
			byShard[k] = append(byShard[k], d)
		}
	}
	pipe := rs.rdb.Pipeline()
	var cmds [HintShards]*redis.FloatSliceCmd
	for k, ds := range byShard {
		if len(ds) == 0 {
			continue
		}
		ids := make([]string, len(ds))
		for i, d := range ds {
			ids[i] = d.LicenseID
		}
		cmds[k] = pipe.ZMScore(ctx, rs.keys.ExpiryShard(k)[0], ids...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	var late []Deadline
	for k, cmd := range cmds {
		if cmd == nil {
			continue
		}
		// ZMSCORE answers nil for a member it does not hold; go-redis
		// reads that as 0, which no hint can be (a time in µs).
		for i, hint := range cmd.Val() {
			if d := byShard[k][i]; hint == 0 || int64(hint) > d.At {
				late = append(late, d)
			}
		}
	}
	if len(late) > 0 {
		rs.LowerHints(ctx, late)
	}
	return len(late), nil
}
