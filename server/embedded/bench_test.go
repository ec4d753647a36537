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

// featureBench is a license holding 50 grants, for the feature rows: a
// base request takes the license's own seats; "feature" one of 50 grants
// of 50 features; "feature-of-50" a feature whose 50 grants all cover the
// request, the first 49 (in pick order) with no seat, so that every
// acquisition judges all 50.
func featureBench(b *testing.B) (*bundle, server.License, map[string]string) {
	bb := setup(b)
	l := bb.license(b, func(l *server.License) { l.Seats = server.MaxSeats })
	expires := bb.clock.Now().Add(24 * time.Hour)
	for i := range 49 {
		bb.grant(b, l, fmt.Sprintf("f%02d", i), func(g *server.Grant) { g.Seats = server.MaxSeats })
		bb.grant(b, l, "many", func(g *server.Grant) { g.Seats = 0; g.ExpiresAt = expires.Add(time.Duration(i) * time.Minute) })
	}
	bb.grant(b, l, "f49", func(g *server.Grant) { g.Seats = server.MaxSeats })
	bb.grant(b, l, "many", func(g *server.Grant) { g.Seats = server.MaxSeats })
	return bb, l, map[string]string{"base": "", "feature": "f25", "feature-of-50": "many"}
}

// BenchmarkFeatureAcquireRelease is BenchmarkAcquireRelease on a license
// holding grants (featureBench): each row within 10% of "base".
func BenchmarkFeatureAcquireRelease(b *testing.B) {
	for _, row := range []string{"base", "feature", "feature-of-50"} {
		b.Run(row, func(b *testing.B) {
			bb, l, features := featureBench(b)
			b.SetParallelism(16)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ls, hash := bb.mustAcquireFeature(b, l, features[row], "", "bench")
					if _, err := bb.s.Release(b.Context(), ls.ID, hash); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkFeatureHeartbeat is BenchmarkHeartbeat on leases of a license
// holding grants (featureBench).
func BenchmarkFeatureHeartbeat(b *testing.B) {
	for _, row := range []string{"base", "feature", "feature-of-50"} {
		b.Run(row, func(b *testing.B) {
			bb, l, features := featureBench(b)
			const n = 1024
			ids, hashes := make([]string, n), make([]string, n)
			for i := range n {
				ls, hash := bb.mustAcquireFeature(b, l, features[row], "", "bench")
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
		})
	}
}
