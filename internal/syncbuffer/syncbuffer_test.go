package syncbuffer

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWritesAndReads: writers and a reader at once lose nothing
// (and, under -race, race on nothing).
func TestConcurrentWritesAndReads(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 100 {
				_, _ = fmt.Fprintf(&b, "%d.%d\n", i, j)
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = b.String()
		}
	})
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 400 {
		t.Fatalf("%d lines, want 400", n)
	}
}
