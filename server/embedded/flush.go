package embedded

import (
	"fmt"

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

// flush writes every lease changed by a heartbeat since the last flush in
// one transaction. It writes the latest in-memory versions; a version that
// a synchronous write has overtaken meanwhile is skipped by its Rev.
func (s *Store) flush() error {
	s.mu.Lock()
	if len(s.idx.dirty) == 0 {
		s.mu.Unlock()
		return nil
	}
	es := make([]*entry, 0, len(s.idx.dirty))
	recs := make([]leaseRecord, 0, len(s.idx.dirty))
	for e := range s.idx.dirty {
		es = append(es, e)
		recs = append(recs, e.record())
	}
	clear(s.idx.dirty)
	s.mu.Unlock()

	err := s.commit.write(func(tx *bolt.Tx) error {
		for _, rec := range recs {
			if _, err := updateLease(tx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.flushed.Add(int64(len(recs)))
		return nil
	}
	s.flushFailures.Add(1)
	// Keep them dirty (those still active) for the next attempt.
	s.mu.Lock()
	for _, e := range es {
		if s.idx.leases[e.lease.ID] == e {
			s.idx.dirty[e] = struct{}{}
		}
	}
	s.mu.Unlock()
	return fmt.Errorf("flush %d heartbeats: %w", len(recs), err)
}

// BackgroundStats reports the write-behind work.
func (s *Store) BackgroundStats() server.BackgroundStats {
	return server.BackgroundStats{HeartbeatsFlushed: s.flushed.Load(), FlushFailures: s.flushFailures.Load()}
}

var _ server.BackgroundReporter = (*Store)(nil)
