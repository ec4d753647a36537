package grpcapi

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/seatd/seatd/server"
)

// Principal is who makes an admin call: the operator, or an API key that
// administers one tenant.
type Principal struct {
	Operator bool
	TenantID string // the API key's tenant
	KeyID    string
}

// Actor names the principal in the audit log (seatd itself is
// service.SystemActor).
func (p Principal) Actor() string {
	if p.Operator {
		return "operator"
	}
	return "apikey:" + p.KeyID
}

// tenant returns the tenant a call works in: for the operator the requested
// one (default when empty); for an API key its own, and naming another is
// PERMISSION_DENIED.
func (p Principal) tenant(requested string) (string, error) {
	if p.Operator {
		if requested == "" {
			return server.DefaultTenantID, nil
		}
		return requested, validTenantID("tenant_id", requested)
	}
	if requested != "" && requested != p.TenantID {
		return "", server.Errorf(server.EPERMISSION, server.ReasonPermissionDenied, "this API key administers tenant %q only", p.TenantID)
	}
	return p.TenantID, nil
}

func (p Principal) requireOperator() error {
	if !p.Operator {
		return server.Errorf(server.EPERMISSION, server.ReasonPermissionDenied, "only the operator key may do this")
	}
	return nil
}

type principalKey struct{}

func principalFrom(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// Authenticator checks the bearer key of admin calls.
type Authenticator struct {
	OperatorKey string
	Keys        server.TenantStore
}

var errNoCredentials = server.Errorf(server.EUNAUTHENTICATED, server.ReasonUnauthenticated, "missing or invalid credentials: send authorization: Bearer <key>")

func (a *Authenticator) authenticate(ctx context.Context) (Principal, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) != 1 {
		return Principal{}, errNoCredentials
	}
	scheme, key, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || key == "" {
		return Principal{}, errNoCredentials
	}
	key = strings.TrimSpace(key)
	if a.OperatorKey != "" && subtle.ConstantTimeCompare([]byte(key), []byte(a.OperatorKey)) == 1 {
		return Principal{Operator: true}, nil
	}
	k, err := a.Keys.APIKeyBySecretHash(ctx, server.HashSecret(key))
	if server.ErrorCode(err) == server.ENOTFOUND {
		return Principal{}, errNoCredentials
	}
	if err != nil {
		return Principal{}, err
	}
	if !k.RevokedAt.IsZero() {
		return Principal{}, errNoCredentials
	}
	return Principal{TenantID: k.TenantID, KeyID: k.ID}, nil
}

// adminPrefix selects the methods that need a bearer key; seat and heartbeat
// calls authenticate with the license key and lease token in the message.
const adminPrefix = "/seatd.v1.AdminService/"

// UnaryInterceptor authenticates admin calls and puts the Principal in the context.
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, adminPrefix) {
			return handler(ctx, req)
		}
		p, err := a.authenticate(ctx)
		if err != nil {
			return nil, err
		}
		return handler(context.WithValue(ctx, principalKey{}, p), req)
	}
}
