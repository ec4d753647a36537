package embedded

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxGroup bounds how many writes share one transaction.
const maxGroup = 512

// committer is group commit: a write that arrives while a transaction is
// being committed waits and goes into the next one with every other write
// that arrived meanwhile. A lone write commits at once (bbolt's own Batch
// would wait for its MaxBatchDelay first), and under load many writes share
// one fsync.
type committer struct {
	db      *bolt.DB
	now     func() time.Time
	mu      sync.Mutex
	queue   []*commitCall
	running bool

	// failing makes every commit fail, as a full or broken disk would: the
	// conformance suite's fault hook (export_test.go), never set otherwise.
	failing atomic.Bool

	// health: the outcomes of commits and a damage found (health.go);
	// onDamage is told of the first damage.
	health   health
	onDamage func(*DamagedError)
}

// errInjected is the failure of a commit while failing is set.
var errInjected = errors.New("injected: the data directory refused the write")

type commitCall struct {
	fn   func(*bolt.Tx) error
	err  error
	done chan struct{}
}

// write runs fn in a write transaction and returns once it is durable.
// fn may run more than once (when a write sharing its transaction fails,
// the others run again without it), so it must reset anything it collects.
func (c *committer) write(fn func(*bolt.Tx) error) error {
	call := &commitCall{fn: fn, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, call)
	if !c.running {
		c.running = true
		go c.loop()
	}
	c.mu.Unlock()
	<-call.done
	return call.err
}

// loop commits groups until the queue is empty.
func (c *committer) loop() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxGroup)
		if n == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		group := slices.Clone(c.queue[:n])
		c.queue = slices.Delete(c.queue, 0, n)
		c.mu.Unlock()
		c.commit(group)
	}
}

// commit runs a group in one transaction. A write that fails gets its error
// alone; the transaction is rolled back and the others run again. A panic
// of bbolt on a damaged page fails the whole group and every commit after
// it (health.go).
func (c *committer) commit(group []*commitCall) {
	refuse := func(err error) {
		for _, call := range group {
			call.err = err
			close(call.done)
		}
	}
	if d := c.health.damage(); d != nil {
		refuse(errDamagedRefusal(d))
		return
	}
	if c.failing.Load() {
		c.health.note(c.now(), errInjected)
		refuse(errInjected)
		return
	}
	for len(group) > 0 {
		failed := -1
		var err error
		panicked := guard(c.db.Path(), func() error {
			err = c.db.Update(func(tx *bolt.Tx) error {
				for i, call := range group {
					if err := call.fn(tx); err != nil {
						failed = i
						return err
					}
				}
				return nil
			})
			return nil
		})
		var d *DamagedError
		if errors.As(panicked, &d) {
			c.onDamage(d)
			refuse(errDamagedRefusal(d))
			return
		}
		if failed < 0 {
			c.health.note(c.now(), err)
			refuse(err) // nil, or the commit's failure for all
			return
		}
		group[failed].err = err
		close(group[failed].done)
		group = slices.Delete(group, failed, failed+1)
	}
}

// probe commits an empty transaction: bbolt still writes a freelist page
// and a meta page and syncs, so it fails where the data dir refuses writes.
func (c *committer) probe() error {
	if d := c.health.damage(); d != nil {
		return d
	}
	if c.failing.Load() {
		return errInjected
	}
	var err error
	panicked := guard(c.db.Path(), func() error {
		err = c.db.Update(func(*bolt.Tx) error { return nil })
		return nil
	})
	return cmp.Or(panicked, err)
}
