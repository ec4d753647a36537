// Package gcpace sets seatd's garbage-collection pace when the environment
// sets none (GOGC). Every call allocates, so while the live heap is small a
// collection at each doubling of it (Go's default, GOGC=100) costs a fifth
// of a heartbeat's CPU; GOGC=400 trades a few tens of MB for most of that.
// Once the heap is large, 400 would hold four times it in garbage: 5 GB of
// RSS while loading a million leases. So the pace falls back towards 100
// as the live heap grows past smallHeap, keeping the heap goal at most
// max(goalCap, twice the live heap).
package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

const (
	smallPercent = 400
	largePercent = 100
	smallHeap    = 256 << 20 // live bytes up to which smallPercent holds
	// goalCap is the heap goal smallPercent gives at smallHeap; past
	// it the percent falls so that the goal stays there, down to
	// largePercent.
	goalCap = smallHeap * (100 + smallPercent) / 100

	every = time.Second
)

// Percent is the GOGC for a live heap of live bytes.
func Percent(live uint64) int {
	if live <= smallHeap {
		return smallPercent
	}
	return max(int(goalCap*100/live)-100, largePercent)
}

// Run paces the collector until ctx ends, unless GOGC is set (then it
// returns at once and Go's own setting holds). GOMEMLIMIT, when set,
// bounds the heap on top of it.
func Run(ctx context.Context) {
	if os.Getenv("GOGC") != "" {
		return
	}
	cur := Percent(0)
	debug.SetGCPercent(cur)
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
