package gateway

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInvalidUTF8InTheURLIs400: bytes that are not UTF-8 in a path or a
// query parameter are refused 400 naming where they are, before any key is
// looked at, and without grpc-go's internal words (issue 24, item 14: it
// was 500 "grpc: error while marshaling").
func TestInvalidUTF8InTheURLIs400(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	for path, field := range map[string]string{
		"/v1/admin/licenses/%ff%fe":                    "path",
		"/v1/tenants/%c3%28/jwks.json":                 "path",
		"/v1/admin/licenses?page_token=%ff":            "page_token",
		"/v1/admin/licenses?%ff=1":                     "query",
		"/v1/admin/licenses/lic_1/leases?state=%e2%82": "state",
	} {
		r := do(t, h, "GET", path, "", "")
		require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", path, r.body)
		require.Equal(t, "INVALID_ARGUMENT", r.reason(), path)
		require.Contains(t, r.json["message"], field+": must be valid UTF-8", path)
		require.NotContains(t, r.body, "marshal", path)
	}
}

// TestUnauthorizedIsABearerChallenge: a 401 carries an RFC 6750 challenge,
// not the status message (issue 24, item 14).
func TestUnauthorizedIsABearerChallenge(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	r := do(t, h, "GET", "/v1/admin/licenses", "", "")
	require.Equal(t, http.StatusUnauthorized, r.code, r.body)
	require.Equal(t, []string{`Bearer realm="seatd"`}, r.header.Values("WWW-Authenticate"))
	r = do(t, h, "GET", "/v1/admin/licenses", "sak_unknown", "")
	require.Equal(t, http.StatusUnauthorized, r.code, r.body)
	require.Equal(t, []string{`Bearer realm="seatd", error="invalid_token"`}, r.header.Values("WWW-Authenticate"))
}
