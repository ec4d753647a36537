package distributed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seatd/seatd/server/distributed/record"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// reconcileLimit bounds the leases one reconciliation reads.
const reconcileLimit = 10_000

// DueLeases walks the expiry hint: only licenses whose hint is at or before
// now are asked (dueMany: plain reads, then due.lua where a lease may be
// due), in hint order and a pipeline per chunk of licenses, and the walk
// stops as soon as no further license can hold one of the first `limit`
// due leases. The cost grows with the licenses holding due (or recently
// renewed) leases, not with all leases, and Redis round trips with the
// chunks, not with the licenses.
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
	cands, members, gens, err := s.dueHints(ctx, nowUS)
	if err != nil {
		return nil, s.fail("due leases", err)
	}
	if len(cands) == 0 {
		return nil, nil
	}

	// Licenses are asked in hint order, a chunk at a time (dueMany), the
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
		refs, firsts, err := s.dueMany(ctx, members[start:end], nowUS, after, limit)
		if err != nil {
			return nil, s.fail("due leases", err)
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
		s.applyHints(ctx, fix, lower)
		slices.SortFunc(out, compareRefs)
		out = out[:min(len(out), limit)]
		start = end
	}
	return out, nil
}

// dueHints reads every piece of the expiry hint: the licenses hinted at or
// before now, in hint order, with their generations. Two pipelines.
func (s *Store) dueHints(ctx context.Context, nowUS int64) (cands []redis.Z, members []string, gens []any, err error) {
	pipe := s.rdb.Pipeline()
	ranges := make([]*redis.ZSliceCmd, hintShards)
	for k := range hintShards {
		ranges[k] = pipe.ZRangeByScoreWithScores(ctx, s.keys.expiryShard(k)[0],
			&redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(nowUS, 10)})
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, nil, err
	}
	pipe = s.rdb.Pipeline()
	genCmds := make([]*redis.SliceCmd, hintShards)
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
		genCmds[k] = pipe.HMGet(ctx, s.keys.expiryShard(k)[1], names...)
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

// dueMany lists the due leases of licenses (dueOf) and their earliest
// deadlines, in two pipelines. First three plain reads per license: a
// license can hold a due lease only if its live state is missing, its
// first live deadline is at or before the cutoff, or it holds expiring
// leases. Then due.lua only where one may be due. The common case of a
// license whose hint came but whose leases were all renewed costs no
// script. The reads need not be atomic: as ZRANGE comes before HLEN, a
// lease expire.lua moves in between is seen by one of them, and a hint
// raised from a read that a concurrent change made stale is refused by
// fixhint.lua (the change bumps the generation).
func (s *Store) dueMany(ctx context.Context, licenseIDs []string, nowUS int64, after *server.LeaseRef, limit int) ([][]server.LeaseRef, []int64, error) {
	refs := make([][]server.LeaseRef, len(licenseIDs))
	firsts := make([]int64, len(licenseIDs))
	type peek struct {
		conf  *redis.BoolCmd
		first *redis.ZSliceCmd
		exp   *redis.IntCmd
	}
	peeks := make([]peek, len(licenseIDs))
	pipe := s.rdb.Pipeline()
	for i, id := range licenseIDs {
		k := s.keys.license(id)
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
		calls[j] = scriptCall{scriptDue, s.keys.license(licenseIDs[i]), []any{nowUS, cdl, cid, limit}}
	}
	for j, r := range s.pipelineScripts(ctx, calls) {
		i, id := ask[j], licenseIDs[ask[j]]
		res, err := r.slice()
		if err != nil {
			return nil, nil, err
		}
		if str(res[0]) == "NOCONF" {
			if refs[i], firsts[i], err = s.dueOf(ctx, id, nowUS, after, limit); err != nil {
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
func (s *Store) applyHints(ctx context.Context, fix, lower []any) {
	// Each piece of the hint gets its own calls (one slot per script).
	var fixOf, lowerOf [hintShards][]any
	for i := 0; i+3 < len(fix); i += 4 {
		k := hintShardOf(str(fix[i]))
		fixOf[k] = append(fixOf[k], fix[i:i+4]...)
	}
	for i := 0; i+1 < len(lower); i += 2 {
		k := hintShardOf(str(lower[i]))
		lowerOf[k] = append(lowerOf[k], lower[i:i+2]...)
	}
	var calls []scriptCall
	for k := range hintShards {
		keys := s.keys.expiryShard(k)
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
	for _, r := range s.pipelineScripts(ctx, calls) {
		if r.err != nil {
			s.log.Warn("distributed store: update expiry hints", "err", r.err)
		}
	}
}

func dueCursor(after *server.LeaseRef) (deadline, id string) {
	if after == nil {
		return "", ""
	}
	return strconv.FormatInt(timeUS(after.ExpiresAt), 10), after.LeaseID
}

// parseDue reads an OK reply of due.lua.
func parseDue(licenseID string, res []any) ([]server.LeaseRef, int64) {
	refs := make([]server.LeaseRef, 0, (len(res)-2)/2)
	for i := 2; i+1 < len(res); i += 2 {
		refs = append(refs, server.LeaseRef{LeaseID: str(res[i]), LicenseID: licenseID, ExpiresAt: usTime(num(res[i+1]))})
	}
	return refs, num(res[1])
}

// dueOf lists the due leases of one license after the cursor, and the
// earliest deadline it holds (-1: none).
func (s *Store) dueOf(ctx context.Context, licenseID string, nowUS int64, after *server.LeaseRef, limit int) ([]server.LeaseRef, int64, error) {
	cdl, cid := dueCursor(after)
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
		refs, first := parseDue(licenseID, res)
		return refs, first, nil
	}
	return nil, 0, fmt.Errorf("license %s: live state kept changing", licenseID)
}

func compareRefs(a, b server.LeaseRef) int {
	return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), strings.Compare(a.LeaseID, b.LeaseID))
}

// maybeReconcile re-derives expiry hints from PostgreSQL, at most every
// s.reconcileEvery: the active leases whose recorded deadline has passed. It
// repairs what the hint can lose (a crash between a grant and its hint, a
// Redis restart) and hands the cleaner orphans (adopt.lua). Failures are
// logged; the next pass tries again.
func (s *Store) maybeReconcile(ctx context.Context, now time.Time) {
	s.reconcileMu.Lock()
	if !s.lastReconcile.IsZero() && time.Since(s.lastReconcile) < s.reconcileEvery {
		s.reconcileMu.Unlock()
		return
	}
	s.lastReconcile = time.Now()
	s.reconcileMu.Unlock()
	if err := s.reconcile(ctx, now); err != nil {
		s.log.Warn("distributed store: reconcile expiry hints from PostgreSQL", "err", err)
	}
	if err := s.syncConf(ctx); err != nil {
		s.log.Warn("distributed store: compare license settings in Redis with the record", "err", err)
	}
}

func (s *Store) reconcile(ctx context.Context, now time.Time) error {
	overdue, err := s.rec.Overdue(ctx, now, reconcileLimit)
	if err != nil {
		return err
	}
	var order []string
	byLicense := map[string][]any{}
	for _, r := range overdue {
		if _, ok := byLicense[r.LicenseID]; !ok {
			order = append(order, r.LicenseID)
		}
		byLicense[r.LicenseID] = adoptArgs(byLicense[r.LicenseID], r)
	}
	calls := make([]scriptCall, len(order))
	for i, licenseID := range order {
		calls[i] = scriptCall{scriptAdopt, s.keys.license(licenseID), byLicense[licenseID]}
	}
	var (
		hints    []any
		firstErr error
	)
	for i, r := range s.pipelineScripts(ctx, calls) {
		licenseID := order[i]
		res, err := r.slice()
		if err == nil && str(res[0]) == "NOCONF" {
			res, err = s.adoptOne(ctx, licenseID, byLicense[licenseID])
		}
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if res == nil {
			continue // the license is gone
		}
		if n := num(res[1]); n > 0 {
			s.adopted.Add(n)
			s.log.Warn("distributed store: adopted active leases unknown to Redis for cleanup", "license", licenseID, "leases", n)
		}
		if dl := num(res[2]); dl >= 0 {
			hints = append(hints, licenseID, dl)
		}
	}
	s.applyHints(ctx, nil, hints)
	return firstErr
}

// adoptArgs appends a recorded active lease to adopt.lua's arguments.
func adoptArgs(args []any, r record.Session) []any {
	return append(args, r.ID, r.TokenHash, timeUS(r.AcquiredAt), timeUS(r.LastHeartbeatAt),
		timeUS(r.ExpiresAt), r.DedupeKey, r.IdempotencyKey, r.TokenSeq)
}

// adoptOne runs adopt.lua on one license, building its live state if it is
// missing. A nil reply: the license does not exist (any more).
func (s *Store) adoptOne(ctx context.Context, licenseID string, args []any) ([]any, error) {
	for range 2 {
		res, err := scriptAdopt.Run(ctx, s.rdb, s.keys.license(licenseID), args...).Slice()
		if err != nil {
			return nil, err
		}
		if str(res[0]) != "NOCONF" {
			return res, nil
		}
		if err := s.ensureLive(ctx, licenseID); err != nil {
			if server.ErrorReason(err) == server.ReasonLicenseNotFound {
				return nil, nil
			}
			return nil, err
		}
	}
	return nil, fmt.Errorf("license %s: live state kept changing", licenseID)
}

// ExpireLeases ends zombies in three steps (doc.go): per license, a script
// takes the leases still past their deadline out of the live state into the
// expiring hash; one PostgreSQL statement records all of them (state,
// usage and cleanup events, audit), exactly once; then they leave the
// expiring hash. If the record fails they stay there: they hold no seat,
// and the next pass finds them again (invariant 6).
func (s *Store) ExpireLeases(ctx context.Context, refs []server.LeaseRef) ([]server.Lease, error) {
	var order []string // licenses in the order of the refs
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
		if _, ok := byLicense[licenseID]; !ok {
			order = append(order, licenseID)
		}
		byLicense[licenseID] = append(byLicense[licenseID], ref.LeaseID)
	}
	// expire.lua on every license, one pipeline for the batch.
	calls := make([]scriptCall, len(order))
	for i, licenseID := range order {
		calls[i] = scriptCall{scriptExpire, s.keys.license(licenseID), byLicense[licenseID]}
	}
	var (
		exps   []record.Expiry
		owners []string
	)
	for i, r := range s.pipelineScripts(ctx, calls) {
		licenseID := order[i]
		res, err := r.slice()
		if err == nil && str(res[0]) == "NOCONF" {
			res, err = s.expireOne(ctx, licenseID, byLicense[licenseID])
		}
		if err != nil {
			// What the scripts moved meanwhile waits in the expiring
			// hashes for the next pass.
			return nil, s.fail("expire leases", err)
		}
		if res == nil {
			continue // the license is gone
		}
		now := usTime(num(res[1]))
		for i := 2; i+3 < len(res); i += 4 {
			exps = append(exps, record.Expiry{LeaseID: str(res[i]), Heartbeat: usTime(num(res[i+2])),
				Deadline: usTime(num(res[i+3])), At: now})
			owners = append(owners, licenseID)
		}
	}
	if len(exps) == 0 {
		return nil, nil
	}

	expired, err := s.rec.ExpireSessions(ctx, exps)
	if err != nil {
		// Nothing is recorded; the leases stay in the expiring hash and
		// the next pass records them.
		return nil, s.fail("expire leases", err)
	}

	// Recorded now, or ended before by someone else: forget them in Redis,
	// one pipeline of end.lua for the batch. A failure is logged: the
	// leases stay in the expiring hash, hold no seat, and the next pass
	// finds them recorded and drops them.
	var ends []scriptCall
	ids := make([]string, len(exps))
	for i, e := range exps {
		ids[i] = e.LeaseID
	}
	for i := 0; i < len(ids); {
		j := i
		args := []any{}
		for ; j < len(ids) && owners[j] == owners[i]; j++ {
			args = append(args, ids[j])
		}
		ends = append(ends, scriptCall{scriptEnd, s.keys.license(owners[i]), args})
		i = j
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for i, r := range s.pipelineScripts(dctx, ends) {
		if r.err != nil {
			s.log.Error("distributed store: remove expired leases from Redis", "license", ends[i].keys[0], "leases", len(ends[i].args), "err", r.err)
		}
	}
	s.hb.forget(ids...)
	return expired, nil
}

// expireOne runs expire.lua on one license, building its live state if it
// is missing. A nil reply: the license does not exist (any more).
func (s *Store) expireOne(ctx context.Context, licenseID string, args []any) ([]any, error) {
	for range maxAttempts {
		res, err := scriptExpire.Run(ctx, s.rdb, s.keys.license(licenseID), args...).Slice()
		if err != nil {
			return nil, err
		}
		if str(res[0]) != "NOCONF" {
			return res, nil
		}
		if err := s.ensureLive(ctx, licenseID); err != nil {
			if server.ErrorReason(err) == server.ReasonLicenseNotFound {
				return nil, nil
			}
			return nil, fmt.Errorf("build live state: %w", err)
		}
	}
	return nil, fmt.Errorf("license %s: live state kept changing", licenseID)
}

const (
	// cleanupPipeline bounds the script calls the cleanup path sends to
	// Redis in one pipeline.
	cleanupPipeline = 256
	// dueChunk bounds the licenses DueLeases asks at a time.
	dueChunk = 1024
)

// scriptCall is one script call of the cleanup path.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// scriptReply is the reply of one script call, or its error.
type scriptReply struct {
	val any
	err error
}

// slice returns an array reply.
func (r scriptReply) slice() ([]any, error) {
	if r.err != nil {
		return nil, r.err
	}
	a, ok := r.val.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected script reply %T", r.val)
	}
	return a, nil
}

// pipelineScripts runs script calls as pipelines of at most
// cleanupPipeline EVALSHA, and returns every call's reply. Pipelining only
// shares round trips: each script still runs atomically on the keys of
// one license (or the hint), and a call's failure is its own. A call that
// finds its script missing (NOSCRIPT: Redis restarted or flushed its
// scripts) is run again alone with Script.Run, which falls back to EVAL.
func (s *Store) pipelineScripts(ctx context.Context, calls []scriptCall) []scriptReply {
	out := make([]scriptReply, len(calls))
	for start := 0; start < len(calls); start += cleanupPipeline {
		part := calls[start:min(start+cleanupPipeline, len(calls))]
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(part))
		for i, c := range part {
			cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for i, cmd := range cmds {
			if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				cmd = part[i].script.Run(ctx, s.rdb, part[i].keys, part[i].args...)
			}
			out[start+i] = scriptReply{cmd.Val(), cmd.Err()}
		}
	}
	return out
}
