package embedded

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkLeaseMemory reports the live heap one active lease costs (Go
// heap after a collection, per lease) and how long a restart takes to load
// them: b.N leases on one license, with realistic ids, fingerprints and
// token hashes; idempotency-key with the key the Go client sends with
// every acquisition (a UUID).
func BenchmarkLeaseMemory(b *testing.B) {
	for _, tc := range []struct {
		name string
		idem func(i int) string
	}{
		{"fingerprint", func(int) string { return "" }},
		{"idempotency-key", func(i int) string { return fmt.Sprintf("%08x-7dec-11d0-a765-%012x", i, i) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bb := setup(b)
			l := bb.license(b, func(l *server.License) { l.Seats = server.MaxSeats; l.LeasingStrategy = server.PerFingerprint })
			before := liveHeap()
			for i := range b.N {
				_, err := bb.s.Acquire(b.Context(), server.AcquireRequest{
					LicenseKey:     l.Key,
					Fingerprint:    fmt.Sprintf("machine-%08d-user@example.com", i),
					IdempotencyKey: tc.idem(i),
					LeaseID:        server.NewID(server.PrefixLeaseID),
					TokenHash:      server.HashSecret(server.NewSecret(server.PrefixLeaseToken)),
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			after := liveHeap()
			b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/lease")
			start := time.Now()
			bb.reopen(b)
			b.ReportMetric(float64(time.Since(start).Milliseconds()), "restart-ms")
			// The closed store stays reachable from its t.Cleanup until the end:
			// what the restart added is the new store's own.
			b.ReportMetric(float64(liveHeap()-after)/float64(b.N), "heap-B/lease-after-restart")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
