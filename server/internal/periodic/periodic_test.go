package periodic

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRunCallsUntilStopped(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	var calls atomic.Int64
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Run(stop, time.Millisecond, func() { calls.Add(1) })
	}()
	require.Eventually(t, func() bool { return calls.Load() >= 3 }, 5*time.Second, time.Millisecond)
	close(stop)
	<-returned
	n := calls.Load()
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, n, calls.Load(), "no call after Run returned")
}

func TestRunWaitsAFullIntervalFirst(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	returned := make(chan struct{})
	var calls atomic.Int64
	go func() {
		defer close(returned)
		Run(stop, time.Hour, func() { calls.Add(1) })
	}()
	close(stop)
	<-returned
	require.Zero(t, calls.Load())
}
