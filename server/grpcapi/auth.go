package grpcapi

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

// Principal is who makes an admin call: the operator, an API key of one
// tenant, or a person signed in through single sign-on (a tenant's or the
// operator's issuer).
type Principal struct {
	Operator bool        // Role is RoleOperator
	TenantID string      // the key's or the person's tenant
	KeyID    string      // an API key's id
	Role     server.Role // what it may do (methodRoles)
	// Person is who signed in, for a bearer token or console session.
	Person *service.Person
}

// Actor names the principal in the audit log (seatd itself is
// service.SystemActor); a person's entries also carry their issuer,
// subject and email (service.WithPerson).
func (p Principal) Actor() string {
	switch {
	case p.Person != nil && p.Person.Email != "":
		return "user:" + p.Person.Email
	case p.Person != nil:
		return "user:" + p.Person.Subject
	case p.Operator:
		return "operator"
	}
	return "apikey:" + p.KeyID
}

// SignedIn is a person a TokenVerifier vouches for, with the tenant and
// role their issuer's configuration maps them to.
type SignedIn struct {
	Person   service.Person
	TenantID string      // "" for the operator's issuer
	Role     server.Role // RoleOperator for the operator's issuer
}

// TokenVerifier checks bearer tokens that are neither the operator key
// nor an API key: OIDC ID and access tokens, console sessions (server/sso).
// ok is false when token is not of a kind it knows; err is the refusal
// (UNAUTHENTICATED or PERMISSION_DENIED with its reason) of one it knows.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, token string) (who SignedIn, ok bool, err error)
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
	Tokens      TokenVerifier // may be nil: keys only
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
		return Principal{Operator: true, Role: server.RoleOperator}, nil
	}
	if a.Tokens != nil {
		who, ok, err := a.Tokens.VerifyToken(ctx, key)
		if err != nil {
			return Principal{}, err
		}
		if ok {
			person := who.Person
			return Principal{
				Operator: who.Role == server.RoleOperator, TenantID: who.TenantID, Role: who.Role, Person: &person,
			}, nil
		}
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
	return Principal{TenantID: k.TenantID, KeyID: k.ID, Role: k.KeyRole()}, nil
}

// adminPrefix selects the methods that need a bearer key; seat and heartbeat
// calls authenticate with the license key and lease token in the message.
const adminPrefix = "/seatd.v1.AdminService/"

// UnaryInterceptor authenticates admin calls, authorizes them by the
// matrix (authz.go: methodRoles) and puts the Principal in the context
// (and a person's name, for the audit log: service.WithPerson).
func (a *Authenticator) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, adminPrefix) {
			return handler(ctx, req)
		}
		p, err := a.authenticate(ctx)
		if err != nil {
			return nil, err
		}
		if err := authorize(p, info.FullMethod); err != nil {
			return nil, err
		}
		if p.Person != nil {
			ctx = service.WithPerson(ctx, *p.Person)
		}
		return handler(context.WithValue(ctx, principalKey{}, p), req)
	}
}
