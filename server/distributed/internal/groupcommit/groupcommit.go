// Package groupcommit runs concurrent calls in batches: the distributed
// store's hot path shares Redis pipelines and PostgreSQL statements
// through it (ARCHITECTURE.md, "Group commit").
package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// The hot path (acquire, heartbeat, release) makes one or two
// round trips per call to Redis and PostgreSQL. Under load, concurrent
// calls share them: a batcher runs the calls waiting at one moment as one
// batch (one Redis pipeline, one PostgreSQL statement), and the calls that
// arrive while it runs form the next one. No call waits for a timer: a
// call that finds a free slot runs at once, alone if it is alone, so that
// a lightly loaded server answers as fast as before and a busy one does
// fewer, larger round trips. Every call keeps its own outcome: batching
// changes neither what a call does nor the order of its writes.

// Call is one call waiting in a batcher.
type Call[Q, R any] struct {
	Ctx  context.Context
	Req  Q
	Res  R
	Err  error
	wake chan []*Call[Q, R] // a batch to run, or nil: res and err are set
}

// ErrStopped answers calls made after Close.
var ErrStopped = errors.New("store closed")

// Batcher runs calls in batches, at most max calls per batch and at most
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
type Batcher[Q, R any] struct {
	slots, min, max int
	run             func(batch []*Call[Q, R]) // sets res and err of every call

	mu      sync.Mutex
	pending []*Call[Q, R]
	running int // batches started and not done
	stopped bool
	idle    sync.Cond // with mu: signalled when stopped and running drops to 0

	pool sync.Pool
}

func New[Q, R any](slots, min, max int, run func([]*Call[Q, R])) *Batcher[Q, R] {
	b := &Batcher[Q, R]{slots: slots, min: min, max: max, run: run}
	b.idle.L = &b.mu
	return b
}

// Do runs req in the next batch and returns its outcome.
func (b *Batcher[Q, R]) Do(ctx context.Context, req Q) (R, error) {
	c, _ := b.pool.Get().(*Call[Q, R])
	if c == nil {
		c = &Call[Q, R]{wake: make(chan []*Call[Q, R], 1)}
	}
	c.Ctx, c.Req = ctx, req

	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		var zero R
		return zero, ErrStopped
	}
	b.pending = append(b.pending, c)
	var batch []*Call[Q, R]
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
	res, err := c.Res, c.Err
	var (
		zeroQ Q
		zeroR R
	)
	c.Ctx, c.Req, c.Res, c.Err = nil, zeroQ, zeroR, nil
	b.pool.Put(c)
	return res, err
}

// takeLocked removes the next batch from the pending calls.
func (b *Batcher[Q, R]) takeLocked() []*Call[Q, R] {
	if len(b.pending) <= b.max {
		batch := b.pending
		b.pending = nil
		return batch
	}
	batch := b.pending[:b.max:b.max]
	b.pending = append([]*Call[Q, R](nil), b.pending[b.max:]...)
	return batch
}

// gather lets the goroutines that are ready to run go first (under load,
// callers on their way here), then adds the calls waiting by now to the
// batch, up to max: under load batches grow at the cost of one yield,
// and a lone call (nothing else ready) loses nothing.
func (b *Batcher[Q, R]) gather(batch []*Call[Q, R]) []*Call[Q, R] {
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
func (b *Batcher[Q, R]) lead(batch []*Call[Q, R]) {
	batch = b.gather(batch)
	b.runSafely(batch)
	b.mu.Lock()
	var next []*Call[Q, R]
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

// Stop makes later calls fail and waits until the calls already made are
// answered.
func (b *Batcher[Q, R]) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	for b.running > 0 {
		b.idle.Wait()
	}
}

// runSafely runs a batch; a panic fails every call of the batch instead of
// leaving its callers waiting forever.
func (b *Batcher[Q, R]) runSafely(batch []*Call[Q, R]) {
	defer func() {
		if p := recover(); p != nil {
			for _, c := range batch {
				c.Err = fmt.Errorf("batch panicked: %v", p)
			}
		}
	}()
	b.run(batch)
}
