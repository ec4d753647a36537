package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// DueFunc lists the due leases of one license whose live state was
// missing: the caller rebuilds it, then asks Due (first: the earliest
// deadline it holds, -1 if none).
type DueFunc func(ctx context.Context, licenseID string, now time.Time, after *server.LeaseRef, limit int) (refs []server.LeaseRef, first int64, err error)

// DueLeases lists the first limit leases due at now (deadline at or
// before it), after the cursor, by (deadline, id). It walks the expiry
// hint: only licenses whose hint is at or before now are asked (dueAmong:
// plain reads, then due.lua where a lease may be due), in hint order and a
// pipeline per chunk of licenses, and the walk stops as soon as no further
// license can hold one of the first `limit` due leases. The cost grows
// with the licenses holding due (or recently renewed) leases, not with all
// leases, and Redis round trips with the chunks, not with the licenses.
// Licenses whose live state is missing are asked through missing. Hints
// found too early are raised, too late lowered.
func (rs *Redis) DueLeases(ctx context.Context, now time.Time, after *server.LeaseRef, limit int, missing DueFunc) ([]server.LeaseRef, error) {
	nowUS := timeUS(now)
	cands, members, gens, err := rs.dueHints(ctx, nowUS)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, nil
	}

	// Licenses are asked in hint order, a chunk at a time (dueAmong), the
	// chunks growing, so that a small page asks few licenses.
	var out []server.LeaseRef
	for start, size := 0, min(max(limit/16, 16), dueChunk); start < len(cands); size = min(size*4, dueChunk) {
		end := min(start+size, len(cands))
		if len(out) >= limit {
			// Every lease of a license hinted later than the page's last is
			// due later than it: so are those of the licenses after it.
			last := timeUS(out[limit-1].ExpiresAt)
			for j := start; j < end; j++ {
				if int64(cands[j].Score) > last {
					end = j
					break
				}
			}
			if end == start {
				break
			}
		}
		refs, firsts, err := rs.dueAmong(ctx, members[start:end], now, after, limit, missing)
		if err != nil {
			return nil, err
		}
		var fix, lower []any
		for i := start; i < end; i++ {
			out = append(out, refs[i-start]...)
			hint, first := int64(cands[i].Score), firsts[i-start]
			switch {
			case first < 0 || first > hint:
				gen := "0"
				if gens[i] != nil {
					gen = fmt.Sprint(gens[i])
				}
				fix = append(fix, members[i], hint, gen, first)
			case first < hint:
				lower = append(lower, members[i], first)
			}
		}
		rs.applyHints(ctx, fix, lower)
		slices.SortFunc(out, CompareRefs)
		out = out[:min(len(out), limit)]
		start = end
	}
	return out, nil
}

// dueHints reads every piece of the expiry hint: the licenses hinted at or
// before now, in hint order, with their generations. Two pipelines.
func (rs *Redis) dueHints(ctx context.Context, nowUS int64) (cands []redis.Z, members []string, gens []any, err error) {
	pipe := rs.rdb.Pipeline()
	ranges := make([]*redis.ZSliceCmd, HintShards)
	for k := range HintShards {
		ranges[k] = pipe.ZRangeByScoreWithScores(ctx, rs.keys.ExpiryShard(k)[0],
			&redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(nowUS, 10)})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, nil, err
	}
	pipe = rs.rdb.Pipeline()
	genCmds := make([]*redis.SliceCmd, HintShards)
	type cand struct {
		z   redis.Z
		gen func() any
	}
	var all []cand
	for k, r := range ranges {
		zs := r.Val()
		if len(zs) == 0 {
			continue
		}
		names := make([]string, len(zs))
		for i, z := range zs {
			names[i] = fmt.Sprint(z.Member)
		}
		genCmds[k] = pipe.HMGet(ctx, rs.keys.ExpiryShard(k)[1], names...)
		for i, z := range zs {
			cmd, i := genCmds[k], i
			all = append(all, cand{z, func() any { return cmd.Val()[i] }})
		}
	}
	if len(all) == 0 {
		return nil, nil, nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, nil, err
	}
	slices.SortFunc(all, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.z.Score, b.z.Score), strings.Compare(fmt.Sprint(a.z.Member), fmt.Sprint(b.z.Member)))
	})
	for _, c := range all {
		cands, members, gens = append(cands, c.z), append(members, fmt.Sprint(c.z.Member)), append(gens, c.gen())
	}
	return cands, members, gens, nil
}

// dueAmong lists the due leases of licenses (dueOf) and their earliest
// deadlines, in two pipelines. First three plain reads per license: a
// license can hold a due lease only if its live state is missing, its
// first live deadline is at or before the cutoff, or it holds expiring
// leases. Then due.lua only where one may be due. The common case of a
// license whose hint came but whose leases were all renewed costs no
// script. The reads need not be atomic: as ZRANGE comes before HLEN, a
// lease expire.lua moves in between is seen by one of them, and a hint
// raised from a read that a concurrent change made stale is refused by
// fixhint.lua (the change bumps the generation).
func (rs *Redis) dueAmong(ctx context.Context, licenseIDs []string, now time.Time, after *server.LeaseRef, limit int, missing DueFunc) ([][]server.LeaseRef, []int64, error) {
	nowUS := timeUS(now)
	refs := make([][]server.LeaseRef, len(licenseIDs))
	firsts := make([]int64, len(licenseIDs))
	type peek struct {
		conf  *redis.BoolCmd
		first *redis.ZSliceCmd
		exp   *redis.IntCmd
	}
	peeks := make([]peek, len(licenseIDs))
	pipe := rs.rdb.Pipeline()
	for i, id := range licenseIDs {
		k := rs.keysOf(id)
		peeks[i] = peek{pipe.HExists(ctx, k[0], "epoch"), pipe.ZRangeWithScores(ctx, k[2], 0, 0), pipe.HLen(ctx, k[5])}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, err
	}
	var ask []int
	for i, p := range peeks {
		first := int64(-1)
		if z := p.first.Val(); len(z) > 0 {
			first = int64(z[0].Score)
		}
		if !p.conf.Val() || p.exp.Val() > 0 || (first >= 0 && first <= nowUS) {
			ask = append(ask, i)
			continue
		}
		firsts[i] = first
	}
	if len(ask) == 0 {
		return refs, firsts, nil
	}

	cdl, cid := dueCursor(after)
	calls := make([]scriptCall, len(ask))
	for j, i := range ask {
		calls[j] = scriptCall{scriptDue, rs.keysOf(licenseIDs[i]), []any{nowUS, cdl, cid, limit}}
	}
	for j, r := range rs.pipelineScripts(ctx, calls) {
		i, id := ask[j], licenseIDs[ask[j]]
		res, err := r.slice()
		if err != nil {
			return nil, nil, err
		}
		if Status(replyString(res[0])) == StatusNoState {
			if refs[i], firsts[i], err = missing(ctx, id, now, after, limit); err != nil {
				return nil, nil, err
			}
			continue
		}
		refs[i], firsts[i] = parseDue(id, res)
	}
	return refs, firsts, nil
}

// applyHints repairs hints that are too early and lowers hints that are
// too late, one script call per cleanupPipeline licenses (all hints are in
// one slot): fix holds fixhint.lua's groups of four arguments, lower
// hint.lua's pairs. Failures are logged: the hint is only a hint (see
// DueLeases).
func (rs *Redis) applyHints(ctx context.Context, fix, lower []any) {
	// Each piece of the hint gets its own calls (one slot per script).
	var fixOf, lowerOf [HintShards][]any
	for i := 0; i+3 < len(fix); i += 4 {
		k := HintShardOf(replyString(fix[i]))
		fixOf[k] = append(fixOf[k], fix[i:i+4]...)
	}
	for i := 0; i+1 < len(lower); i += 2 {
		k := HintShardOf(replyString(lower[i]))
		lowerOf[k] = append(lowerOf[k], lower[i:i+2]...)
	}
	var calls []scriptCall
	for k := range HintShards {
		keys := rs.keys.ExpiryShard(k)
		for _, g := range []struct {
			script *redis.Script
			args   []any
			group  int
		}{{scriptFixHint, fixOf[k], 4}, {scriptHint, lowerOf[k], 2}} {
			for start, n := 0, cleanupPipeline*g.group; start < len(g.args); start += n {
				calls = append(calls, scriptCall{g.script, keys, g.args[start:min(start+n, len(g.args))]})
			}
		}
	}
	for _, r := range rs.pipelineScripts(ctx, calls) {
		if r.err != nil {
			rs.log.Warn("distributed store: update expiry hints", "err", r.err)
		}
	}
}

func dueCursor(after *server.LeaseRef) (deadline, id string) {
	if after == nil {
		return "", ""
	}
	return strconv.FormatInt(timeUS(after.ExpiresAt), 10), leaseKey(after.LeaseID)
}

// parseDue reads an OK reply of due.lua.
func parseDue(licenseID string, res []any) ([]server.LeaseRef, int64) {
	refs := make([]server.LeaseRef, 0, (len(res)-2)/2)
	for i := 2; i+1 < len(res); i += 2 {
		refs = append(refs, server.LeaseRef{LeaseID: leaseIDOf(replyString(res[i])), LicenseID: licenseID, ExpiresAt: usTime(replyInt(res[i+1]))})
	}
	return refs, replyInt(res[1])
}

// Due lists the due leases of one license after the cursor, and the
// earliest deadline it holds (-1: none); ErrNoState if its live state is
// missing.
func (rs *Redis) Due(ctx context.Context, licenseID string, now time.Time, after *server.LeaseRef, limit int) ([]server.LeaseRef, int64, error) {
	cdl, cid := dueCursor(after)
	res, err := scriptDue.Run(ctx, rs.rdb, rs.keysOf(licenseID), timeUS(now), cdl, cid, limit).Slice()
	if err != nil {
		return nil, 0, err
	}
	if Status(replyString(res[0])) == StatusNoState {
		return nil, 0, ErrNoState
	}
	refs, first := parseDue(licenseID, res)
	return refs, first, nil
}

// CompareRefs orders leases by deadline, then id as the live state keeps
// it (leaseKey: for canonical ids the same order as their text): the
// order of DueLeases, and of due.lua's cursor.
func CompareRefs(a, b server.LeaseRef) int {
	return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(leaseKey(a.LeaseID), leaseKey(b.LeaseID)))
}

// Deadline is a license's earliest deadline (unix µs), for the hint.
type Deadline struct {
	LicenseID string
	At        int64
}

// LowerHints lowers the expiry hints of licenses to deadlines they hold.
// Failures are logged: the hint is only a hint, re-derived from the
// record by the leader's reconciliation.
func (rs *Redis) LowerHints(ctx context.Context, dls []Deadline) {
	lower := make([]any, 0, 2*len(dls))
	for _, d := range dls {
		lower = append(lower, d.LicenseID, d.At)
	}
	rs.applyHints(ctx, nil, lower)
}

// NoteDeadline keeps the expiry hint at or before a deadline just set
// (prevFirst: the license's earliest deadline before, unix µs, -1 if none).
func (rs *Redis) NoteDeadline(ctx context.Context, licenseID string, prevFirst int64, deadline time.Time) {
	if dl := timeUS(deadline); prevFirst < 0 || dl < prevFirst {
		rs.LowerHint(ctx, licenseID, dl)
	}
}

// LowerHint records that a license holds a lease due at dl (unix µs; a
// negative dl is none). A failure is logged (see LowerHints).
func (rs *Redis) LowerHint(ctx context.Context, licenseID string, dl int64) {
	if dl < 0 {
		return
	}
	if err := scriptHint.Run(ctx, rs.rdb, rs.keys.ExpiryOf(licenseID), licenseID, dl).Err(); err != nil {
		rs.log.Warn("distributed store: lower expiry hint", "license", licenseID, "err", err)
	}
}

// MoveLegacyHint moves the one-piece expiry hint of earlier versions into
// its pieces (keys.go). Best effort: a hint left behind is re-derived from
// the record by the leader's reconciliation.
func (rs *Redis) MoveLegacyHint(ctx context.Context) {
	old := rs.keys.LegacyExpiry()
	hints, err := rs.rdb.ZRangeWithScores(ctx, old[0], 0, -1).Result()
	if err != nil || len(hints) == 0 {
		return
	}
	var lower []any
	for _, h := range hints {
		lower = append(lower, fmt.Sprint(h.Member), int64(h.Score))
	}
	rs.applyHints(ctx, nil, lower)
	if err := rs.rdb.Del(ctx, old[0]).Err(); err == nil {
		_ = rs.rdb.Del(ctx, old[1]).Err()
	}
	rs.log.Info("distributed store: moved the expiry hint into its pieces", "licenses", len(hints))
}
