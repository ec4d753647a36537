package sso_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/gateway"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/sso"
)

const operatorKey = "sso-test-operator-key-0123456789"

// clock is the verifier's clock, moved by the tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newIdP starts an in-process OIDC provider on loopback with a key of its
// own (mockoidc's default key is public).
func newIdP(t *testing.T) *mockoidc.MockOIDC {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	m, err := mockoidc.NewServer(key)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, m.Start(ln, nil))
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

type env struct {
	idp     *mockoidc.MockOIDC
	clock   *clock
	admin   seatdv1.AdminServiceClient
	http    http.Handler
	verify  *sso.Verifier
	license string // a license of tenant acme
}

// newEnv serves seatd's API (gRPC, and REST through the gateway) on the
// embedded store, trusting one IdP for tenant acme: group "lic-admins" →
// admin, "lic-viewers" → viewer; console sign-in with the IdP's client.
func newEnv(t *testing.T, moreIssuers ...string) *env {
	t.Helper()
	idp := newIdP(t)
	clk := &clock{now: time.Now()}
	cfg, err := sso.ParseConfig([]byte(fmt.Sprintf(`
public_url: http://127.0.0.1:1
issuers:
  - name: acme-idp
    issuer: %s
    tenant: acme
    audience: %s
    client_id: %s
    client_secret_file: %s
    scopes: [openid, email, groups]
    roles:
      lic-admins: admin
      lic-viewers: viewer
`, idp.Issuer(), idp.ClientID, idp.ClientID, secretFile(t, idp.ClientSecret)) + strings.Join(moreIssuers, "")))
	require.NoError(t, err)
	v, err := sso.NewVerifier(cfg, sso.Options{SessionKey: []byte(operatorKey), Now: clk.Now})
	require.NoError(t, err)

	st, err := embedded.Open(t.TempDir(), embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.CreateTenant(t.Context(), server.Tenant{ID: server.DefaultTenantID, CreatedAt: time.Now()})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	api := grpcapi.New(grpcapi.Config{
		Store: st, Cleaner: cleanup.NewCleaner(st, cleanup.Config{}, nil, m),
		Leadership: cleanup.Solo{ID: "sso"}, OperatorKey: operatorKey, Metrics: m, Tokens: v,
	})
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(api.UnaryInterceptors()...), grpc.ChainStreamInterceptor(api.StreamInterceptors()...))
	api.Register(srv)
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	h, err := gateway.New(t.Context(), conn, reg, gateway.Limits{})
	require.NoError(t, err)
	h.UseSessions(v)

	e := &env{idp: idp, clock: clk, admin: seatdv1.NewAdminServiceClient(conn), http: h, verify: v}
	op := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+operatorKey)
	_, err = e.admin.CreateTenant(op, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "acme"}})
	require.NoError(t, err)
	lic, err := e.admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{TenantId: "acme", License: &seatdv1.License{
		Seats: 2, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	e.license = lic.GetLicense().GetId()
	return e
}

func secretFile(t *testing.T, secret string) string {
	t.Helper()
	p := t.TempDir() + "/secret"
	require.NoError(t, writeFile(p, secret))
	return p
}

// claims are a token's claims; mint signs them with the IdP's key.
type claims struct {
	jwt.RegisteredClaims
	Email  string   `json:"email,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

func (e *env) claims(groups ...string) claims {
	now := e.clock.Now()
	return claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: e.idp.Issuer(), Subject: "u-1234", Audience: jwt.ClaimStrings{e.idp.ClientID},
			IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		},
		Email: "ada@acme.example", Groups: groups,
	}
}

func mint(t *testing.T, idp *mockoidc.MockOIDC, c claims) string {
	t.Helper()
	tok, err := idp.Keypair.SignJWT(c)
	require.NoError(t, err)
	return tok
}

func bearer(t *testing.T, token string) context.Context {
	return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
}

func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// rest calls the REST API with a bearer token; it answers the status and
// the ErrorInfo reason.
func (e *env) rest(t *testing.T, method, path, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.http.ServeHTTP(rec, req)
	return rec.Code, restReason(rec.Body.Bytes())
}

func restReason(body []byte) string {
	var b struct {
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		} `json:"details"`
	}
	_ = json.Unmarshal(body, &b)
	for _, d := range b.Details {
		if strings.HasSuffix(d.Type, "ErrorInfo") {
			return d.Reason
		}
	}
	return ""
}

// TestBearerTokens: a token of the configured issuer works over gRPC and
// REST with the role its groups map to, in its issuer's tenant; every
// other token is refused with its reason, on both transports.
func TestBearerTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := newIdP(t)

	admin := mint(t, e.idp, e.claims("staff", "lic-admins"))
	got, err := e.admin.GetLicense(bearer(t, admin), &seatdv1.GetLicenseRequest{LicenseId: e.license})
	require.NoError(t, err)
	require.Equal(t, "acme", got.GetLicense().GetTenantId(), "the issuer's tenant")
	code, _ := e.rest(t, http.MethodGet, "/v1/admin/licenses/"+e.license, admin)
	require.Equal(t, http.StatusOK, code)

	viewer := mint(t, e.idp, e.claims("lic-viewers"))
	_, err = e.admin.GetLicense(bearer(t, viewer), &seatdv1.GetLicenseRequest{LicenseId: e.license})
	require.NoError(t, err)
	_, err = e.admin.DeleteLicense(bearer(t, viewer), &seatdv1.DeleteLicenseRequest{LicenseId: e.license})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "a viewer may not delete")
	_, err = e.admin.ListLicenses(bearer(t, admin), &seatdv1.ListLicensesRequest{TenantId: server.DefaultTenantID})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "another tenant")

	wrongAudience := e.claims("lic-admins")
	wrongAudience.Audience = jwt.ClaimStrings{"some-other-app"}
	expired := e.claims("lic-admins")
	expired.ExpiresAt = jwt.NewNumericDate(e.clock.Now().Add(-time.Second))
	otherIssuer := e.claims("lic-admins")
	otherIssuer.Issuer = other.Issuer()
	tampered := tamper(t, admin)

	for name, c := range map[string]struct {
		token  string
		code   codes.Code
		http   int
		reason string
	}{
		"another issuer":                 {mint(t, other, otherIssuer), codes.Unauthenticated, 401, server.ReasonTokenIssuerUnknown},
		"signed by another issuer's key": {mint(t, other, e.claims("lic-admins")), codes.Unauthenticated, 401, server.ReasonTokenInvalid},
		"wrong audience":                 {mint(t, e.idp, wrongAudience), codes.Unauthenticated, 401, server.ReasonTokenAudience},
		"expired":                        {mint(t, e.idp, expired), codes.Unauthenticated, 401, server.ReasonTokenExpired},
		"tampered":                       {tampered, codes.Unauthenticated, 401, server.ReasonTokenInvalid},
		"no mapped role":                 {mint(t, e.idp, e.claims("staff")), codes.PermissionDenied, 403, server.ReasonRoleNotMapped},
		"no groups":                      {mint(t, e.idp, e.claims()), codes.PermissionDenied, 403, server.ReasonRoleNotMapped},
	} {
		_, err := e.admin.GetLicense(bearer(t, c.token), &seatdv1.GetLicenseRequest{LicenseId: e.license})
		require.Equal(t, c.code, status.Code(err), "gRPC %s: %v", name, err)
		require.Equal(t, c.reason, reasonOf(err), "gRPC %s", name)
		code, reason := e.rest(t, http.MethodGet, "/v1/admin/licenses/"+e.license, c.token)
		require.Equal(t, c.http, code, "REST %s", name)
		require.Equal(t, c.reason, reason, "REST %s", name)
	}
}

// tamper changes a signed token's payload (the groups) and keeps its
// signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	payload = []byte(strings.Replace(string(payload), "ada@acme.example", "eve@acme.example", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// TestTokenExpiryAndRefresh: tokens from the IdP's own code flow work
// until they expire (TOKEN_EXPIRED), and those the refresh grant brings
// work again.
func TestTokenExpiryAndRefresh(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idp.AccessTTL = 2 * time.Minute
	e.idp.QueueUser(&mockoidc.MockUser{Subject: "u-77", Email: "grace@acme.example", Groups: []string{"lic-admins"}})
	conf := &oauth2.Config{
		ClientID: e.idp.ClientID, ClientSecret: e.idp.ClientSecret, RedirectURL: "http://127.0.0.1:1/cb",
		Endpoint: oauth2.Endpoint{AuthURL: e.idp.AuthorizationEndpoint(), TokenURL: e.idp.TokenEndpoint()},
		Scopes:   []string{"openid", "email", "groups"},
	}
	verifier := oauth2.GenerateVerifier()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	require.NoError(t, err)
	_ = resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	tok, err := conf.Exchange(t.Context(), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	idToken, _ := tok.Extra("id_token").(string)
	require.NotEmpty(t, idToken)

	// The client's audience here is the IdP's client id (the ID token's aud).
	_, err = e.admin.ListLicenses(bearer(t, idToken), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)

	e.clock.Advance(3 * time.Minute)
	e.idp.FastForward(3 * time.Minute)
	_, err = e.admin.ListLicenses(bearer(t, idToken), &seatdv1.ListLicensesRequest{})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	require.Equal(t, server.ReasonTokenExpired, reasonOf(err))

	refreshed, err := conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
	require.NoError(t, err)
	fresh, _ := refreshed.Extra("id_token").(string)
	require.NotEmpty(t, fresh)
	require.NotEqual(t, idToken, fresh)
	_, err = e.admin.ListLicenses(bearer(t, fresh), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
}

// TestAuditNamesThePerson: an admin action under an OIDC token is audited
// with the person's subject and email.
func TestAuditNamesThePerson(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := mint(t, e.idp, e.claims("lic-admins"))
	_, err := e.admin.RevokeApiKey(bearer(t, token), &seatdv1.RevokeApiKeyRequest{ApiKeyId: "key_nope"})
	require.Equal(t, codes.NotFound, status.Code(err))
	made, err := e.admin.CreateApiKey(bearer(t, token), &seatdv1.CreateApiKeyRequest{Name: "ci", Role: "viewer"})
	require.NoError(t, err)
	audit, err := e.admin.ListAuditEvents(bearer(t, token), &seatdv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	var found bool
	for _, a := range audit.GetAuditEvents() {
		if a.GetResourceId() == made.GetApiKey().GetId() {
			found = true
			require.Equal(t, "user:ada@acme.example", a.GetActor())
			require.Equal(t, "u-1234", a.GetDetails()["actor.subject"])
			require.Equal(t, "ada@acme.example", a.GetDetails()["actor.email"])
			require.Equal(t, "acme-idp", a.GetDetails()["actor.issuer"])
		}
	}
	require.True(t, found, "the key's creation is audited: %v", audit.GetAuditEvents())
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

// TestOperatorIssuerAndASecondTenantIssuer: an issuer configured for the
// operator makes its mapped people the operator (tenants, any tenant's
// licenses); a second issuer of the same tenant works beside the first.
func TestOperatorIssuerAndASecondTenantIssuer(t *testing.T) {
	t.Parallel()
	ops, second := newIdP(t), newIdP(t)
	e := newEnv(t, fmt.Sprintf(`
  - name: ops
    issuer: %s
    operator: true
    audience: seatd-ops
    roles: {seatd-operators: operator}
  - name: acme-second
    issuer: %s
    tenant: acme
    audience: seatd-second
    groups_claim: realm_access.roles
    roles: {viewers: viewer}
`, ops.Issuer(), second.Issuer()))

	op := e.claims("seatd-operators")
	op.Issuer, op.Audience = ops.Issuer(), jwt.ClaimStrings{"seatd-ops"}
	opToken := mint(t, ops, op)
	_, err := e.admin.CreateTenant(bearer(t, opToken), &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "globex"}})
	require.NoError(t, err, "the operator's issuer: tenants")
	got, err := e.admin.GetLicense(bearer(t, opToken), &seatdv1.GetLicenseRequest{LicenseId: e.license, TenantId: "acme"})
	require.NoError(t, err, "and any tenant's licenses")
	require.Equal(t, e.license, got.GetLicense().GetId())
	notOp := e.claims("acme-admins")
	notOp.Issuer, notOp.Audience = ops.Issuer(), jwt.ClaimStrings{"seatd-ops"}
	_, err = e.admin.ListTenants(bearer(t, mint(t, ops, notOp)), &seatdv1.ListTenantsRequest{})
	require.Equal(t, server.ReasonRoleNotMapped, reasonOf(err))

	// Keycloak-style realm roles, in a nested claim.
	type realm struct {
		claims
		RealmAccess map[string][]string `json:"realm_access"`
	}
	v := e.claims()
	v.Issuer, v.Audience = second.Issuer(), jwt.ClaimStrings{"seatd-second"}
	tok, err := second.Keypair.SignJWT(realm{claims: v, RealmAccess: map[string][]string{"roles": {"viewers"}}})
	require.NoError(t, err)
	_, err = e.admin.GetLicense(bearer(t, tok), &seatdv1.GetLicenseRequest{LicenseId: e.license})
	require.NoError(t, err, "the second issuer of acme, its viewer")
	_, err = e.admin.RevokeLease(bearer(t, tok), &seatdv1.RevokeLeaseRequest{LeaseId: "x"})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "a viewer may not revoke")
}

// browserish carries cookies by hand through the console's sign-in, as a
// browser would, against the gateway's handler and the IdP.
type browserish struct {
	t       *testing.T
	e       *env
	cookies map[string]string
}

func (b *browserish) do(method, target, csrf string) *httptest.ResponseRecorder {
	b.t.Helper()
	req := httptest.NewRequestWithContext(b.t.Context(), method, target, nil)
	for name, value := range b.cookies {
		req.AddCookie(&http.Cookie{Name: name, Value: value})
	}
	if csrf != "" {
		req.Header.Set(sso.CSRFHeader, csrf)
	}
	rec := httptest.NewRecorder()
	b.e.http.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	return rec
}

// signIn runs the code flow: seatd's login route, the IdP's authorize
// endpoint, seatd's callback.
func (b *browserish) signIn() {
	b.t.Helper()
	login := b.do(http.MethodGet, "/ui/auth/login?issuer=acme-idp", "")
	require.Equal(b.t, http.StatusSeeOther, login.Code)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(login.Header().Get("Location"))
	require.NoError(b.t, err)
	_ = resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(b.t, err)
	require.Equal(b.t, sso.CallbackPath, back.Path)
	done := b.do(http.MethodGet, back.RequestURI(), "")
	require.Equal(b.t, http.StatusSeeOther, done.Code)
	require.Equal(b.t, "/ui/", done.Header().Get("Location"), "signed in: %s", done.Header().Get("Location"))
	require.NotEmpty(b.t, b.cookies[sso.SessionCookie])
}

func (b *browserish) csrf() string {
	b.t.Helper()
	var s struct {
		SignedIn  bool   `json:"signedIn"`
		CSRFToken string `json:"csrfToken"`
		Role      string `json:"role"`
	}
	require.NoError(b.t, json.Unmarshal(b.do(http.MethodGet, "/ui/auth/session", "").Body.Bytes(), &s))
	require.True(b.t, s.SignedIn)
	return s.CSRFToken
}

// TestConsoleSessionRenewal: a console session outlives its ID token by
// the IdP's refresh grant, and the person's groups are mapped again at
// each renewal: a person moved to a viewer group loses the admin's
// rights, one taken out of every mapped group is refused.
func TestConsoleSessionRenewal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idp.AccessTTL = 2 * time.Minute
	person := &mockoidc.MockUser{Subject: "u-9", Email: "lin@acme.example", Groups: []string{"lic-admins"}}
	e.idp.QueueUser(person)
	b := &browserish{t: t, e: e, cookies: map[string]string{}}
	b.signIn()
	licenses := "/v1/admin/licenses/" + e.license
	require.Equal(t, http.StatusOK, b.do(http.MethodGet, licenses, "").Code)

	later := func() {
		e.clock.Advance(3 * time.Minute)
		e.idp.FastForward(3 * time.Minute)
	}
	later()
	first := b.cookies[sso.SessionCookie]
	require.Equal(t, http.StatusOK, b.do(http.MethodGet, licenses, "").Code, "renewed by the refresh grant")
	require.NotEqual(t, first, b.cookies[sso.SessionCookie], "the renewed session's cookie is set")
	// An old cookie past its recheck is not taken as a bearer value.
	_, err := e.admin.GetLicense(bearer(t, first), &seatdv1.GetLicenseRequest{LicenseId: e.license})
	require.Equal(t, server.ReasonSessionExpired, reasonOf(err))

	person.Groups = []string{"lic-viewers"}
	later()
	rec := b.do(http.MethodPatch, licenses+"?updateMask=name", b.csrf())
	require.Equal(t, http.StatusForbidden, rec.Code, rec.Body.String())
	require.Equal(t, server.ReasonPermissionDenied, restReason(rec.Body.Bytes()), "a viewer now")
	require.Equal(t, http.StatusOK, b.do(http.MethodGet, licenses, "").Code)

	person.Groups = []string{"marketing"}
	later()
	rec = b.do(http.MethodGet, licenses, "")
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Equal(t, server.ReasonRoleNotMapped, restReason(rec.Body.Bytes()))
}
