package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/metrics"
)

const operatorKey = "gateway-test-operator-key-0123"

const testMaxBody = 4096

// flakyStore answers UNAVAILABLE for license key "slk_unavailable" (as a
// backend that is down would), and passes everything else through.
type flakyStore struct{ server.Store }

func (f flakyStore) Acquire(ctx context.Context, r server.AcquireRequest) (server.AcquireResult, error) {
	if r.LicenseKey == "slk_unavailable" {
		return server.AcquireResult{}, server.Unavailable(errors.New("dial tcp 10.9.9.9:6379: connection refused"))
	}
	return f.Store.Acquire(ctx, r)
}

// newGateway serves the gateway in front of a gRPC server on the embedded
// store, as server/daemon wires them.
func newGateway(t testing.TB) (*Handler, *prometheus.Registry) {
	t.Helper()
	return newGatewayWith(t, nil)
}

// newGatewayWith is newGateway with configure changing the API's Config
// (its Store set) first.
func newGatewayWith(t testing.TB, configure func(*grpcapi.Config)) (*Handler, *prometheus.Registry) {
	t.Helper()
	st, err := embedded.Open(t.TempDir(), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.CreateTenant(context.Background(), server.Tenant{ID: server.DefaultTenantID, CreatedAt: time.Now()})
	require.NoError(t, err)
	store := flakyStore{st}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	cfg := grpcapi.Config{
		Store: store, Cleaner: cleanup.NewCleaner(store, cleanup.Config{}, nil, m),
		Leadership: cleanup.Solo{ID: "gw"}, OperatorKey: operatorKey, Metrics: m,
	}
	if configure != nil {
		configure(&cfg)
	}
	api := grpcapi.New(cfg)
	conn := api.InProcess(api.UnaryInterceptors(), api.StreamInterceptors())
	h, err := New(t.Context(), conn, reg, Limits{MaxBodyBytes: testMaxBody})
	require.NoError(t, err)
	return h, reg
}

type reply struct {
	code   int
	header http.Header
	body   string
	json   map[string]any
}

func do(t testing.TB, h http.Handler, method, path, key, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	r := reply{code: rec.Code, header: rec.Header(), body: rec.Body.String()}
	_ = json.Unmarshal(rec.Body.Bytes(), &r.json)
	return r
}

// reason is the ErrorInfo reason in a REST error body.
func (r reply) reason() string {
	details, _ := r.json["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && strings.HasSuffix(m["@type"].(string), "google.rpc.ErrorInfo") {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

func str(t *testing.T, v any, path ...string) string {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "no %s in %v", p, v)
		v = m[p]
	}
	s, ok := v.(string)
	require.True(t, ok, "%v is not a string", v)
	return s
}

func TestErrorsMapToHTTP(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	created := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 1, "leaseTtl": "60s"}`)
	require.Equal(t, http.StatusOK, created.code, created.body)
	key, licID := str(t, created.json, "key"), str(t, created.json, "id") // the answer is the License itself
	a := do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "`+key+`", "fingerprint": "one"}`)
	require.Equal(t, http.StatusOK, a.code, a.body)
	leaseID, token := str(t, a.json, "lease", "id"), str(t, a.json, "leaseToken")

	tests := []struct {
		name, method, path, key, body string
		code                          int
		reason                        string
	}{
		{"no seat free", "POST", "/v1/leases", "", `{"licenseKey": "` + key + `", "fingerprint": "two"}`, http.StatusTooManyRequests, "SEATS_EXHAUSTED"},
		{"unknown license key", "POST", "/v1/leases", "", `{"licenseKey": "slk_nope", "fingerprint": "x"}`, http.StatusNotFound, "LICENSE_NOT_FOUND"},
		{"unknown lease", "POST", "/v1/leases/lse_000000000000000000000000:heartbeat", "", `{"leaseToken": "` + token + `"}`, http.StatusNotFound, "LEASE_NOT_FOUND"},
		{"bad input", "POST", "/v1/leases", "", `{"licenseKey": "` + key + `"}`, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{"unknown JSON field", "POST", "/v1/leases", "", `{"licenseKey": "` + key + `", "fingerprint": "x", "colour": "red"}`, http.StatusBadRequest, "MALFORMED_REQUEST"},
		{"not JSON", "POST", "/v1/leases", "", `{"licenseKey": `, http.StatusBadRequest, "MALFORMED_REQUEST"},
		{"bad query parameter", "GET", "/v1/admin/licenses?pageSize=lots", operatorKey, "", http.StatusBadRequest, "MALFORMED_REQUEST"},
		{"body over the limit", "POST", "/v1/leases", "", `{"licenseKey": "` + strings.Repeat("k", testMaxBody) + `"}`, http.StatusRequestEntityTooLarge, "MESSAGE_TOO_LARGE"},
		{"wrong lease token", "POST", "/v1/leases/" + leaseID + ":heartbeat", "", `{"leaseToken": "slt_wrong"}`, http.StatusForbidden, "LEASE_TOKEN_INVALID"},
		{"no admin key", "GET", "/v1/admin/licenses", "", "", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"unknown admin key", "GET", "/v1/admin/licenses", "sak_unknown", "", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"tenant already exists", "POST", "/v1/admin/tenants", operatorKey, `{"id": "default"}`, http.StatusConflict, "ALREADY_EXISTS"},
		{"unknown license", "GET", "/v1/admin/licenses/lic_nope", operatorKey, "", http.StatusNotFound, "LICENSE_NOT_FOUND"},
		{"backend down", "POST", "/v1/leases", "", `{"licenseKey": "slk_unavailable", "fingerprint": "x"}`, http.StatusServiceUnavailable, "BACKEND_UNAVAILABLE"},
	}
	for _, tt := range tests {
		r := do(t, h, tt.method, tt.path, tt.key, tt.body)
		require.Equal(t, tt.code, r.code, "%s: %s", tt.name, r.body)
		require.Equal(t, tt.reason, r.reason(), "%s: %s", tt.name, r.body)
		require.NotContains(t, r.body, "10.9.9.9", "%s: internal detail in the body", tt.name)
		require.NotContains(t, r.body, "proto:", "%s: parser detail in the body", tt.name)
		require.Contains(t, r.header.Get("Content-Type"), "application/json", tt.name)
	}

	// Released, then heartbeated: FAILED_PRECONDITION is 400.
	rel := do(t, h, "POST", "/v1/leases/"+leaseID+":release", "", `{"leaseToken": "`+token+`"}`)
	require.Equal(t, http.StatusOK, rel.code, rel.body)
	hb := do(t, h, "POST", "/v1/leases/"+leaseID+":heartbeat", "", `{"leaseToken": "`+token+`"}`)
	require.Equal(t, http.StatusBadRequest, hb.code, hb.body)
	require.Equal(t, "LEASE_RELEASED", hb.reason())

	// An API key of another tenant: 403 when it names the tenant.
	tn := do(t, h, "POST", "/v1/admin/tenants", operatorKey, `{"id": "acme"}`)
	require.Equal(t, http.StatusOK, tn.code, tn.body)
	k := do(t, h, "POST", "/v1/admin/tenants/acme/api-keys", operatorKey, `{"name": "ci"}`)
	require.Equal(t, http.StatusOK, k.code, k.body)
	acme := str(t, k.json, "secret")
	other := do(t, h, "GET", "/v1/admin/licenses/"+licID+"?tenantId=default", acme, "")
	require.Equal(t, http.StatusForbidden, other.code, other.body)
	require.Equal(t, "PERMISSION_DENIED", other.reason())
	hidden := do(t, h, "GET", "/v1/admin/licenses/"+licID, acme, "")
	require.Equal(t, http.StatusNotFound, hidden.code, "another tenant's license is simply not found: %s", hidden.body)
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	r := do(t, h, "GET", "/healthz", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "ok\n", r.body)

	require.Equal(t, http.StatusServiceUnavailable, do(t, h, "GET", "/readyz", "", "").code, "not ready until told")
	h.SetReady(true)
	r = do(t, h, "GET", "/readyz", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "ready\n", r.body)
	h.SetReady(false) // shutting down
	require.Equal(t, http.StatusServiceUnavailable, do(t, h, "GET", "/readyz", "", "").code)
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/healthz", "", "").code, "liveness stays OK while draining")

	require.Equal(t, http.StatusMethodNotAllowed, do(t, h, "POST", "/healthz", "", "").code)
	require.Equal(t, http.StatusNotFound, do(t, h, "GET", "/nope", "", "").code)
}

// TestRootRedirectsToTheConsole: GET / (exactly) answers 303 to /ui/, and
// HEAD too (issue 25: it answered 404); other paths and methods answer as
// before: unknown paths 404, the API, health and the console unchanged.
func TestRootRedirectsToTheConsole(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	h.SetReady(true)
	for _, method := range []string{"GET", "HEAD"} {
		r := do(t, h, method, "/", "", "")
		require.Equal(t, http.StatusSeeOther, r.code, method)
		require.Equal(t, "/ui/", r.header.Get("Location"), method)
	}
	require.Equal(t, http.StatusSeeOther, do(t, h, "GET", "/?next=x", "", "").code, "a query does not change the path")
	require.Equal(t, http.StatusMethodNotAllowed, do(t, h, "POST", "/", "", "").code)
	require.Equal(t, http.StatusNotFound, do(t, h, "GET", "/index.html", "", "").code, "only / itself")
	require.Equal(t, http.StatusNotFound, do(t, h, "GET", "/nope", "", "").code)
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/ui/", "", "").code)
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/healthz", "", "").code)
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/readyz", "", "").code)
	require.Equal(t, http.StatusOK, do(t, h, "GET", "/openapi.json", "", "").code)
	require.Equal(t, http.StatusUnauthorized, do(t, h, "GET", "/v1/admin/licenses", "", "").code, "the API, unchanged")
}

// TestReadinessShowsACondition: a problem that does not stop serving shows
// as a second line of a 200; one that should take the instance out of
// the load balancer makes it 503; none leaves "ready".
func TestReadinessShowsACondition(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	h.SetReady(true)
	var problem string
	var unready bool
	h.SetCondition(func() (string, bool) { return problem, unready })
	r := do(t, h, "GET", "/readyz", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "ready\n", r.body)

	problem = "no cleanup leader"
	r = do(t, h, "GET", "/readyz", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "ready\ndegraded: no cleanup leader\n", r.body)

	unready = true
	r = do(t, h, "GET", "/readyz", "", "")
	require.Equal(t, http.StatusServiceUnavailable, r.code)
	require.Equal(t, "not ready: no cleanup leader\n", r.body)

	h.SetReady(false) // draining wins
	r = do(t, h, "GET", "/readyz", "", "")
	require.Equal(t, http.StatusServiceUnavailable, r.code)
	require.Equal(t, "not ready: draining\n", r.body)
}

func TestMetricsServesTheGatherer(t *testing.T) {
	t.Parallel()
	h, reg := newGateway(t)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "gateway_test_marker_total", Help: "x"})
	reg.MustRegister(c)
	c.Add(3)
	a := do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "slk_nope", "fingerprint": "x"}`)
	require.Equal(t, http.StatusNotFound, a.code)
	r := do(t, h, "GET", "/metrics", "", "")
	require.Equal(t, http.StatusOK, r.code)
	require.Contains(t, r.body, "\ngateway_test_marker_total 3\n")
	require.Contains(t, r.body, `seatd_acquisitions_total{result="not_found"} 1`, "REST calls go through the same interceptors as gRPC")
}

// countingReader counts the bytes the server took from a body.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestOversizedBodyOfUnknownLengthIsNotRead: a body without a length (sent
// in chunks) is cut at the limit, not read to its end.
func TestOversizedBodyOfUnknownLengthIsNotRead(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	body := &countingReader{r: io.LimitReader(zeros{}, 64<<20)}
	req := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/leases", body)
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "MESSAGE_TOO_LARGE")
	require.LessOrEqual(t, body.n, int64(testMaxBody+64<<10), "read no more than the limit and one buffer")
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// FuzzRESTDecoding: whatever a client sends as a body to any REST call, the
// answer is never a 500, every refusal carries an ErrorInfo reason, and no
// parser detail leaks. `make fuzz` runs it for a while; `go test` runs the
// seed corpus.
func FuzzRESTDecoding(f *testing.F) {
	for _, seed := range []string{
		`{"licenseKey": "slk_x", "fingerprint": "a"}`,
		`{"licenseKey": `,
		`{"licenseKey": "a\u0000b", "fingerprint": "a"}`,
		`{"leaseToken": 7}`,
		`[]`,
		`{"seats": "many", "leaseTtl": "forever"}`,
		"\xff\xfe",
		`{"metadata": {"k": {"nested": true}}}`,
	} {
		for route := range restRoutes {
			f.Add(uint8(route), seed)
		}
	}
	h, _ := newGateway(f)
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		r := restRoutes[int(route)%len(restRoutes)]
		done := make(chan struct{})
		var got reply
		go func() { defer close(done); got = do(t, h, r.method, r.path, operatorKey, body) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("%s %s %q hangs:\n%s", r.method, r.path, body, buf[:runtime.Stack(buf, true)])
		}
		require.NotEqual(t, http.StatusInternalServerError, got.code, "%s %s %q: %s", r.method, r.path, body, got.body)
		if got.code >= 400 && got.code != http.StatusServiceUnavailable {
			require.NotEmpty(t, got.reason(), "%s %s %q: %s", r.method, r.path, body, got.body)
		}
		require.NotContains(t, got.body, "proto:", "parser detail")
	})
}

// restRoutes are the REST calls that take a body.
var restRoutes = []struct{ method, path string }{
	{"POST", "/v1/leases"},
	{"POST", "/v1/leases/lse_000000000000000000000000:heartbeat"},
	{"POST", "/v1/leases/lse_000000000000000000000000:release"},
	{"POST", "/v1/admin/licenses"},
	{"PATCH", "/v1/admin/licenses/lic_000000000000000000000000"},
	{"POST", "/v1/admin/licenses/lic_000000000000000000000000/grants"},
	{"PATCH", "/v1/admin/licenses/lic_000000000000000000000000/grants/lic_000000000000000000000000.0123abcd"},
	{"POST", "/v1/admin/tenants"},
	{"POST", "/v1/admin/cleanup"},
}

// TestUndecodableFieldIsNamed: a body field that does not decode (a
// duration written "72h", a number where a string goes, a field the call
// does not have) is refused naming that field, in the message and as a
// BadRequest field violation, without the parser's words.
func TestUndecodableFieldIsNamed(t *testing.T) {
	t.Parallel()
	h, _ := newGateway(t)
	for _, tt := range []struct{ body, field, says string }{
		{`{"licenseKey": "slk_x", "fingerprint": "x", "borrowDuration": "72h"}`, "borrowDuration", "600s"},
		{`{"licenseKey": 5, "fingerprint": "x"}`, "licenseKey", "does not decode"},
		{`{"licenseKey": "slk_x", "fingerprint": "x", "colour": "red"}`, "colour", "is not a field"},
	} {
		r := do(t, h, "POST", "/v1/leases", "", tt.body)
		require.Equal(t, http.StatusBadRequest, r.code, r.body)
		require.Equal(t, "MALFORMED_REQUEST", r.reason(), r.body)
		require.Contains(t, str(t, r.json, "message"), tt.field, r.body)
		require.Contains(t, str(t, r.json, "message"), tt.says, r.body)
		require.NotContains(t, r.body, "proto:", "parser detail in the body")
		var violated []string
		details, _ := r.json["details"].([]any)
		for _, d := range details {
			m, _ := d.(map[string]any)
			if fvs, ok := m["fieldViolations"].([]any); ok {
				for _, fv := range fvs {
					violated = append(violated, fv.(map[string]any)["field"].(string))
				}
			}
		}
		require.Equal(t, []string{tt.field}, violated, r.body)
	}
	// A body that is one field of the request (CreateLicense's license).
	r := do(t, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 1, "leaseTtl": "60s", "maxBorrowDuration": "72h"}`)
	require.Equal(t, http.StatusBadRequest, r.code, r.body)
	require.Contains(t, str(t, r.json, "message"), "maxBorrowDuration", r.body)
	// Not an object: nothing to name.
	r = do(t, h, "POST", "/v1/leases", "", `{"licenseKey": `)
	require.Equal(t, http.StatusBadRequest, r.code, r.body)
	require.Equal(t, "the request does not decode as this call's JSON body and parameters", str(t, r.json, "message"))
	// A name no client could mean is not echoed.
	r = do(t, h, "POST", "/v1/leases", "", `{"licenseKey": "slk_x", "<b>x</b>": 1}`)
	require.Equal(t, http.StatusBadRequest, r.code, r.body)
	require.NotContains(t, r.body, "<b>")
}
