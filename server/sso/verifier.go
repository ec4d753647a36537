package sso

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/service"
)

// Verifier checks the admin API's bearer tokens that are not keys: OIDC
// tokens of the configured issuers, and console sessions. It is the
// grpcapi.TokenVerifier of the daemon.
type Verifier struct {
	cfg      Config
	byURL    map[string]*issuer
	byName   map[string]*issuer
	sessions *sealer
	now      func() time.Time
	client   *http.Client
	log      *slog.Logger
}

var _ grpcapi.TokenVerifier = (*Verifier)(nil)

// Options are a Verifier's collaborators; the zero value is usable.
type Options struct {
	// SessionKey seals console sessions: Config.SessionKeyFile's content,
	// or (the daemon's default) a key derived from the operator key.
	SessionKey []byte
	// SessionLifetime is how long a console session lasts
	// (DefaultSessionLifetime when 0).
	SessionLifetime time.Duration
	// Now is the clock of token and session expiry (time.Now).
	Now func() time.Time
	// HTTPClient fetches discovery documents, keys and tokens (one with
	// a DefaultIdPTimeout when nil).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Defaults.
const (
	DefaultSessionLifetime = 8 * time.Hour
	DefaultIdPTimeout      = 10 * time.Second
	// rediscoverAfter spaces attempts to fetch an issuer's discovery
	// document after one failed, so that a down IdP is not asked on
	// every call.
	rediscoverAfter = 5 * time.Second
)

// NewVerifier checks nothing over the network: each issuer's discovery
// document is fetched on first use (and again after a failure), so that a
// down IdP stops only its own sign-ins, never seatd's start.
func NewVerifier(cfg Config, opts Options) (*Verifier, error) {
	if len(opts.SessionKey) < 16 {
		return nil, errors.New("sso: the session key must be 16 bytes or more")
	}
	v := &Verifier{
		cfg: cfg, byURL: map[string]*issuer{}, byName: map[string]*issuer{},
		now: opts.Now, client: opts.HTTPClient, log: opts.Logger,
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: DefaultIdPTimeout}
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	lifetime := opts.SessionLifetime
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	v.sessions = newSealer(opts.SessionKey, lifetime, v.now)
	for i := range cfg.Issuers {
		is := &issuer{Issuer: cfg.Issuers[i], v: v}
		v.byURL[is.URL] = is
		v.byName[is.Name] = is
	}
	return v, nil
}

// issuer is a configured Issuer with its provider, once discovered.
type issuer struct {
	Issuer
	v *Verifier

	mu       sync.Mutex
	provider *oidc.Provider
	failedAt time.Time
}

var errIdPUnavailable = server.Errorf(server.EUNAVAILABLE, server.ReasonIdentityUnavailable,
	"the identity provider could not be reached; retry")

func (is *issuer) discover(ctx context.Context) (*oidc.Provider, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.provider != nil {
		return is.provider, nil
	}
	if !is.failedAt.IsZero() && is.v.now().Sub(is.failedAt) < rediscoverAfter {
		return nil, errIdPUnavailable
	}
	// The provider keeps this context for fetching keys later: not the
	// call's, which ends with the call.
	pctx := oidc.ClientContext(context.WithoutCancel(ctx), is.v.client)
	p, err := oidc.NewProvider(pctx, is.URL)
	if err != nil {
		is.failedAt = is.v.now()
		is.v.log.WarnContext(ctx, "OIDC discovery failed", "issuer", is.Name, "url", is.URL, "err", err)
		return nil, errIdPUnavailable
	}
	is.provider = p
	return p, nil
}

// VerifyToken implements grpcapi.TokenVerifier: a console session
// (sessionPrefix), or a JWT whose iss is a configured issuer.
func (v *Verifier) VerifyToken(ctx context.Context, token string) (grpcapi.SignedIn, bool, error) {
	if strings.HasPrefix(token, sessionPrefix) {
		s, err := v.sessions.open(token)
		if err != nil {
			return grpcapi.SignedIn{}, true, err
		}
		// The gateway renews a session due for it before it gets here
		// (Authenticate); one sent as a bearer value directly is not.
		if s.Recheck != 0 && !v.now().Before(time.Unix(s.Recheck, 0)) {
			return grpcapi.SignedIn{}, true, errRenewal
		}
		return s.signedIn(), true, nil
	}
	iss, ok := unverifiedIssuer(token)
	if !ok {
		return grpcapi.SignedIn{}, false, nil // not a JWT: perhaps an API key
	}
	is := v.byURL[iss]
	if is == nil {
		return grpcapi.SignedIn{}, true, server.Errorf(server.EUNAUTHENTICATED, server.ReasonTokenIssuerUnknown, "the token's issuer is not one seatd is configured to trust")
	}
	who, _, err := is.verify(ctx, token, is.Audience, "")
	return who, true, err
}

// verify checks token's signature, issuer, expiry, audience (and nonce,
// when not ""), and maps the person to a role.
func (is *issuer) verify(ctx context.Context, token, audience, nonce string) (grpcapi.SignedIn, *oidc.IDToken, error) {
	p, err := is.discover(ctx)
	if err != nil {
		return grpcapi.SignedIn{}, nil, err
	}
	ctx = oidc.ClientContext(ctx, is.v.client)
	// The audience is checked below, to say so when it is the refusal.
	idt, err := p.VerifierContext(ctx, &oidc.Config{SkipClientIDCheck: true, Now: is.v.now}).Verify(ctx, token)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return grpcapi.SignedIn{}, nil, server.Errorf(server.EUNAUTHENTICATED, server.ReasonTokenExpired, "the token has expired: get a new one from the identity provider")
	case err != nil:
		is.v.log.DebugContext(ctx, "OIDC token refused", "issuer", is.Name, "err", err)
		return grpcapi.SignedIn{}, nil, server.Errorf(server.EUNAUTHENTICATED, server.ReasonTokenInvalid, "the token is not valid: its signature or claims do not check")
	}
	if !slices.Contains(idt.Audience, audience) {
		return grpcapi.SignedIn{}, nil, server.Errorf(server.EUNAUTHENTICATED, server.ReasonTokenAudience, "the token is not meant for seatd: its audience does not name seatd's")
	}
	if nonce != "" && idt.Nonce != nonce {
		return grpcapi.SignedIn{}, nil, server.Errorf(server.EUNAUTHENTICATED, server.ReasonTokenInvalid, "the ID token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return grpcapi.SignedIn{}, nil, server.Errorf(server.EUNAUTHENTICATED, server.ReasonTokenInvalid, "the token's claims do not decode")
	}
	person := service.Person{Issuer: is.Name, Subject: idt.Subject}
	person.Email, _ = claimAt(claims, is.EmailClaim).(string)
	role, ok := is.roleOf(claims)
	if !ok {
		return grpcapi.SignedIn{}, nil, server.Errorf(server.EPERMISSION, server.ReasonRoleNotMapped,
			"signed in, but none of your groups (claim %q) has a role in seatd: ask your administrator", is.GroupsClaim)
	}
	return grpcapi.SignedIn{Person: person, TenantID: is.Tenant, Role: role}, idt, nil
}

// roleOf is the highest role any of the person's groups maps to.
func (is *issuer) roleOf(claims map[string]any) (server.Role, bool) {
	var groups []string
	switch g := claimAt(claims, is.GroupsClaim).(type) {
	case string:
		groups = []string{g}
	case []any:
		for _, x := range g {
			if s, ok := x.(string); ok {
				groups = append(groups, s)
			}
		}
	}
	var best server.Role
	for _, g := range groups {
		if r, ok := is.Roles[g]; ok && (best == "" || r.AtLeast(best)) {
			best = r
		}
	}
	return best, best != ""
}

// claimAt follows a dotted path through nested objects (a claim whose
// own name has a dot is found first).
func claimAt(claims map[string]any, path string) any {
	if v, ok := claims[path]; ok {
		return v
	}
	head, rest, ok := strings.Cut(path, ".")
	if !ok {
		return nil
	}
	inner, _ := claims[head].(map[string]any)
	if inner == nil {
		return nil
	}
	return claimAt(inner, rest)
}

// unverifiedIssuer reads the iss of a compact JWS without checking it:
// only to choose which issuer's keys then check the token.
func unverifiedIssuer(token string) (string, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(payload, &c) != nil || c.Iss == "" {
		return "", false
	}
	return c.Iss, true
}
