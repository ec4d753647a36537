package logthrottle

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRepeatsAreThrottled: the first failure line of a kind shows, the
// next ones within the interval do not, and the next one after it says
// how many were left out; other lines and other kinds are untouched.
func TestRepeatsAreThrottled(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	var mu sync.Mutex
	now := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := New(slog.NewTextHandler(&out, nil), 10*time.Second, clock, "request failed", "embedded store: ")
	log := slog.New(h).With("instance", "a")

	for range 100 {
		log.Warn("request failed", "code", "unavailable")
		log.Error("embedded store: acquire", "err", "no space left on device")
		log.Info("request failed") // below WARN: not throttled
		log.Warn("something else")
	}
	text := out.String()
	require.Equal(t, 1, strings.Count(text, "level=WARN msg=\"request failed\""), text)
	require.Equal(t, 1, strings.Count(text, "msg=\"embedded store: acquire\""), text)
	require.Equal(t, 100, strings.Count(text, "level=INFO msg=\"request failed\""))
	require.Equal(t, 100, strings.Count(text, "something else"))
	require.Equal(t, int64(198), h.Suppressed())

	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	out.Reset()
	log.Warn("request failed", "code", "unavailable")
	require.Contains(t, out.String(), "similar_suppressed=99")
	require.Contains(t, out.String(), "instance=a")

	off := New(slog.NewTextHandler(&out, nil), 0, clock, "request failed")
	out.Reset()
	for range 3 {
		slog.New(off).Warn("request failed")
	}
	require.Equal(t, 3, strings.Count(out.String(), "request failed"), "an interval of 0 throttles nothing")
}
