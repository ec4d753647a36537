package live

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// The hot path's script calls (acquire, heartbeat, check, end) go to Redis
// in batches (package groupcommit): the calls waiting at one moment share
// one pipeline, and the calls of one license one script run.

// Redis batches: one pipeline in flight at a time (measured: a second one
// in flight made smaller batches and cost more CPU per call than it saved
// in waiting), of at most maxPipeline calls.
const (
	redisSlots  = 1
	redisMin    = 8 // calls waiting before a second pipeline starts, if redisSlots > 1
	maxPipeline = 512
)

// A hot script takes the calls of one license that arrive together in one
// run (ARGV is the concatenation of their arguments) and judges each on its
// own, in order, exactly as if it came alone. Its reply is either one
// status shared by every call (e.g. {'NOCONF'}), or `head` values shared by
// every call followed by `width` values per call.
type scriptShape struct {
	head, width int
	max         int // calls per run
}

var shapes = map[*redis.Script]scriptShape{
	scriptAcquire:   {head: 4, width: 12, max: 64},
	scriptHeartbeat: {head: 4, width: 1, max: 128},
	scriptCheck:     {head: 2, width: 6, max: 128},
	scriptEnd:       {max: 256}, // reply is a count, shared
	scriptNoop:      {head: 1, width: 1, max: 128},
	// A feature's acquisitions on the same pools (licReq.keys) share a run.
	scriptAcquirePools: {head: 6, width: 14, max: 64},
}

// licReq is one call of a hot script on one license: on its keys
// (keysOf), or on keys of its own; licenseID then names them (the calls of
// one name share a run).
type licReq struct {
	script    *redis.Script
	licenseID string
	args      []any
	keys      []string
}

// licRes is a hot script's answer to one call: the whole reply, and the
// call's own values (nil when the reply is shared by every call).
type licRes struct {
	reply any
	mine  []any
}

// shared returns the reply's value i, shared by every call of the run.
func (r licRes) shared(i int) any { return r.reply.([]any)[i] }

// status is the call's status: its own first value, else the shared one.
func (r licRes) status() string {
	if r.mine != nil {
		return replyString(r.mine[0])
	}
	if a, ok := r.reply.([]any); ok && len(a) > 0 {
		return replyString(a[0])
	}
	return ""
}

// runLicenseScripts runs a batch of hot script calls: one script run per
// script and license (up to its shape's max calls), all of them in one
// pipeline of EVALSHA. A run that finds its script missing (NOSCRIPT:
// Redis restarted or its scripts were flushed) is repeated with
// Script.Run, which falls back to EVAL and so loads the script.
func (rs *Redis) runLicenseScripts(batch []*groupcommit.Call[licReq, licRes]) {
	ctx := context.Background() // one caller giving up must not fail the others
	type run struct {
		script    *redis.Script
		licenseID string
		keys      []string // nil: keysOf(licenseID)
		calls     []*groupcommit.Call[licReq, licRes]
		cmd       *redis.Cmd
	}
	type runKey struct {
		script    *redis.Script
		licenseID string
	}
	var (
		runs []*run
		open map[runKey]*run // once there are many runs
	)
	find := func(k runKey) *run {
		if open != nil {
			return open[k]
		}
		for i := len(runs) - 1; i >= 0; i-- { // few runs: no hashing
			if r := runs[i]; r.script == k.script && r.licenseID == k.licenseID {
				return r
			}
		}
		return nil
	}
	for _, c := range batch {
		if err := c.Ctx.Err(); err != nil {
			c.Err = err
			continue
		}
		k := runKey{c.Req.script, c.Req.licenseID}
		r := find(k)
		if r == nil || len(r.calls) == shapes[k.script].max {
			r = &run{script: k.script, licenseID: k.licenseID, keys: c.Req.keys}
			runs = append(runs, r)
			if open == nil && len(runs) > 8 {
				open = make(map[runKey]*run, 2*len(runs))
				for _, r := range runs {
					open[runKey{r.script, r.licenseID}] = r // the latest run of each key last
				}
			}
			if open != nil {
				open[k] = r
			}
		}
		r.calls = append(r.calls, c)
	}
	argsOf := func(r *run) []any {
		if len(r.calls) == 1 {
			return r.calls[0].Req.args
		}
		n := 0
		for _, c := range r.calls {
			n += len(c.Req.args)
		}
		args := make([]any, 0, n)
		for _, c := range r.calls {
			args = append(args, c.Req.args...)
		}
		return args
	}
	keysOf := func(r *run) []string {
		if r.keys != nil {
			return r.keys
		}
		return rs.keysOf(r.licenseID)
	}
	switch len(runs) {
	case 0:
		return
	case 1:
		r := runs[0]
		r.cmd = r.script.Run(ctx, rs.rdb, keysOf(r), argsOf(r)...)
	default:
		pipe := rs.rdb.Pipeline()
		for _, r := range runs {
			r.cmd = r.script.EvalSha(ctx, pipe, keysOf(r), argsOf(r)...)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for _, r := range runs {
			if redis.HasErrorPrefix(r.cmd.Err(), "NOSCRIPT") {
				r.cmd = r.script.Run(ctx, rs.rdb, keysOf(r), argsOf(r)...)
			}
		}
	}
	for _, r := range runs {
		reply, err := r.cmd.Result()
		shape := shapes[r.script]
		a, isArray := reply.([]any)
		shared := !isArray || len(a) == 1
		if err == nil && !shared && len(a) != shape.head+shape.width*len(r.calls) {
			err = fmt.Errorf("script reply of %d values for %d calls", len(a), len(r.calls))
		}
		for j, c := range r.calls {
			switch {
			case err != nil:
				c.Err = err
			case shared:
				c.Res = licRes{reply: reply}
			default:
				k := shape.head + shape.width*j
				c.Res = licRes{reply: reply, mine: a[k : k+shape.width : k+shape.width]}
			}
		}
	}
}

// evalLicense runs a hot script call through the batcher.
func (rs *Redis) evalLicense(ctx context.Context, script *redis.Script, licenseID string, args ...any) (licRes, error) {
	return rs.batches.Do(ctx, licReq{script, licenseID, args, nil})
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
func (rs *Redis) pipelineScripts(ctx context.Context, calls []scriptCall) []scriptReply {
	out := make([]scriptReply, len(calls))
	for start := 0; start < len(calls); start += cleanupPipeline {
		part := calls[start:min(start+cleanupPipeline, len(calls))]
		pipe := rs.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(part))
		for i, c := range part {
			cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for i, cmd := range cmds {
			if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				cmd = part[i].script.Run(ctx, rs.rdb, part[i].keys, part[i].args...)
			}
			out[start+i] = scriptReply{cmd.Val(), cmd.Err()}
		}
	}
	return out
}
