package waitqueue

import (
	"context"
	"testing"
)

// BenchmarkMemoryDrain: 1,000 waiters join and leave from the head, each
// looking at its place once: without priorities (one level) and with
// waiters spread over 5 levels.
func BenchmarkMemoryDrain(b *testing.B) {
	for name, levels := range map[string]int{"one level": 1, "five levels": 5} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			m := NewMemory(2000)
			for b.Loop() {
				ts := make([]Ticket, 0, 1000)
				for i := range 1000 {
					t, _ := m.Join(ctx, "lic", i%levels, "")
					ts = append(ts, t)
				}
				for _, t := range ts {
					_, _ = t.Position(ctx)
					t.Leave(ctx)
				}
			}
		})
	}
}
