package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFeatureGrantOverREST: a grant created, changed (the fields in the
// body) and used over REST: a seat of its feature names the grant, a
// version it does not cover is 400 VERSION_NOT_LICENSED, the license shows
// the grant with its seat in use, and a deleted grant is 404.
func TestFeatureGrantOverREST(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	lic := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 1, "leaseTtl": "60s"}`)
	require.Equal(t, http.StatusOK, lic.code, lic.body)
	key, licID := str(t, lic.json, "key"), str(t, lic.json, "id")
	grants := "/v1/admin/licenses/" + licID + "/grants"

	expires := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	g := do(t, h, "POST", grants, operatorKey, `{"feature": "render", "version": "2025", "seats": 1, "expiresAt": "`+expires+`"}`)
	require.Equal(t, http.StatusOK, g.code, g.body)
	grantID := str(t, g.json, "id") // the answer is the grant itself
	require.Equal(t, licID, str(t, g.json, "licenseId"))

	bad := do(t, h, "POST", grants, operatorKey, `{"feature": "render", "version": "2025.x", "seats": 1}`)
	require.Equal(t, http.StatusBadRequest, bad.code, bad.body)
	require.Equal(t, "INVALID_ARGUMENT", bad.reason())
	require.Contains(t, str(t, bad.json, "message"), "grant.version")

	up := do(t, h, "PATCH", grants+"/"+grantID, operatorKey, `{"seats": 2}`)
	require.Equal(t, http.StatusOK, up.code, up.body)
	require.EqualValues(t, 2, up.json["seats"])
	require.Equal(t, "2025", str(t, up.json, "version"), "a field not in the body is kept")
	immutable := do(t, h, "PATCH", grants+"/"+grantID, operatorKey, `{"feature": "sim"}`)
	require.Equal(t, http.StatusBadRequest, immutable.code, immutable.body)
	require.Contains(t, str(t, immutable.json, "message"), "grant.feature")

	a := do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "`+key+`", "fingerprint": "one", "feature": "render", "version": "2024.2"}`)
	require.Equal(t, http.StatusOK, a.code, a.body)
	require.Equal(t, licID, str(t, a.json, "lease", "licenseId"))
	require.Equal(t, grantID, str(t, a.json, "lease", "grantId"))
	require.Equal(t, "render", str(t, a.json, "lease", "feature"))
	require.Equal(t, "2024.2", str(t, a.json, "lease", "version"))
	require.Equal(t, grantID, str(t, a.json, "grant", "id"))
	require.Equal(t, expires, str(t, a.json, "grant", "expiresAt"))
	require.EqualValues(t, 2, a.json["seatLimit"], "the grant's")

	newer := do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "`+key+`", "fingerprint": "two", "feature": "render", "version": "2026"}`)
	require.Equal(t, http.StatusBadRequest, newer.code, newer.body)
	require.Equal(t, "VERSION_NOT_LICENSED", newer.reason())
	noFeature := do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "`+key+`", "fingerprint": "two", "version": "2025"}`)
	require.Equal(t, http.StatusBadRequest, noFeature.code, noFeature.body)
	require.Contains(t, str(t, noFeature.json, "message"), "version:")

	got := do(t, h, "GET", "/v1/admin/licenses/"+licID, operatorKey, "")
	require.Equal(t, http.StatusOK, got.code, got.body)
	listed, _ := got.json["grants"].([]any)
	require.Len(t, listed, 1, got.body)
	require.EqualValues(t, 1, listed[0].(map[string]any)["seatsInUse"], got.body)
	leases := do(t, h, "GET", "/v1/admin/licenses/"+licID+"/leases?feature=render", operatorKey, "")
	require.Equal(t, http.StatusOK, leases.code, leases.body)
	require.Len(t, leases.json["leases"], 1, leases.body)

	del := do(t, h, "DELETE", grants+"/"+grantID, operatorKey, "")
	require.Equal(t, http.StatusOK, del.code, del.body)
	require.EqualValues(t, 1, del.json["revokedLeases"])
	again := do(t, h, "DELETE", grants+"/"+grantID, operatorKey, "")
	require.Equal(t, http.StatusNotFound, again.code, again.body)
	require.Equal(t, "GRANT_NOT_FOUND", again.reason())
}
