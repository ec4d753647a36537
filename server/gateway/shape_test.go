package gateway

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptyListsAndZeroCounts: REST answers carry every list and count,
// also when empty or zero: a list with nothing in it is [] (not left out,
// which a client reads as {}), and a cleanup with nothing to do shows
// scanned and expired as 0.
func TestEmptyListsAndZeroCounts(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)

	r := do(t, h, "GET", "/v1/admin/licenses", operatorKey, "")
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Contains(t, r.json, "licenses", "body: %s", r.body)
	require.Equal(t, []any{}, r.json["licenses"], "body: %s", r.body)

	created := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 1}`)
	require.Equal(t, http.StatusOK, created.code, created.body)
	r = do(t, h, "GET", "/v1/admin/licenses/"+str(t, created.json, "id")+"/leases", operatorKey, "")
	require.Equal(t, http.StatusOK, r.code, r.body)
	require.Equal(t, []any{}, r.json["leases"], "body: %s", r.body)

	r = do(t, h, "POST", "/v1/admin/cleanup", operatorKey, `{}`)
	require.Equal(t, http.StatusOK, r.code, r.body)
	run, ok := r.json["run"].(map[string]any)
	require.True(t, ok, "body: %s", r.body)
	for _, count := range []string{"scanned", "expired", "errors"} {
		require.Equal(t, "0", run[count], "%s in %s (int64: a JSON string, as protojson writes every int64)", count, r.body)
	}
}
