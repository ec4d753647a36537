package e2e

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProfilingEndpoints: --pprof-addr serves Go's profiles on its own
// address only; the public HTTP port never does, with or without it.
func TestProfilingEndpoints(t *testing.T) {
	t.Parallel()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := start(t, options{args: []string{"--pprof-addr", addr}})

	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "goroutine profile")

	require.NotEqual(t, http.StatusOK, p.do(t, "GET", "/debug/pprof/", "", nil).Code, "profiles on the public HTTP port")
	off := start(t, options{})
	require.NotEqual(t, http.StatusOK, off.do(t, "GET", "/debug/pprof/", "", nil).Code, "profiles without --pprof-addr")
}
