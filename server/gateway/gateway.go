// Package gateway serves seatd over HTTP: the REST API (grpc-gateway,
// forwarding to the gRPC server), /metrics, /healthz, /readyz and
// /openapi.json.
package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatd/seatd/gen/openapi"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Handler is seatd's HTTP surface.
type Handler struct {
	mux   *http.ServeMux
	ready atomic.Bool
}

// New returns the HTTP handler. conn is a client connection to this
// instance's own gRPC server: every REST call goes through the same
// interceptors (auth, metrics) as a gRPC call. gatherer serves /metrics.
func New(ctx context.Context, conn *grpc.ClientConn, gatherer prometheus.Gatherer) (*Handler, error) {
	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{
			Marshaler: &runtime.JSONPb{
				MarshalOptions:   protojson.MarshalOptions{EmitUnpopulated: false},
				UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
			},
		}),
	)
	for name, register := range map[string]func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
		"SeatService":      seatdv1.RegisterSeatServiceHandler,
		"HeartbeatService": seatdv1.RegisterHeartbeatServiceHandler,
		"AdminService":     seatdv1.RegisterAdminServiceHandler,
	} {
		if err := register(ctx, gw, conn); err != nil {
			return nil, fmt.Errorf("register %s gateway: %w", name, err)
		}
	}
	h := &Handler{mux: http.NewServeMux()}
	h.mux.Handle("/v1/", gw)
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	h.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !h.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	h.mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.Document)
	})
	return h, nil
}

// SetReady switches /readyz between 200 and 503 (503 first thing on shutdown,
// so load balancers stop routing here).
func (h *Handler) SetReady(ready bool) { h.ready.Store(ready) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }
