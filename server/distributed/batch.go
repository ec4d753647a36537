package distributed

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Group commit. The hot path (acquire, heartbeat, release) makes one or two
// round trips per call to Redis and PostgreSQL. Under load, concurrent
// calls share them: a batcher runs the calls waiting at one moment as one
// batch (one Redis pipeline, one PostgreSQL statement), and the calls that
// arrive while it runs form the next one. No call waits for a timer: a
// call that finds a free slot runs at once, alone if it is alone, so that
// a lightly loaded server answers as fast as before and a busy one does
// fewer, larger round trips. Every call keeps its own outcome: batching
// changes neither what a call does nor the order of its writes (doc.go).

// batchCall is one call waiting in a batcher.
type batchCall[Q, R any] struct {
	ctx  context.Context
	req  Q
	res  R
	err  error
	wake chan []*batchCall[Q, R] // a batch to run, or nil: res and err are set
}

// errBatcherStopped answers calls made after Close.
var errBatcherStopped = errors.New("store closed")

// batcher runs calls in batches, at most max calls per batch and at most
// slots batches at once. One batch starts as soon as a call comes; a
// second one starts meanwhile only once at least min calls wait for it, so
// that a steady trickle of calls does not become a stream of batches of
// one (each costing a round trip and its system calls), while a burst need
// not wait for the batch in flight. The calls that come while no batch may
// start form the next batch.
//
// The caller that starts a batch runs it (it is in it). When a batch is
// done, the next batch, if calls are waiting, is handed to the first of
// them, which runs it on its own goroutine: nobody runs a batch that does
// not hold its own call, so a caller's answer is never held up by other
// callers' batches, and no goroutine is started or woken just to run a
// batch. (Long-lived worker goroutines, tried instead, cost an extra
// wake-up per batch and measured slower.)
type batcher[Q, R any] struct {
	slots, min, max int
	run             func(batch []*batchCall[Q, R]) // sets res and err of every call

	mu      sync.Mutex
	pending []*batchCall[Q, R]
	running int // batches started and not done
	stopped bool
	idle    sync.Cond // with mu: signalled when stopped and running drops to 0

	pool sync.Pool
}

func newBatcher[Q, R any](slots, min, max int, run func([]*batchCall[Q, R])) *batcher[Q, R] {
	b := &batcher[Q, R]{slots: slots, min: min, max: max, run: run}
	b.idle.L = &b.mu
	return b
}

// do runs req in the next batch and returns its outcome.
func (b *batcher[Q, R]) do(ctx context.Context, req Q) (R, error) {
	c, _ := b.pool.Get().(*batchCall[Q, R])
	if c == nil {
		c = &batchCall[Q, R]{wake: make(chan []*batchCall[Q, R], 1)}
	}
	c.ctx, c.req = ctx, req

	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		var zero R
		return zero, errBatcherStopped
	}
	b.pending = append(b.pending, c)
	var batch []*batchCall[Q, R]
	if b.running == 0 || (b.running < b.slots && len(b.pending) >= b.min) {
		b.running++
		batch = b.takeLocked()
	}
	b.mu.Unlock()
	for {
		if batch != nil {
			b.lead(batch)
		}
		// Each call gets at most one batch to run (while it waits), then
		// exactly one nil (once it is answered).
		if batch = <-c.wake; batch == nil {
			break
		}
	}
	res, err := c.res, c.err
	var (
		zeroQ Q
		zeroR R
	)
	c.ctx, c.req, c.res, c.err = nil, zeroQ, zeroR, nil
	b.pool.Put(c)
	return res, err
}

// takeLocked removes the next batch from the pending calls.
func (b *batcher[Q, R]) takeLocked() []*batchCall[Q, R] {
	if len(b.pending) <= b.max {
		batch := b.pending
		b.pending = nil
		return batch
	}
	batch := b.pending[:b.max:b.max]
	b.pending = append([]*batchCall[Q, R](nil), b.pending[b.max:]...)
	return batch
}

// gather lets the goroutines that are ready to run go first (under load,
// callers on their way here), then adds the calls waiting by now to the
// batch, up to max: under load batches grow at the cost of one yield,
// and a lone call (nothing else ready) loses nothing.
func (b *batcher[Q, R]) gather(batch []*batchCall[Q, R]) []*batchCall[Q, R] {
	runtime.Gosched()
	b.mu.Lock()
	if n := min(len(b.pending), b.max-len(batch)); n > 0 {
		batch = append(batch, b.pending[:n]...)
		b.pending = append(b.pending[:0:0], b.pending[n:]...)
	}
	b.mu.Unlock()
	return batch
}

// lead runs a batch, hands the slot on to the calls that came meanwhile,
// and then wakes the callers of the batch.
func (b *batcher[Q, R]) lead(batch []*batchCall[Q, R]) {
	batch = b.gather(batch)
	b.runSafely(batch)
	b.mu.Lock()
	var next []*batchCall[Q, R]
	if len(b.pending) > 0 {
		next = b.takeLocked()
	} else {
		b.running--
		if b.running == 0 && b.stopped {
			b.idle.Broadcast()
		}
	}
	b.mu.Unlock()
	if next != nil {
		next[0].wake <- next
	}
	for _, c := range batch {
		c.wake <- nil
	}
}

// stop makes later calls fail and waits until the calls already made are
// answered.
func (b *batcher[Q, R]) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for b.running > 0 {
		b.idle.Wait()
	}
}

// runSafely runs a batch; a panic fails every call of the batch instead of
// leaving its callers waiting forever.
func (b *batcher[Q, R]) runSafely(batch []*batchCall[Q, R]) {
	defer func() {
		if p := recover(); p != nil {
			for _, c := range batch {
				c.err = fmt.Errorf("batch panicked: %v", p)
			}
		}
	}()
	b.run(batch)
}

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
	scriptAcquire:   {head: 4, width: 11, max: 64},
	scriptHeartbeat: {head: 4, width: 1, max: 128},
	scriptCheck:     {head: 2, width: 4, max: 128},
	scriptEnd:       {max: 256}, // reply is a count, shared
	scriptNoop:      {head: 1, width: 1, max: 128},
}

// licReq is one call of a hot script on one license.
type licReq struct {
	script    *redis.Script
	licenseID string
	args      []any
}

// licRes is a hot script's answer to one call: the whole reply, and the
// call's own values (nil when the reply is shared by every call).
type licRes struct {
	reply any
	own   []any
}

// head returns the reply's shared value i.
func (r licRes) head(i int) any { return r.reply.([]any)[i] }

// status is the call's status: its own first value, else the shared one.
func (r licRes) status() string {
	if r.own != nil {
		return str(r.own[0])
	}
	if a, ok := r.reply.([]any); ok && len(a) > 0 {
		return str(a[0])
	}
	return ""
}

// runLicenseScripts runs a batch of hot script calls: one script run per
// script and license (up to its shape's max calls), all of them in one
// pipeline of EVALSHA. A run that finds its script missing (NOSCRIPT:
// Redis restarted or its scripts were flushed) is repeated with
// Script.Run, which falls back to EVAL and so loads the script.
func (s *Store) runLicenseScripts(batch []*batchCall[licReq, licRes]) {
	ctx := context.Background() // one caller giving up must not fail the others
	type run struct {
		script    *redis.Script
		licenseID string
		calls     []*batchCall[licReq, licRes]
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
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		k := runKey{c.req.script, c.req.licenseID}
		r := find(k)
		if r == nil || len(r.calls) == shapes[k.script].max {
			r = &run{script: k.script, licenseID: k.licenseID}
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
			return r.calls[0].req.args
		}
		n := 0
		for _, c := range r.calls {
			n += len(c.req.args)
		}
		args := make([]any, 0, n)
		for _, c := range r.calls {
			args = append(args, c.req.args...)
		}
		return args
	}
	switch len(runs) {
	case 0:
		return
	case 1:
		r := runs[0]
		r.cmd = r.script.Run(ctx, s.rdb, s.redisKeys(r.licenseID), argsOf(r)...)
	default:
		pipe := s.rdb.Pipeline()
		for _, r := range runs {
			r.cmd = r.script.EvalSha(ctx, pipe, s.redisKeys(r.licenseID), argsOf(r)...)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own error
		for _, r := range runs {
			if redis.HasErrorPrefix(r.cmd.Err(), "NOSCRIPT") {
				r.cmd = r.script.Run(ctx, s.rdb, s.redisKeys(r.licenseID), argsOf(r)...)
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
				c.err = err
			case shared:
				c.res = licRes{reply: reply}
			default:
				k := shape.head + shape.width*j
				c.res = licRes{reply: reply, own: a[k : k+shape.width : k+shape.width]}
			}
		}
	}
}

// evalLicense runs a hot script call through the Redis batcher.
func (s *Store) evalLicense(ctx context.Context, script *redis.Script, licenseID string, args ...any) (licRes, error) {
	return s.hot.do(ctx, licReq{script, licenseID, args})
}
