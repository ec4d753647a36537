package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// The REST phases keep a connection per caller: conc callers making many
// calls each open at most about conc connections, not one per call (a
// client that kept fewer idle would pay a TCP handshake per call, and
// the row would measure that).
func TestRESTClientReusesConnections(t *testing.T) {
	t.Parallel()
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	const conc, calls = 16, 200
	c := newRESTClient(srv.Listener.Addr().String(), conc)
	call := c.health()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for n := range calls {
				if err := call(t.Context(), w, int64(n))(t.Context()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, opened.Load(), int64(2*conc), "connections opened for %d callers making %d calls", conc, conc*calls)
}
