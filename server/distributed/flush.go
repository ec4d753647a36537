package distributed

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/internal/periodic"
)

// Heartbeats are written behind: Heartbeat changes Redis only and notes
// the lease's new values here; the flusher writes all of them to
// PostgreSQL with one statement per batch, every HeartbeatFlushInterval,
// and Close writes what is left.
//
// The same statement returns the leases of the batch that the record says
// have ended (released, revoked, expired) while Redis still renewed them:
// a process died between recording an end and removing the lease from
// Redis, or the removal failed. The flusher removes them (end.lua), so an
// ended lease stops heartbeating within a flush interval whatever crashed
// in between: the record is the truth, and the repair needs no state
// that a crash could lose (the lease's next heartbeat brings it back here
// until the removal lands).

// maxFlushBatch bounds the leases one flush statement carries.
const maxFlushBatch = 5000

type pendingBeat struct{ hb, deadline time.Time }

type heartbeatBuffer struct {
	mu      sync.Mutex
	pending map[string]pendingBeat

	statements atomic.Int64 // flush statements run (for tests and metrics)
	written    atomic.Int64 // rows those statements carried
}

// add notes a heartbeat, keeping the newest per lease.
func (b *heartbeatBuffer) add(leaseID string, hb, deadline time.Time) {
	b.mu.Lock()
	if cur, ok := b.pending[leaseID]; !ok || hb.After(cur.hb) {
		b.pending[leaseID] = pendingBeat{hb, deadline}
	}
	b.mu.Unlock()
}

// take empties the buffer.
func (b *heartbeatBuffer) take() map[string]pendingBeat {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return nil
	}
	out := b.pending
	b.pending = make(map[string]pendingBeat, len(out))
	return out
}

// forget drops the pending heartbeats of leases that just ended (their end
// is recorded and they are out of Redis): the flush would only find them
// ended and take them for leases Redis kept by mistake.
func (b *heartbeatBuffer) forget(ids ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		delete(b.pending, id)
	}
}

// putBack returns unwritten heartbeats, unless newer ones came meanwhile.
func (b *heartbeatBuffer) putBack(m map[string]pendingBeat) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, p := range m {
		if cur, ok := b.pending[id]; !ok || p.hb.After(cur.hb) {
			b.pending[id] = p
		}
	}
}

func (s *Store) flushLoop() {
	defer close(s.stopped)
	periodic.Run(s.stop, s.flushEvery, func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.flushEvery)
		defer cancel()
		if err := s.flush(ctx); err != nil {
			s.log.Error("distributed store: write heartbeats behind; retrying next tick", "err", err)
		}
		s.retryConf(ctx)
	})
}

// flush writes every buffered heartbeat: one UPDATE per batch of up to
// maxFlushBatch leases. It only moves a lease's last heartbeat forward and
// never touches an ended lease, so a late or repeated flush is harmless.
func (s *Store) flush(ctx context.Context) error {
	pending := s.hb.take()
	if len(pending) == 0 {
		return nil
	}
	ids := make([]string, 0, min(len(pending), maxFlushBatch))
	hbs := make([]time.Time, 0, cap(ids))
	dls := make([]time.Time, 0, cap(ids))
	var failed error
	write := func() {
		if len(ids) == 0 {
			return
		}
		if failed == nil {
			s.hb.statements.Add(1)
			n, err := s.writeBeats(ctx, ids, hbs, dls)
			if err == nil {
				s.hb.written.Add(n)
				for _, id := range ids {
					delete(pending, id)
				}
			} else {
				failed = err
			}
		}
		ids, hbs, dls = ids[:0], hbs[:0], dls[:0]
	}
	// In id order, as every statement that locks several leases, so that
	// concurrent writers never deadlock.
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		p := pending[id]
		ids, hbs, dls = append(ids, id), append(hbs, p.hb), append(dls, p.deadline)
		if len(ids) == maxFlushBatch {
			write()
		}
	}
	write()
	if failed != nil {
		s.flushFailures.Add(1)
		s.hb.putBack(pending) // what was not written
		return fmt.Errorf("write %d heartbeats: %w", len(pending), failed)
	}
	return nil
}

// writeBeats writes one batch of heartbeats and removes from Redis the
// leases of the batch that ended in the record. n is the rows written.
func (s *Store) writeBeats(ctx context.Context, ids []string, hbs, dls []time.Time) (n int64, err error) {
	n, ended, err := s.rec.WriteBeats(ctx, ids, hbs, dls)
	if err != nil {
		return 0, err
	}
	if len(ended) > 0 {
		s.dropEndedInRecord(ctx, ended)
	}
	return n, nil
}

// dropEndedInRecord removes from Redis leases that Redis renewed although
// the record says they ended. A failure is logged: the lease's next
// heartbeat brings it back to the flusher.
func (s *Store) dropEndedInRecord(ctx context.Context, byLicense map[string][]string) {
	ended := make([]live.LicenseLeases, 0, len(byLicense))
	for licenseID, ids := range byLicense {
		ended = append(ended, live.LicenseLeases{LicenseID: licenseID, IDs: ids})
		s.log.Warn("distributed store: leases ended in the record were still live in Redis; dropping them",
			"license", licenseID, "leases", len(ids))
	}
	_, errs := s.live.EndMany(ctx, ended)
	for i, err := range errs {
		if err != nil {
			s.log.Error("distributed store: drop leases ended in the record from Redis; retrying at their next heartbeat",
				"license", ended[i].LicenseID, "err", err)
		}
	}
}
