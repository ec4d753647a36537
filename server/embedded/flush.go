package embedded

import (
	"bytes"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/internal/periodic"
)

// flushLoop writes heartbeats behind, every flushEvery, until Close.
// The interval is real time: it paces disk writes and decides nothing
// about leases, whose deadlines are judged by the store's clock.
func (s *Store) flushLoop() {
	defer close(s.stopped)
	periodic.Run(s.stop, s.flushEvery, func() {
		if err := s.flush(); err != nil {
			s.log.Error("embedded store: flush heartbeats; retrying next tick", "err", err)
		}
	})
}

// flushChunk is how many dirty leases flush snapshots per hold of the
// lock, so that a large flush does not stall the hot path.
const flushChunk = 4096

// flushed is one lease a flush wrote, to mark dirty again if it fails.
type flushedLease struct {
	r   ref
	gen uint32
}

// flush writes every lease changed by a heartbeat since the last flush in
// one transaction, in key order. It writes the latest in-memory versions;
// a version that a synchronous write has overtaken meanwhile is skipped by
// its rev, and a lease being written right now is left for the next one
// (its write may yet fail and be undone).
func (s *Store) flush() error {
	s.mu.Lock()
	queued := s.idx.dirty
	s.idx.dirty = nil
	s.mu.Unlock()
	var (
		ws   []activeWrite
		done []flushedLease
	)
	for chunk := range slices.Chunk(queued, flushChunk) {
		s.mu.Lock()
		for _, r := range chunk {
			sl := s.idx.slots.at(r)
			switch {
			case sl.flags&flagDirty == 0: // flushed, renewed or ended since
			case sl.busy():
				s.idx.dirty = append(s.idx.dirty, r) // still flagged: the next flush
			default:
				sl.flags &^= flagDirty
				done = append(done, flushedLease{r, sl.gen})
				ws = append(ws, s.idx.activeWrite(r))
			}
		}
		s.mu.Unlock()
	}
	if len(ws) == 0 {
		return nil
	}
	slices.SortFunc(ws, func(a, b activeWrite) int { return bytes.Compare(a.key, b.key) })

	err := s.commit.write(func(tx *bolt.Tx) error {
		for _, w := range ws {
			if _, err := updateLease(tx, w); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.flushed.Add(int64(len(ws)))
		return nil
	}
	s.flushFailures.Add(1)
	// Keep them dirty (those still active) for the next attempt.
	s.mu.Lock()
	for _, f := range done {
		if sl := s.idx.slots.at(f.r); sl.flags&flagUsed != 0 && sl.gen == f.gen {
			s.idx.markDirty(f.r)
		}
	}
	s.mu.Unlock()
	return fmt.Errorf("flush %d heartbeats: %w", len(ws), err)
}

// BackgroundStats reports the write-behind work.
func (s *Store) BackgroundStats() server.BackgroundStats {
	st := server.BackgroundStats{HeartbeatsFlushed: s.flushed.Load(), FlushFailures: s.flushFailures.Load()}
	if s.commit.health.damage() != nil {
		st.DataFileDamaged = 1
	}
	return st
}

var _ server.BackgroundReporter = (*Store)(nil)
