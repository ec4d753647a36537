package gateway

import (
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/grpcapi"
)

// Sessions are the console's sign-in and sessions (server/sso.Verifier):
// its routes under /ui/auth/, and the session a REST call without an
// Authorization header may carry as a cookie.
type Sessions interface {
	Routes(mux *http.ServeMux)
	// Authenticate returns the bearer value a call's session stands for
	// ("" without one), or why its session is refused (expired, no CSRF
	// token on a call that changes state); a renewed session's cookie is
	// set on w.
	Authenticate(w http.ResponseWriter, r *http.Request) (string, error)
}

// UseSessions turns console sign-in on. Call it before serving.
func (h *Handler) UseSessions(s Sessions) {
	mux := http.NewServeMux()
	s.Routes(mux)
	h.authRoutes = mux
	h.sessions = s
}

// serveAuth serves the console's sign-in routes (/ui/auth/): the
// Sessions' when single sign-on is on; else only the session route,
// which tells the console there is none (so that it offers keys alone).
func (h *Handler) serveAuth(w http.ResponseWriter, r *http.Request) {
	if h.authRoutes != nil {
		h.authRoutes.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/ui/auth/session" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(`{"signedIn":false,"issuers":[]}` + "\n"))
		return
	}
	http.NotFound(w, r)
}

// withSession lets a REST call with no Authorization header authenticate
// with its console session cookie: the header is set from the session
// after the CSRF check, and the gRPC server checks it as any bearer value.
func (h *Handler) withSession(gw *runtime.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.sessions == nil || r.Header.Get("Authorization") != "" {
			next.ServeHTTP(w, r)
			return
		}
		bearer, err := h.sessions.Authenticate(w, r)
		if err != nil {
			code := codes.Unauthenticated
			if server.ErrorCode(err) == server.EPERMISSION {
				code = codes.PermissionDenied
			}
			msg := "the console session is not valid: sign in again"
			if se, ok := err.(*server.Error); ok {
				msg = se.Message
			}
			st := status.New(code, msg)
			if with, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: server.ErrorReason(err), Domain: grpcapi.ErrorDomain}); derr == nil {
				st = with
			}
			_, out := runtime.MarshalerForRequest(gw, r)
			runtime.DefaultHTTPErrorHandler(r.Context(), gw, out, w, r, st.Err())
			return
		}
		if bearer != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		next.ServeHTTP(w, r)
	})
}
