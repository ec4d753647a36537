// Package embedded is seatd's one-node storage backend: a bbolt database in
// a local data directory, with every active lease also held in memory so
// that seat counting, heartbeats and the expiry index never touch the disk.
//
// One mutex guards the memory. Database writes happen outside it, with the
// lease (or license) marked busy so that nothing else changes it meanwhile.
// Writes that take or keep a seat are applied in memory first and undone if
// the write fails; writes that free a seat are stored first and applied in
// memory after. A failed write therefore never lets a license exceed its
// limit (invariant 1).
package embedded

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/seatd/seatd/server"
)

var _ server.Store = (*Store)(nil)

// Options configure a Store. Zero values take the defaults.
type Options struct {
	// Clock is the store's time (default time.Now). All deadlines are
	// judged by it.
	Clock func() time.Time
	// HeartbeatFlushInterval is how often heartbeats are written to disk
	// (default 5s). A crash loses at most this much heartbeat progress.
	HeartbeatFlushInterval time.Duration
	// Logger reports background failures (default slog.Default()).
	Logger *slog.Logger
	// VerifyPages reads every page of the data file's tree at Open
	// (verifyPages), so that damage anywhere stops the start instead of
	// being found by a call later.
	VerifyPages bool
	// WriteFailureWindow is how long CheckReady reports the store not
	// ready after a commit the data dir refused, unless one succeeds
	// since (default DefaultWriteFailureWindow).
	WriteFailureWindow time.Duration
}

const (
	defaultFlushInterval = 5 * time.Second
	lockTimeout          = time.Second
	dbFileName           = "seatd.db"
)

// initialMmap is the address space bbolt maps the data file into at
// first (no memory: pages count only once read). bbolt remaps as the
// file grows past its map, and a remap first copies every node the
// transaction changed out of the old map: a flush of a million leases'
// heartbeats paid that several times on the way to 1 GiB.
const initialMmap = (strconv.IntSize / 64) << 30 // 1 GiB where addresses are 64-bit, else bbolt's own

// Store is the embedded server.Store.
type Store struct {
	db         *bolt.DB
	commit     committer // every write goes through it
	clock      func() time.Time
	log        *slog.Logger
	flushEvery time.Duration
	// failureWindow: CheckReady (health.go).
	failureWindow time.Duration

	mu   sync.Mutex
	idle *sync.Cond // broadcast whenever a busy mark is cleared
	idx  *index

	// For BackgroundStats.
	flushed, flushFailures atomic.Int64

	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open opens (or creates) the store in dir and loads its active leases.
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, dbFileName)
	if err := checkDataFile(path); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := guard(path, func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, InitialMmapSize: initialMmap})
		return err
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("data dir %s is in use by another seatd process", dir)
	}
	var d *DamagedError
	if err = boltDamage(path, err); errors.As(err, &d) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open database in data dir %s: %w", dir, err)
	}
	s := &Store{
		db:            db,
		clock:         opts.Clock,
		log:           cmp.Or(opts.Logger, slog.Default()),
		flushEvery:    cmp.Or(opts.HeartbeatFlushInterval, defaultFlushInterval),
		failureWindow: cmp.Or(opts.WriteFailureWindow, DefaultWriteFailureWindow),
		idx:           newIndex(),
		stop:          make(chan struct{}),
		stopped:       make(chan struct{}),
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.idle = sync.NewCond(&s.mu)
	s.commit.db, s.commit.now, s.commit.onDamage = db, s.now, s.noteDamage
	load := s.load
	if opts.VerifyPages {
		load = func() error {
			if err := verifyPages(db); err != nil {
				return err
			}
			return s.load()
		}
	}
	if err := guard(path, load); err != nil {
		_ = guard(path, db.Close)
		if errors.As(err, &d) {
			return nil, err
		}
		return nil, fmt.Errorf("load data dir %s: %w", dir, err)
	}
	go s.flushLoop()
	return s, nil
}

// Close stops the flusher, writes pending heartbeats and closes the
// database. Calling it again returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.stopped
		flushErr := s.flush()
		var shutErr error
		if flushErr == nil { // everything is on disk: a clean shutdown
			shutErr = s.commit.write(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyOpen, []byte{0}) })
		}
		s.closeErr = errors.Join(flushErr, shutErr, s.db.Close())
	})
	return s.closeErr
}

// now is the store's time, in UTC and without a monotonic reading, so that
// values compare equal before and after a round trip through the database.
func (s *Store) now() time.Time { return s.clock().UTC().Round(0) }

// fail turns a database failure into the error clients see. *server.Error
// values (not found, conflict...) pass unchanged.
func (s *Store) fail(op string, err error) error {
	var e *server.Error
	if errors.As(err, &e) {
		return err
	}
	s.log.Error("embedded store: "+op, "err", err)
	return server.Unavailable(err)
}

// wait releases s.mu until some busy mark is cleared. Callers re-check
// their state afterwards: anything may have changed.
func (s *Store) wait() { s.idle.Wait() }

// writeBusy commits f with the leases rs marked busy and s.mu released:
// calls on those leases wait (wait) until the write settles, the rest of
// the store carries on meanwhile. Called with s.mu held.
func (s *Store) writeBusy(rs []ref, f func(tx *bolt.Tx) error) error {
	for _, r := range rs {
		s.idx.slots.at(r).flags |= flagBusy
	}
	var err error
	s.unlocked(func() { err = s.commit.write(f) })
	s.done(rs...)
	return err
}

// done clears the busy marks of leases and wakes the waiters.
func (s *Store) done(rs ...ref) {
	for _, r := range rs {
		s.idx.slots.at(r).flags &^= flagBusy
	}
	s.idle.Broadcast()
}
