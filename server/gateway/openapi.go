package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/seatd/seatd/gen/openapi"
	"github.com/seatd/seatd/server/webhooks"
)

// OpenAPI31Path is where seatd serves its OpenAPI 3.1 document; the Swagger
// 2.0 one stays at /openapi.json.
const OpenAPI31Path = "/openapi-3.1.json"

// httpOnlyPaths are the routes seatd serves that are not gRPC methods, so
// protoc-gen-openapiv2 does not know them; /openapi.json adds them to the
// generated document (Swagger 2.0).
var httpOnlyPaths = map[string]any{
	"/healthz": map[string]any{"get": plainOperation("Healthz", "Liveness: 200 \"ok\" while the process serves HTTP", "ok", nil)},
	"/readyz": map[string]any{"get": plainOperation("Readyz", "Readiness: 200 \"ready\" (a second line \"degraded: ...\" names a problem that does not stop serving, e.g. no cleanup leader can be elected from here), 503 \"not ready: <why>\" while starting, draining, or while the store cannot write", "ready",
		map[string]any{"503": map[string]any{"description": "Not ready, and why: starting, draining (shutdown), the data file is damaged, writes to the data dir fail, PostgreSQL unreachable, Redis unreachable, or no cleanup leader can be elected (with --leader-failing-unready).", "schema": map[string]any{"type": "string"}}})},
	"/metrics": map[string]any{"get": map[string]any{
		"summary": "Prometheus metrics (text exposition format)", "operationId": "Metrics", "tags": []string{"Operations"},
		"produces":  []string{"text/plain"},
		"responses": map[string]any{"200": map[string]any{"description": "The metrics.", "schema": map[string]any{"type": "string"}}},
	}},
	"/openapi.json": map[string]any{"get": map[string]any{
		"summary": "This OpenAPI document", "operationId": "OpenAPI", "tags": []string{"Operations"},
		"responses": map[string]any{"200": map[string]any{"description": "The document (Swagger 2.0).", "schema": map[string]any{"type": "object"}}},
	}},
	OpenAPI31Path: map[string]any{"get": map[string]any{
		"summary": "This OpenAPI document as OpenAPI 3.1", "operationId": "OpenAPI31", "tags": []string{"Operations"},
		"responses": map[string]any{"200": map[string]any{"description": "The document (OpenAPI 3.1), converted from the Swagger 2.0 one.", "schema": map[string]any{"type": "object"}}},
	}},
	"/v1/admin/backup": map[string]any{"get": map[string]any{
		"summary":     "Download a consistent copy of the database (operator key; embedded mode)",
		"operationId": "Backup", "tags": []string{"AdminService"},
		"produces": []string{"application/octet-stream"},
		"security": []any{map[string]any{"Bearer": []string{}}},
		"responses": map[string]any{
			"200": map[string]any{"description": "The database file (seatd backup writes it to a file and checks it).", "schema": map[string]any{"type": "file"}},
			"default": map[string]any{"description": "An error, as for every call.",
				"schema": map[string]any{"$ref": "#/definitions/rpcStatus"}},
		},
	}},
}

func plainOperation(id, summary, body string, more map[string]any) map[string]any {
	responses := map[string]any{"200": map[string]any{"description": fmt.Sprintf("%q and a newline.", body), "schema": map[string]any{"type": "string"}}}
	for k, v := range more {
		responses[k] = v
	}
	return map[string]any{
		"summary": summary, "operationId": id, "tags": []string{"Operations"},
		"produces": []string{"text/plain"}, "responses": responses,
	}
}

// openAPIDocument is the generated document with the HTTP-only routes.
func openAPIDocument() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		return nil, fmt.Errorf("gen/openapi: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	if paths == nil {
		paths = map[string]any{}
		doc["paths"] = paths
	}
	mergeSamePaths(paths)
	completeOperations(paths)
	definitions, _ := doc["definitions"].(map[string]any)
	optionalTimes(definitions)
	if definitions == nil {
		definitions = map[string]any{}
		doc["definitions"] = definitions
	}
	// The webhooks' payloads: no call answers them, seatd sends them. Not
	// under the 3.1 document's webhooks: a generator that prunes the
	// schemas no path uses (oapi-codegen's default) would then make
	// request types of schemas it dropped.
	maps.Copy(definitions, webhooks.PayloadSchemas())
	for p, item := range httpOnlyPaths {
		if _, taken := paths[p]; !taken {
			paths[p] = item
		}
	}
	tags, _ := doc["tags"].([]any)
	doc["tags"] = append(tags, map[string]any{"name": "Operations", "description": "Probes, metrics and this document: plain HTTP, no gRPC method behind them."})
	return json.MarshalIndent(doc, "", "  ")
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// mergeSamePaths joins paths that differ only in their parameters' names
// (PATCH /v1/admin/licenses/{license.id} and GET
// /v1/admin/licenses/{licenseId}: one URL, which OpenAPI requires to be one
// path). The operations of the path whose parameters have dotted names (a
// field of the body) move to the other, their path parameters renamed.
func mergeSamePaths(paths map[string]any) {
	byShape := map[string][]string{}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		shape := pathParam.ReplaceAllString(p, "{}")
		byShape[shape] = append(byShape[shape], p)
	}
	for _, same := range byShape {
		if len(same) < 2 {
			continue
		}
		// Keep the path without dotted parameters (the first one, if all are).
		keep := same[0]
		for _, p := range same {
			if !strings.Contains(strings.Join(pathParam.FindAllString(p, -1), ""), ".") {
				keep = p
				break
			}
		}
		into, _ := paths[keep].(map[string]any)
		keepNames := pathParam.FindAllString(keep, -1)
		for _, p := range same {
			if p == keep {
				continue
			}
			item, _ := paths[p].(map[string]any)
			rename := map[string]string{}
			for i, name := range pathParam.FindAllString(p, -1) {
				rename[strings.Trim(name, "{}")] = strings.Trim(keepNames[i], "{}")
			}
			for method, op := range item {
				if _, taken := into[method]; taken {
					continue // two operations on one method and URL: leave both as generated
				}
				if o, ok := op.(map[string]any); ok {
					params, _ := o["parameters"].([]any)
					for _, prm := range params {
						if m, ok := prm.(map[string]any); ok && m["in"] == "path" {
							if to, ok := rename[fmt.Sprint(m["name"])]; ok {
								m["name"] = to
							}
						}
					}
				}
				into[method] = op
				delete(item, method)
			}
			if len(item) == 0 {
				delete(paths, p)
			}
		}
	}
}

// completeOperations gives a call that openapi.config.yaml does not name
// yet (a new method) what every call has: a summary (the first sentence of
// its description, from the .proto comment) and, under /v1/admin/, the
// bearer key that the server requires there.
func completeOperations(paths map[string]any) {
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			o, ok := op.(map[string]any)
			if !ok {
				continue
			}
			if s, _ := o["summary"].(string); s == "" {
				o["summary"] = firstSentence(fmt.Sprint(o["description"]), fmt.Sprint(o["operationId"]))
			}
			if _, has := o["security"]; !has && strings.HasPrefix(path, "/v1/admin/") {
				o["security"] = []any{map[string]any{"Bearer": []any{}}}
			}
		}
	}
}

// firstSentence is the first sentence of a description, or otherwise when
// there is none.
func firstSentence(description, otherwise string) string {
	d := strings.Join(strings.Fields(description), " ")
	if d == "" || d == "<nil>" {
		return otherwise
	}
	if i := strings.Index(d, ". "); i >= 0 {
		d = d[:i]
	}
	return strings.TrimSuffix(d, ".")
}

// optionalTimes marks every timestamp property of the definitions
// x-nullable (none is required: an unset message field is absent). Without
// it go-swagger gives a timestamp a non-pointer field, which sends its zero
// value, 0001-01-01T00:00:00Z, for a field the caller never set (the server
// takes that value as unset too: checkMessage in grpcapi).
func optionalTimes(definitions map[string]any) {
	for _, d := range definitions {
		def, _ := d.(map[string]any)
		props, _ := def["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := def["required"].([]any); ok {
			for _, r := range req {
				required[fmt.Sprint(r)] = true
			}
		}
		for name, p := range props {
			prop, _ := p.(map[string]any)
			if prop["format"] == "date-time" && !required[name] {
				prop["x-nullable"] = true
			}
		}
	}
}

// openAPI31Document is the Swagger 2.0 document converted to OpenAPI 3.1 by
// kin-openapi (openapi2conv). OpenAPI 3.1 has no "nullable": an optional
// field is one its object does not list as required, which is every field
// of seatd's messages, and generators (oapi-codegen) give such a field a
// pointer left nil when unset.
func openAPI31Document(v2 []byte) ([]byte, error) {
	var doc2 openapi2.T
	if err := json.Unmarshal(v2, &doc2); err != nil {
		return nil, fmt.Errorf("openapi 2.0 document: %w", err)
	}
	doc3, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		return nil, fmt.Errorf("convert the openapi document to 3: %w", err)
	}
	doc3.OpenAPI = "3.1.0"
	seen := map[*openapi3.Schema]bool{}
	for _, s := range doc3.Components.Schemas {
		notNullable(s, seen)
	}
	if err := doc3.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the openapi 3.1 document: %w", err)
	}
	return json.MarshalIndent(doc3, "", "  ")
}

func notNullable(ref *openapi3.SchemaRef, seen map[*openapi3.Schema]bool) {
	if ref == nil || ref.Value == nil || seen[ref.Value] {
		return
	}
	s := ref.Value
	seen[s] = true
	s.Nullable = false
	for _, p := range s.Properties {
		notNullable(p, seen)
	}
	notNullable(s.Items, seen)
	notNullable(s.AdditionalProperties.Schema, seen)
	for _, list := range [][]*openapi3.SchemaRef{s.AllOf, s.AnyOf, s.OneOf} {
		for _, r := range list {
			notNullable(r, seen)
		}
	}
}
