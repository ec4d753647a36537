// Package gcpace sets seatd's garbage-collection pace when the environment
// sets none (GOGC). Every call allocates, so while the live heap is small a
// collection at each doubling of it (Go's default, GOGC=100) costs a fifth
// of a heartbeat's CPU; GOGC=400 trades a few tens of MB for most of that.
// Once the heap is large, 400 would hold four times it in garbage (5 GB of
// RSS while loading a million leases). The embedded store's leases hold
// almost no pointers, so a collection's cost no longer grows with them and
// collecting more often at scale is cheap: past the point where 4× the
// live heap is more than headroom, the pace keeps the garbage at headroom,
// and at least a quarter of the live heap.
//
// With GOMEMLIMIT set, the operator has said how much memory seatd may
// use: the pace stays at 400 and the runtime collects as the heap nears
// the limit.
package gcpace

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	smallPercent = 400
	// headroom is the garbage allowed over a large live heap.
	headroom = 256 << 20
	// minPercent bounds the pace of very large heaps: a collection per
	// quarter of the live heap allocated.
	minPercent = 25

	every = time.Second
)

// Percent is the GOGC for a live heap of live bytes: 400 up to 64 MB,
// then a heap goal of live + 256 MB, and at least 25.
func Percent(live uint64) int {
	if live*smallPercent/100 <= headroom {
		return smallPercent
	}
	return max(int(headroom*100/live), minPercent)
}

// limited reports whether a memory limit is set (GOMEMLIMIT).
func limited() bool { return debug.SetMemoryLimit(-1) != math.MaxInt64 }

// Run paces the collector until ctx ends, unless GOGC is set (then it
// returns at once and Go's own setting holds) or GOMEMLIMIT is (then it
// sets 400 and returns: the limit bounds the heap).
func Run(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	cur := Percent(0)
	debug.SetGCPercent(cur)
	if limited() {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			continue
		}
		if p := Percent(sample[0].Value.Uint64()); p != cur {
			debug.SetGCPercent(p)
			cur = p
		}
	}
}
