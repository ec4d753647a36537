package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
)

// BackgroundStats reports the store's write-behind and repair work.
func (s *Store) BackgroundStats() server.BackgroundStats {
	s.confBehindMu.Lock()
	behind := len(s.confBehind)
	s.confBehindMu.Unlock()
	cached := s.leaseInfo.c.Stats()
	return server.BackgroundStats{
		HeartbeatsFlushed:    s.hb.written.Load(),
		FlushFailures:        s.flushFailures.Load(),
		LiveStateRebuilds:    s.liveRebuilds.Load(),
		OrphansAdopted:       s.adopted.Load(),
		SettingsCopiesBehind: int64(behind),
		HintsRederived:       s.hintsRederived.Load(),
		EndedLeasesDropped:   s.endsRepaired.Load(),
		EndedLeasesBehind:    s.endsBehind.Load(),
		EndRepairBatch:       int64(s.endBatch),
		LeaseCacheEntries:    int64(cached.Entries),
		LeaseCacheSize:       int64(cached.Max),
		LeaseCacheMisses:     cached.Misses,
	}
}

var _ server.BackgroundReporter = (*Store)(nil)

// Noop runs a script that does nothing through the hot path's batching, on
// a license's keys, as Heartbeat runs heartbeat.lua: make bench's ceiling
// of what one Redis round trip per call costs (daemon --bench-ceiling).
func (s *Store) Noop(ctx context.Context, licenseID string) error {
	return s.live.Noop(ctx, licenseID)
}
