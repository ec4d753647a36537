package grpcapi

import (
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// OperatorOnly serves h to the operator key alone, for the few HTTP
// routes that are not gRPC methods (the backup stream). The key is
// checked by the same Authenticator as admin gRPC calls; refusals have
// the REST API's status and error body. Unknown keys count against the
// caller's address as they do on gRPC (ratelimits.go).
func (s *Server) OperatorOnly(h http.Handler) http.Handler {
	const method = adminPrefix + "Backup" // an admin call for the limits
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := AddrKey(r.RemoteAddr)
		if err := s.limits.admit(addr, method); err != nil {
			s.WriteHTTPError(w, r, err)
			return
		}
		ctx := metadata.NewIncomingContext(r.Context(), metadata.MD{"authorization": r.Header.Values("Authorization")})
		p, err := s.auth.authenticate(ctx)
		s.limits.done(addr, method, err)
		if err == nil {
			err = p.requireOperator()
		}
		if err != nil {
			s.WriteHTTPError(w, r, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// BearerChallenge is the WWW-Authenticate value of a 401 (RFC 6750, 3.1):
// the scheme and realm, and error="invalid_token" when the request carried
// a key that was not accepted (none when it carried none).
func BearerChallenge(r *http.Request) string {
	if r.Header.Get("Authorization") == "" {
		return `Bearer realm="seatd"`
	}
	return `Bearer realm="seatd", error="invalid_token"`
}

// WriteHTTPError answers err as the REST gateway answers a failed call:
// the gRPC status as JSON, with its HTTP code. Like every error a client
// sees, it goes through toStatus: internal detail is logged, not sent.
func (s *Server) WriteHTTPError(w http.ResponseWriter, r *http.Request, err error) {
	st := status.Convert(toStatus(r.Context(), s.log, err))
	body, merr := protojson.Marshal(st.Proto())
	if merr != nil {
		body = []byte(`{"code":13,"message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	if st.Code() == codes.Unauthenticated {
		w.Header().Set("WWW-Authenticate", BearerChallenge(r))
	}
	if after := RetryAfter(st); after != "" {
		w.Header().Set("Retry-After", after)
	}
	w.WriteHeader(runtime.HTTPStatusFromCode(st.Code()))
	_, _ = w.Write(body)
}
