package gateway

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/locked/lockedtest"
)

// TestLockedModeOverREST: every REST route that creates, changes or
// deletes a license or a grant answers 400 LICENSE_FILE_LOCKED in locked
// mode and changes nothing; the license file routes answer the file in
// force and reload it (a refused file: 400 LICENSE_FILE_REFUSED naming its
// cause); the signed file is a public route, GET /v1/license-file.jws,
// answered as the JWS in one JSON string, the vendor's key verifies.
func TestLockedModeOverREST(t *testing.T) {
	t.Parallel()
	var site *lockedtest.Site
	h, _ := newGatewayWith(t, func(c *grpcapi.Config) {
		site = lockedtest.New(t, c.Store)
		c.LicenseFile = site.Start(t, 3, 2)
	})
	lic := "/v1/admin/licenses/" + lockedtest.LicenseID
	got := do(t, h, "GET", lic, operatorKey, "")
	require.Equal(t, http.StatusOK, got.code, got.body)
	grants, ok := got.json["grants"].([]any)
	require.True(t, ok, got.body)
	require.Len(t, grants, 1)
	grant := grants[0].(map[string]any)["id"].(string)

	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/admin/licenses", `{"name": "more", "seats": 100}`},
		{"PATCH", lic, `{"seats": 100}`},
		{"PATCH", lic, `{"active": false}`},
		{"DELETE", lic, ""},
		{"POST", lic + "/grants", `{"feature": "render", "seats": 50}`},
		{"PATCH", lic + "/grants/" + grant, `{"seats": 50}`},
		{"DELETE", lic + "/grants/" + grant, ""},
	} {
		resp := do(t, h, r.method, r.path, operatorKey, r.body)
		require.Equal(t, http.StatusBadRequest, resp.code, "%s %s: %s", r.method, r.path, resp.body)
		require.Equal(t, "LICENSE_FILE_LOCKED", resp.reason(), "%s %s", r.method, r.path)
	}
	after := do(t, h, "GET", lic, operatorKey, "")
	require.JSONEq(t, got.body, after.body, "nothing changed")

	file := do(t, h, "GET", "/v1/admin/license-file", operatorKey, "")
	require.Equal(t, http.StatusOK, file.code, file.body)
	f := file.json["licenseFile"].(map[string]any)
	require.Equal(t, "3", f["serial"], "an int64 is a JSON string")
	require.Equal(t, site.Key.ID, f["siteKeyId"])

	signed := do(t, h, "GET", "/v1/license-file.jws", "", "")
	require.Equal(t, http.StatusOK, signed.code, signed.body)
	var token string
	require.NoError(t, json.Unmarshal([]byte(signed.body), &token), signed.body)
	opened, err := licensefile.OpenToken(token, []ed25519.PublicKey{site.VendorPub})
	require.NoError(t, err)
	require.EqualValues(t, 3, opened.Serial)

	site.Write(t, site.File(2, 50))
	refused := do(t, h, "POST", "/v1/admin/license-file:reload", operatorKey, "{}")
	require.Equal(t, http.StatusBadRequest, refused.code, refused.body)
	require.Equal(t, "LICENSE_FILE_REFUSED", refused.reason())
	require.Contains(t, refused.body, `"cause":"not_newer"`)

	site.Write(t, site.File(4, 5))
	reloaded := do(t, h, "POST", "/v1/admin/license-file:reload", operatorKey, "{}")
	require.Equal(t, http.StatusOK, reloaded.code, reloaded.body)
	require.Equal(t, true, reloaded.json["changed"])
	require.EqualValues(t, 5, do(t, h, "GET", lic, operatorKey, "").json["seats"])

	// The signed usage export, over a period named in the query.
	export := do(t, h, "GET", "/v1/admin/license-file/usage-export?startTime=2026-01-01T00:00:00Z&endTime=2026-02-01T00:00:00Z", operatorKey, "")
	require.Equal(t, http.StatusOK, export.code, export.body)
	require.Equal(t, "4", export.json["fileSerial"])
	require.Equal(t, "2026-01-01T00:00:00Z", export.json["periodStart"])
	require.Contains(t, export.json["usageExport"], "-----BEGIN SEATD USAGE EXPORT-----")
	bad := do(t, h, "GET", "/v1/admin/license-file/usage-export?startTime=2026-02-01T00:00:00Z&endTime=2026-01-01T00:00:00Z", operatorKey, "")
	require.Equal(t, http.StatusBadRequest, bad.code, bad.body)
	require.Equal(t, "INVALID_ARGUMENT", bad.reason())
}
