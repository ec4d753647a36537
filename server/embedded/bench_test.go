package embedded

import (
	"sync/atomic"
	"testing"

	"github.com/seatd/seatd/server"
)

// Every Acquire and Release is durable: with many clients at once this
// measures group commit.
func BenchmarkAcquireRelease(b *testing.B) {
	bb := setup(b)
	l := bb.license(b, func(l *server.License) { l.Seats = server.MaxSeats })
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ls, hash := bb.mustAcquire(b, l, "bench")
			if _, err := bb.s.Release(b.Context(), ls.ID, hash); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Heartbeats touch memory only; the flusher writes them behind.
func BenchmarkHeartbeat(b *testing.B) {
	bb := setup(b)
	const n = 1024
	l := bb.license(b, func(l *server.License) { l.Seats = n })
	ids, hashes := make([]string, n), make([]string, n)
	for i := range n {
		ls, hash := bb.mustAcquire(b, l, "bench")
		ids[i], hashes[i] = ls.ID, hash
	}
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) % n
			if _, err := bb.s.Heartbeat(b.Context(), ids[i], hashes[i]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
