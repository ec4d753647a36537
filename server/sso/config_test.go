package sso

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

const goodIssuer = `
issuers:
  - name: acme
    issuer: https://login.acme.example
    tenant: acme
    audience: seatd
    roles: {admins: admin}
`

func TestConfigRefusesNamingTheField(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(goodIssuer))
	require.NoError(t, err)
	require.Equal(t, "groups", c.Issuers[0].GroupsClaim, "defaults")
	require.Equal(t, []string{"openid", "email", "profile"}, c.Issuers[0].Scopes)

	for want, doc := range map[string]string{
		"issuers: at least one":  `issuers: []`,
		"issuers[0].name":        `{issuers: [{name: "Acme!", issuer: "https://a.example", tenant: t, audience: a, roles: {g: admin}}]}`,
		"issuers[0].issuer":      `{issuers: [{name: a, issuer: "http://idp.example", tenant: t, audience: a, roles: {g: admin}}]}`,
		"one or the other":       `{issuers: [{name: a, issuer: "https://a.example", tenant: t, operator: true, audience: a, roles: {g: operator}}]}`,
		"issuers[0].tenant":      `{issuers: [{name: a, issuer: "https://a.example", audience: a, roles: {g: admin}}]}`,
		"issuers[0].audience":    `{issuers: [{name: a, issuer: "https://a.example", tenant: t, roles: {g: admin}}]}`,
		"issuers[0].roles":       `{issuers: [{name: a, issuer: "https://a.example", tenant: t, audience: a}]}`,
		`roles["g"]: "operator"`: `{issuers: [{name: a, issuer: "https://a.example", tenant: t, audience: a, roles: {g: operator}}]}`,
		`roles["g"]: "admin"`:    `{issuers: [{name: a, issuer: "https://a.example", operator: true, audience: a, roles: {g: admin}}]}`,
		"configured twice": `{issuers: [{name: a, issuer: "https://a.example", tenant: t, audience: a, roles: {g: admin}},
			{name: b, issuer: "https://a.example", tenant: u, audience: a, roles: {g: admin}}]}`,
		"public_url":          `{issuers: [{name: a, issuer: "https://a.example", tenant: t, client_id: c, roles: {g: admin}}]}`,
		"unknown field":       `{issuers: [{name: a, issuer: "https://a.example", tenant: t, audience: a, roles: {g: admin}, group_claim: x}]}`,
		"must include openid": `{issuers: [{name: a, issuer: "https://a.example", tenant: t, audience: a, roles: {g: admin}, scopes: [email]}]}`,
	} {
		_, err := ParseConfig([]byte(doc))
		require.ErrorContains(t, err, want, doc)
	}
	// http on loopback is allowed (a local IdP, tests).
	_, err = ParseConfig([]byte(`{issuers: [{name: a, issuer: "http://127.0.0.1:5556/dex", tenant: t, audience: a, roles: {g: viewer}}]}`))
	require.NoError(t, err)
}

func TestRoleOfGroups(t *testing.T) {
	t.Parallel()
	is := &issuer{Issuer: Issuer{GroupsClaim: "realm_access.roles", Roles: map[string]server.Role{
		"viewers": server.RoleViewer, "managers": server.RoleManager,
	}}}
	r, ok := is.roleOf(map[string]any{"realm_access": map[string]any{"roles": []any{"viewers", "managers", "x"}}})
	require.True(t, ok)
	require.Equal(t, server.RoleManager, r, "the highest of the person's roles")
	_, ok = is.roleOf(map[string]any{"realm_access": map[string]any{"roles": []any{"x"}}})
	require.False(t, ok)
	is.GroupsClaim = "groups"
	r, ok = is.roleOf(map[string]any{"groups": "viewers"})
	require.True(t, ok, "a single group as a string")
	require.Equal(t, server.RoleViewer, r)
}

// TestSessionChecks: a session cookie lets GET through, asks its CSRF
// token of anything else, refuses another site's request, and ends at its
// lifetime; a login cookie or a forged value is no session.
func TestSessionChecks(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	v, err := NewVerifier(Config{}, Options{SessionKey: []byte("0123456789abcdef0123"), SessionLifetime: time.Hour, Now: func() time.Time { return now }})
	require.NoError(t, err)
	s := session{Kind: "session", Issuer: "acme", Subject: "u1", Role: server.RoleViewer, Tenant: "acme", CSRF: "tok", Expires: now.Add(time.Hour).Unix()}
	cookie := v.sessions.seal(s)
	req := func(method, csrf, site, value string) *http.Request {
		r := httptest.NewRequest(method, "/v1/admin/licenses", nil)
		r.AddCookie(&http.Cookie{Name: SessionCookie, Value: value})
		if csrf != "" {
			r.Header.Set(CSRFHeader, csrf)
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		return r
	}
	got, err := v.Authenticate(httptest.NewRecorder(), req(http.MethodGet, "", "", cookie))
	require.NoError(t, err)
	require.Equal(t, cookie, got)
	who, ok, err := v.VerifyToken(t.Context(), got)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, server.RoleViewer, who.Role)
	require.Equal(t, "u1", who.Person.Subject)

	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodPost, "", "", cookie))
	require.Equal(t, server.ReasonCSRFTokenInvalid, server.ErrorReason(err))
	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodPost, "wrong", "", cookie))
	require.Equal(t, server.ReasonCSRFTokenInvalid, server.ErrorReason(err))
	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodPost, "tok", "cross-site", cookie))
	require.Equal(t, server.ReasonCSRFTokenInvalid, server.ErrorReason(err))
	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodPost, "tok", "same-origin", cookie))
	require.NoError(t, err)

	login := v.sessions.seal(session{Kind: "login", Expires: now.Add(time.Hour).Unix()})
	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodGet, "", "", login))
	require.Equal(t, server.ReasonUnauthenticated, server.ErrorReason(err), "a login cookie is no session")
	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodGet, "", "", cookie[:len(cookie)-2]+"AA"))
	require.Equal(t, server.ReasonUnauthenticated, server.ErrorReason(err), "a forged cookie")

	now = now.Add(time.Hour)
	_, err = v.Authenticate(httptest.NewRecorder(), req(http.MethodGet, "", "", cookie))
	require.Equal(t, server.ReasonSessionExpired, server.ErrorReason(err))

	got, err = v.Authenticate(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/admin/licenses", nil))
	require.NoError(t, err)
	require.Empty(t, got, "no cookie: no session")
}
