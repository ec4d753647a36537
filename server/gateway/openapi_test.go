package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// TestOpenAPIDocumentIsValid checks the served /openapi.json (Swagger 2.0:
// the generated document and the HTTP-only routes) with kin-openapi: it
// loads as Swagger 2.0, converts to OpenAPI 3 and passes its validation
// (references resolve, path parameters are declared, schemas are well
// formed). Then what a reader needs: a title and version, the bearer key on
// every admin call, a summary on every call, the probes and /metrics.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	r := do(t, h, "GET", "/openapi.json", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))

	var doc openapi2.T
	require.NoError(t, json.Unmarshal([]byte(r.body), &doc))
	require.Equal(t, "2.0", doc.Swagger)
	v3, err := openapi2conv.ToV3(&doc)
	require.NoError(t, err)
	require.NoError(t, v3.Validate(t.Context()), "the document is not valid OpenAPI")

	require.Equal(t, "seatd", doc.Info.Title)
	require.Equal(t, "v1", doc.Info.Version)
	bearer := doc.SecurityDefinitions["Bearer"]
	require.NotNil(t, bearer, "a Bearer security definition")
	require.Equal(t, "apiKey", bearer.Type)
	require.Equal(t, "header", bearer.In)
	require.Equal(t, "Authorization", bearer.Name)

	for _, p := range []string{"/v1/leases", "/v1/admin/licenses", "/v1/admin/cleanup", "/healthz", "/readyz", "/metrics", "/openapi.json", "/v1/admin/backup"} {
		require.Contains(t, doc.Paths, p)
	}
	for path, item := range doc.Paths {
		for method, op := range item.Operations() {
			require.NotEmpty(t, op.Summary, "%s %s has no summary (server/gateway/openapi.config.yaml)", method, path)
			admin := strings.HasPrefix(path, "/v1/admin/")
			needsKey := false
			if op.Security != nil {
				for _, req := range *op.Security {
					_, ok := req["Bearer"]
					needsKey = needsKey || ok
				}
			}
			require.Equal(t, admin, needsKey, "%s %s: the bearer key is on exactly the /v1/admin calls (server/gateway/openapi.config.yaml)", method, path)
		}
	}
}

func TestCompleteOperations(t *testing.T) {
	t.Parallel()
	paths := map[string]any{
		"/v1/admin/new": map[string]any{"get": map[string]any{"operationId": "AdminService_New", "description": "New reports things. More words.\nAnd more."}},
		"/v1/leases/x":  map[string]any{"post": map[string]any{"operationId": "SeatService_X"}},
		"/v1/admin/old": map[string]any{"get": map[string]any{"summary": "Kept", "security": []any{}}},
	}
	completeOperations(paths)
	get := func(p, m string) map[string]any { return paths[p].(map[string]any)[m].(map[string]any) }
	require.Equal(t, "New reports things", get("/v1/admin/new", "get")["summary"])
	require.Equal(t, []any{map[string]any{"Bearer": []any{}}}, get("/v1/admin/new", "get")["security"])
	require.Equal(t, "SeatService_X", get("/v1/leases/x", "post")["summary"])
	require.NotContains(t, get("/v1/leases/x", "post"), "security")
	require.Equal(t, "Kept", get("/v1/admin/old", "get")["summary"], "the configured summary stays")
}

// TestOpenAPI31Document checks /openapi-3.1.json (issue 32): OpenAPI 3.1,
// valid for kin-openapi, the same paths as the 2.0 document, and no
// "nullable" (3.0's word); in the 2.0 document every optional timestamp is
// x-nullable, so that go-swagger leaves it unset rather than sending
// 0001-01-01T00:00:00Z.
func TestOpenAPI31Document(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	r := do(t, h, "GET", OpenAPI31Path, "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.NotContains(t, r.body, `"nullable"`)

	doc, err := openapi3.NewLoader().LoadFromData([]byte(r.body))
	require.NoError(t, err)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.True(t, doc.IsOpenAPI31OrLater())
	require.NoError(t, doc.Validate(t.Context()))

	var doc2 openapi2.T
	require.NoError(t, json.Unmarshal([]byte(do(t, h, "GET", "/openapi.json", "", "").body), &doc2))
	for p := range doc2.Paths {
		require.NotNil(t, doc.Paths.Value(p), "%s in the 3.1 document", p)
	}
	require.NotNil(t, doc.Paths.Value(OpenAPI31Path))

	expires := doc2.Definitions["v1License"].Value.Properties["expiresAt"].Value
	require.Equal(t, "date-time", expires.Format)
	require.Equal(t, true, expires.Extensions["x-nullable"])
	license := doc.Components.Schemas["v1License"].Value
	require.NotContains(t, license.Required, "expiresAt", "optional in 3.1: not required")
}
