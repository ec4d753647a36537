// Package gateway serves seatd over HTTP: the REST API (grpc-gateway,
// calling the seatd services through grpcapi's in-process channel), /metrics, /healthz, /readyz,
// /openapi.json (Swagger 2.0), /openapi-3.1.json and the web console at /ui/.
package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/protoadapt"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/console"
	"github.com/seatd/seatd/server/grpcapi"
)

// Limits bound what one REST call may cost.
type Limits struct {
	// MaxBodyBytes is the largest request body read; a larger one is
	// answered 413 (MESSAGE_TOO_LARGE) without reading the rest.
	MaxBodyBytes int64
	// WriteTimeout bounds writing an answer, except for the streams
	// (WaitForSeat), which stay open as long as the wait.
	WriteTimeout time.Duration
}

// Defaults for Limits.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultWriteTimeout = 30 * time.Second
)

// Handler is seatd's HTTP surface.
type Handler struct {
	mux *http.ServeMux
	// notReady is why /readyz answers 503 ("" once ready).
	notReady  atomic.Pointer[string]
	condition atomic.Pointer[Condition]
	sessions  Sessions // console sign-in (sessions.go); nil: keys only
	// authRoutes are the Sessions' routes under /ui/auth/ (serveAuth).
	authRoutes *http.ServeMux
}

// Condition reports a state /readyz shows beside readiness: problem is ""
// when all is well, else one line for operators (no internals: /readyz
// needs no key); unready makes /readyz answer 503 while there is one.
type Condition func() (problem string, unready bool)

// New returns the HTTP handler. conn is this instance's in-process channel
// to its seatd services (grpcapi.Server.InProcess): every REST call goes
// through the same interceptors (auth, validation, limits, metrics) as a
// gRPC call, counted by the HTTP client's address (grpcapi.WithRESTClient).
// gatherer serves /metrics.
func New(ctx context.Context, conn grpc.ClientConnInterface, gatherer prometheus.Gatherer, limits Limits) (*Handler, error) {
	if limits.MaxBodyBytes <= 0 {
		limits.MaxBodyBytes = DefaultMaxBodyBytes
	}
	gw := runtime.NewServeMux(
		runtime.WithErrorHandler(shapeErrors),
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{
			Marshaler: namingMarshaler{&runtime.JSONPb{
				// Every list, map, number, string and bool is written, empty
				// or zero too: an empty list is [] and a count of 0 is there.
				// Unset messages (timestamps, durations) stay out.
				MarshalOptions:   protojson.MarshalOptions{EmitDefaultValues: true},
				UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
			}},
		}),
	)
	for name, register := range map[string]func() error{
		"SeatService": func() error {
			return seatdv1.RegisterSeatServiceHandlerClient(ctx, gw, seatdv1.NewSeatServiceClient(conn))
		},
		"HeartbeatService": func() error {
			return seatdv1.RegisterHeartbeatServiceHandlerClient(ctx, gw, seatdv1.NewHeartbeatServiceClient(conn))
		},
		"AdminService": func() error {
			return seatdv1.RegisterAdminServiceHandlerClient(ctx, gw, seatdv1.NewAdminServiceClient(conn))
		},
	} {
		if err := register(); err != nil {
			return nil, fmt.Errorf("register %s gateway: %w", name, err)
		}
	}
	doc, err := openAPIDocument()
	if err != nil {
		return nil, err
	}
	doc31, err := openAPI31Document(doc)
	if err != nil {
		return nil, err
	}
	h := &Handler{mux: http.NewServeMux()}
	h.SetNotReady("starting")
	h.mux.Handle("/v1/", h.withSession(gw, bounded(gw, limits)))
	h.mux.Handle("GET "+console.Prefix, console.Handler())
	h.mux.HandleFunc("GET "+console.Prefix+"auth/", h.serveAuth)
	h.mux.HandleFunc("POST "+console.Prefix+"auth/", h.serveAuth)
	// Exactly "/" (not every unknown path): a person who types the
	// server's address finds the console; a client's wrong path still
	// gets a 404.
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, console.Prefix, http.StatusSeeOther)
	})
	h.mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	h.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if why := *h.notReady.Load(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + why + "\n"))
			return
		}
		if c := h.condition.Load(); c != nil {
			if problem, unready := (*c)(); problem != "" {
				if unready {
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = w.Write([]byte("not ready: " + problem + "\n"))
					return
				}
				_, _ = w.Write([]byte("ready\ndegraded: " + problem + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	h.mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
	h.mux.HandleFunc("GET "+OpenAPI31Path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc31)
	})
	return h, nil
}

// SetReady switches /readyz between 200 and 503 (503 first thing on shutdown,
// so load balancers stop routing here).
func (h *Handler) SetReady(ready bool) {
	if ready {
		h.SetNotReady("")
		return
	}
	h.SetNotReady("draining")
}

// SetNotReady makes /readyz answer 503 "not ready: " + why (a few words
// anyone may read), or 200 when why is "".
func (h *Handler) SetNotReady(why string) { h.notReady.Store(&why) }

// SetCondition makes /readyz ask c while ready (the cleanup leader
// election's state, daemon.go).
func (h *Handler) SetCondition(c Condition) { h.condition.Store(&c) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// bounded reads a call's body up to the limit before grpc-gateway sees it,
// so that an oversized body costs at most the limit and is answered 413
// with an ErrorInfo reason (grpc-gateway would answer a decode error).
func bounded(gw *runtime.ServeMux, limits Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Who the call is from, for the per-address limits: the HTTP
		// client's address, as a context value only this process sets.
		r = r.WithContext(grpcapi.WithRESTClient(r.Context(), r.RemoteAddr))
		if field := notUTF8(r); field != "" {
			badText(gw, w, r, field)
			return
		}
		if limits.WriteTimeout > 0 && !strings.HasSuffix(r.URL.Path, ":wait") {
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(limits.WriteTimeout))
		}
		if r.Body != nil && r.Body != http.NoBody {
			if r.ContentLength > limits.MaxBodyBytes {
				tooLarge(gw, w, r, limits.MaxBodyBytes)
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limits.MaxBodyBytes))
			var max *http.MaxBytesError
			switch {
			case errors.As(err, &max):
				tooLarge(gw, w, r, limits.MaxBodyBytes)
				return
			case err != nil: // the client hung up or was too slow
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		gw.ServeHTTP(w, r)
	})
}

func tooLarge(gw *runtime.ServeMux, w http.ResponseWriter, r *http.Request, limit int64) {
	st := status.New(codes.ResourceExhausted, fmt.Sprintf("request body larger than %d bytes", limit))
	if with, err := st.WithDetails(&errdetails.ErrorInfo{Reason: server.ReasonMessageTooLarge, Domain: grpcapi.ErrorDomain}); err == nil {
		st = with
	}
	// The connection may still be sending the body: close it after this
	// answer rather than read the rest.
	w.Header().Set("Connection", "close")
	_, out := runtime.MarshalerForRequest(gw, r)
	runtime.DefaultHTTPErrorHandler(r.Context(), gw, out, w, r, &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestEntityTooLarge, Err: st.Err()})
}

// notUTF8 names the part of a request's URL that is not valid UTF-8 (the
// path, or a query parameter), "" if none is. grpc-gateway would copy such
// bytes into the gRPC request, which then fails to marshal: a 500 with
// grpc-go's words, before authentication.
func notUTF8(r *http.Request) string {
	if !utf8.ValidString(r.URL.Path) {
		return "path"
	}
	if r.URL.RawQuery == "" {
		return ""
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return "" // grpc-gateway answers a query that does not parse
	}
	for k, vs := range q {
		if !utf8.ValidString(k) {
			return "query"
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return k
			}
		}
	}
	return ""
}

// badText is 400 INVALID_ARGUMENT naming the field (never echoing it).
func badText(gw *runtime.ServeMux, w http.ResponseWriter, r *http.Request, field string) {
	st := status.New(codes.InvalidArgument, field+": must be valid UTF-8 (percent-encode UTF-8 bytes only)")
	if with, err := st.WithDetails(
		&errdetails.ErrorInfo{Reason: server.ReasonInvalidArgument, Domain: grpcapi.ErrorDomain},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: "must be valid UTF-8"}}},
	); err == nil {
		st = with
	}
	_, out := runtime.MarshalerForRequest(gw, r)
	runtime.DefaultHTTPErrorHandler(r.Context(), gw, out, w, r, st.Err())
}

// bearerChallenge replaces the WWW-Authenticate header grpc-gateway sets on
// a 401 (the status message) with an RFC 6750 challenge.
type bearerChallenge struct {
	http.ResponseWriter
	r *http.Request
}

func (b bearerChallenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		b.Header().Set("WWW-Authenticate", grpcapi.BearerChallenge(b.r))
	}
	b.ResponseWriter.WriteHeader(code)
}

// shapeErrors gives every refusal an ErrorInfo reason: grpc-gateway's own
// (a body or parameter that does not decode) come as INVALID_ARGUMENT with
// the parser's words and no details; they become MALFORMED_REQUEST without
// the parser's words, naming the body's field that did not decode where
// namingMarshaler found it (a BadRequest field violation). A message too large for gRPC is 413, not 429.
func shapeErrors(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	st, ok := status.FromError(err)
	var custom *runtime.HTTPStatusError
	switch {
	case errors.As(err, &custom):
	case ok && st.Code() == codes.InvalidArgument && len(st.Details()) == 0:
		details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: server.ReasonMalformedRequest, Domain: grpcapi.ErrorDomain}}
		if name, why, named := fieldOf(st.Message()); named {
			st = status.New(codes.InvalidArgument, fmt.Sprintf("the request's field %s %s", name, why))
			details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: name, Description: why}}})
		} else {
			st = status.New(codes.InvalidArgument, "the request does not decode as this call's JSON body and parameters")
		}
		if with, derr := st.WithDetails(details...); derr == nil {
			st = with
		}
		err = st.Err()
	case ok && hasReason(st, server.ReasonMessageTooLarge):
		err = &runtime.HTTPStatusError{HTTPStatus: http.StatusRequestEntityTooLarge, Err: err}
	}
	if ok {
		if after := grpcapi.RetryAfter(st); after != "" {
			w.Header().Set("Retry-After", after)
		}
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, bearerChallenge{w, r}, r, err)
}

func hasReason(st *status.Status, reason string) bool {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == reason {
			return true
		}
	}
	return false
}
