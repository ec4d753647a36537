package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fullstorydev/grpchan"
	"github.com/fullstorydev/grpchan/inprocgrpc"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/metrics"
)

// The gateway's marshaler as New makes it.
var (
	plainJSONPb = &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{EmitDefaultValues: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}
	gatewayMarshaler = namingMarshaler{plainJSONPb}
)

// namingMarshaler writes byte for byte what grpc-gateway's JSONPb writes
// (its Marshal only spares a buffer), answers and error bodies alike.
func TestMarshalerWritesWhatJSONPbWrites(t *testing.T) {
	t.Parallel()
	big := &seatdv1.ListLicensesResponse{}
	for range 2000 {
		big.Licenses = append(big.Licenses, &seatdv1.License{Id: "lic_" + strings.Repeat("x", 24), Name: "a license", Seats: 10})
	}
	for name, msg := range map[string]proto.Message{
		"heartbeat answer": heartbeatAnswer(),
		"empty list":       &seatdv1.ListLicensesResponse{},
		"large list":       big, // larger than a pooled buffer
		"error status":     status.New(codes.NotFound, "no such lease").Proto(),
	} {
		for range 3 { // pooled buffers come back dirty
			want, err := plainJSONPb.Marshal(msg)
			require.NoError(t, err, name)
			got, err := gatewayMarshaler.Marshal(msg)
			require.NoError(t, err, name)
			require.Equal(t, string(want), string(got), name)
		}
	}
	// Not a message (a body that is one field): JSONPb's own way.
	want, err := plainJSONPb.Marshal([]string{"a", "b"})
	require.NoError(t, err)
	got, err := gatewayMarshaler.Marshal([]string{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// The decoder's fast path (protojson on the whole body) decodes what
// JSONPb's decoder decodes, and leaves everything else to it: trailing
// data, an empty body, bad JSON, unknown fields.
func TestDecoderDecodesAsJSONPb(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"leaseToken": "slt_x", "nonce": "n"}`,
		` {"leaseToken":"slt_x"} ` + "\n",
		`{"leaseToken": "slt_x"} {"nonce": "n"}`,
		`{"leaseToken": "slt_x"} trailing`,
		``,
		`   `,
		`null`,
		`{"leaseToken": 7}`,
		`{"colour": "red"}`,
		`{"leaseToken": "slt_x", "leaseToken": "slt_y"}`,
		"{\"leaseToken\": \"\xff\"}",
		`[1, 2]`,
	} {
		want := &seatdv1.HeartbeatRequest{}
		werr := plainJSONPb.NewDecoder(strings.NewReader(body)).Decode(want)
		got := &seatdv1.HeartbeatRequest{}
		gerr := gatewayMarshaler.NewDecoder(strings.NewReader(body)).Decode(got)
		require.Equal(t, werr == nil, gerr == nil, "%q: JSONPb %v, gateway %v", body, werr, gerr)
		if werr == nil {
			require.True(t, proto.Equal(want, got), "%q: %v, %v", body, want, got)
		}
	}
}

// BenchmarkGatewayJSON: the heartbeat answer through grpc-gateway's JSONPb
// and through the gateway's marshaler (issue 32).
func BenchmarkGatewayJSON(b *testing.B) {
	answer := heartbeatAnswer()
	for name, m := range map[string]runtime.Marshaler{"jsonpb": plainJSONPb, "gateway": gatewayMarshaler} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Marshal(answer); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	body := []byte(`{"leaseToken": "slt_gWipwPCXbNLbz6mICcx9BbTv9GqJRhopFJbFS-IRF3g"}`)
	for name, m := range map[string]runtime.Marshaler{"jsonpb": plainJSONPb, "gateway": gatewayMarshaler} {
		b.Run("decode-"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var req seatdv1.HeartbeatRequest
				if err := m.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRESTHeartbeat: one REST heartbeat through the whole HTTP
// handler (no network), the gateway reaching the handlers through
// InProcess ("direct": unary calls in the HTTP handler's goroutine) and,
// for comparison, through a plain inprocgrpc channel with the same chain
// (how it reached them before issue 32's change). Allocations per call are
// the measure to trust on a loaded machine.
func BenchmarkRESTHeartbeat(b *testing.B) {
	for _, via := range []string{"inprocgrpc", "direct"} {
		b.Run(via, func(b *testing.B) {
			st, err := embedded.Open(b.TempDir(), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
			require.NoError(b, err)
			b.Cleanup(func() { _ = st.Close() })
			_, err = st.CreateTenant(context.Background(), server.Tenant{ID: server.DefaultTenantID, CreatedAt: time.Now()})
			require.NoError(b, err)
			reg := prometheus.NewRegistry()
			m := metrics.New(reg)
			api := grpcapi.New(grpcapi.Config{
				Store: st, Cleaner: cleanup.NewCleaner(st, cleanup.Config{}, nil, m),
				Leadership: cleanup.Solo{ID: "gw"}, OperatorKey: operatorKey, Metrics: m,
			})
			var conn grpc.ClientConnInterface
			if via == "direct" {
				conn = api.InProcess(api.UnaryInterceptors(), api.StreamInterceptors())
			} else {
				ch := new(inprocgrpc.Channel)
				api.Register(grpchan.WithStreamInterceptors(grpchan.WithUnaryInterceptors(ch, api.UnaryInterceptors()...), api.StreamInterceptors()...))
				conn = ch
			}
			h, err := New(b.Context(), conn, reg, Limits{MaxBodyBytes: DefaultMaxBodyBytes})
			require.NoError(b, err)
			created := do(b, h, "POST", "/v1/admin/licenses", operatorKey, `{"seats": 10, "leaseTtl": "600s"}`)
			require.Equal(b, http.StatusOK, created.code, created.body)
			a := do(b, h, "POST", "/v1/leases", "", `{"licenseKey": "`+created.json["key"].(string)+`", "fingerprint": "one"}`)
			require.Equal(b, http.StatusOK, a.code, a.body)
			path := "/v1/leases/" + a.json["lease"].(map[string]any)["id"].(string) + ":heartbeat"
			body := `{"leaseToken": "` + a.json["leaseToken"].(string) + `"}`
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequestWithContext(b.Context(), "POST", path, strings.NewReader(body))
				req.RemoteAddr = "192.0.2.1:1234"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Body.String())
				}
			}
		})
	}
}
