package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// WaitForSeat streams over REST through the in-process channel (issue 32):
// the waiter reads its queue position, then, once the held seat is
// released, its grant, each as a line of newline-delimited JSON.
func TestWaitForSeatStreamsOverREST(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	created := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 1, "leaseTtl": "60s"}`)
	require.Equal(t, http.StatusOK, created.code, created.body)
	key := str(t, created.json, "key")
	held := do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "`+key+`", "fingerprint": "holder"}`)
	require.Equal(t, http.StatusOK, held.code, held.body)

	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/v1/leases:wait",
		strings.NewReader(`{"licenseKey": "`+key+`", "fingerprint": "waiter"}`))
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewScanner(resp.Body)
	next := func() map[string]any {
		t.Helper()
		require.True(t, lines.Scan(), "a line of the stream: %v", lines.Err())
		var msg struct {
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		require.NoError(t, json.Unmarshal(lines.Bytes(), &msg), lines.Text())
		require.Nil(t, msg.Error, lines.Text())
		return msg.Result
	}
	require.Contains(t, next(), "position", "first the waiter's place")

	rel := do(t, h, "POST", "/v1/leases/"+str(t, held.json, "lease", "id")+":release", "", `{"leaseToken": "`+str(t, held.json, "leaseToken")+`"}`)
	require.Equal(t, http.StatusOK, rel.code, rel.body)
	for {
		m := next()
		if granted, ok := m["granted"].(map[string]any); ok {
			require.NotEmpty(t, granted["leaseToken"])
			return
		}
		require.Contains(t, m, "position", "positions until the grant")
	}
}
