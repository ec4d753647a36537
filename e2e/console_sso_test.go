package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/require"
)

// ssoIdP starts a real OIDC provider in this process, on loopback, with a
// key of its own (mockoidc's default key is public).
func ssoIdP(t *testing.T) *mockoidc.MockOIDC {
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

// TestConsoleSingleSignOn signs in through the console in headless
// Chromium with a real OIDC provider (authorization code flow with PKCE),
// sees the tenant's licenses under the session, is refused a call that
// changes state without the session's CSRF token, signs out; then a
// person with no mapped role is sent back to the sign-in page with the
// reason, and a viewer is offered only what a viewer may do.
func TestConsoleSingleSignOn(t *testing.T) {
	t.Parallel()
	idp := ssoIdP(t)
	addr := freeAddr(t) // the redirect URI must be known before seatd starts
	dir := t.TempDir()
	secret := filepath.Join(dir, "client.secret")
	require.NoError(t, os.WriteFile(secret, []byte(idp.ClientSecret), 0o600))
	conf := filepath.Join(dir, "sso.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`
public_url: http://%s
issuers:
  - name: acme-idp
    label: Acme IdP
    issuer: %s
    tenant: acme
    client_id: %s
    client_secret_file: %s
    scopes: [openid, email, groups]
    roles:
      lic-admins: admin
      lic-viewers: viewer
`, addr, idp.Issuer(), idp.ClientID, secret)), 0o600))
	p := start(t, options{args: []string{"--http-addr", addr, "--sso-config", conf}})
	p.do(t, "POST", "/v1/admin/tenants", p.OperatorKey, map[string]any{"id": "acme"}).requireCode(t, http.StatusOK)
	p.do(t, "POST", "/v1/admin/licenses?tenantId=acme", p.OperatorKey, map[string]any{"name": "ACME CAD", "seats": 3, "leaseTtl": "300s"}).
		requireCode(t, http.StatusOK)
	p.do(t, "POST", "/v1/admin/licenses", p.OperatorKey, map[string]any{"name": "Default tenant's", "seats": 1, "leaseTtl": "300s"}).
		requireCode(t, http.StatusOK)

	idp.QueueUser(&mockoidc.MockUser{Subject: "u-ada", Email: "ada@acme.example", Groups: []string{"lic-admins"}})
	b := newBrowser(t, 1280, 860)
	b.allow("/v1/admin/tenants", http.StatusForbidden) // can.js: is this session the operator's?
	b.allow("/v1/admin/cleanup", http.StatusForbidden) // the cleanup status is the operator's
	b.run("open the console", chromedp.Navigate(p.url("/ui/")), chromedp.WaitVisible(chromedp.CSS(`#sso-signin a[data-issuer="acme-idp"]`)))
	b.requireLabelled("sign-in with single sign-on")
	b.screenshot("signin-sso")
	// To the IdP and back (redirects): done when the signed-in shell shows.
	b.run("sign in with the IdP", chromedp.Click(chromedp.CSS(`#sso-signin a[data-issuer="acme-idp"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#signout`)))
	b.waitFor("the tenant's license", `document.body.innerText.includes('ACME CAD')`)
	require.NotContains(t, b.text(), "Default tenant's", "the session works in the issuer's tenant")
	require.Contains(t, eval[string](b, `document.getElementById('signout').textContent`), "ada@acme.example")
	b.waitFor("the cleanup status refused", `document.querySelector('#cleanup .error') !== null`)
	require.Contains(t, eval[string](b, `document.getElementById('cleanup').innerText`), "PERMISSION_DENIED")
	b.screenshot("overview-sso")

	// The session cookie is not readable by the page.
	require.Empty(t, eval[string](b, `document.cookie`))
	// A call that changes state without the CSRF token is refused.
	b.allow("/v1/admin/licenses", http.StatusForbidden)
	got := evalAsync[string](b, `(async () => {
		const r = await fetch('/v1/admin/licenses', {method: 'POST', credentials: 'same-origin',
			headers: {'Content-Type': 'application/json'}, body: JSON.stringify({seats: 1, leaseTtl: '60s'})});
		const body = await r.json();
		return r.status + ' ' + body.details[0].reason;
	})()`)
	require.Equal(t, "403 CSRF_TOKEN_INVALID", got)

	// Sign out: the API no longer takes the browser's cookie.
	b.run("sign out", chromedp.Click(chromedp.CSS(`#signout`)))
	b.waitFor("the sign-in page", `document.querySelector('#signin') !== null`)
	b.allow("/v1/admin/licenses", http.StatusUnauthorized)
	status := evalAsync[int](b, `fetch('/v1/admin/licenses', {credentials: 'same-origin'}).then((r) => r.status)`)
	require.Equal(t, http.StatusUnauthorized, status)

	// A person none of whose groups has a role: back at sign-in, told why.
	idp.QueueUser(&mockoidc.MockUser{Subject: "u-bob", Email: "bob@acme.example", Groups: []string{"marketing"}})
	b.run("sign in without a role", chromedp.Click(chromedp.CSS(`#sso-signin a[data-issuer="acme-idp"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#signin-status .error`)))
	b.waitFor("the refusal", `document.body.innerText.includes('ROLE_NOT_MAPPED')`)
	b.screenshot("signin-refused")

	// A viewer sees the tenant's licenses and is offered nothing it may
	// not do (can.js): no new license, no audit log.
	idp.QueueUser(&mockoidc.MockUser{Subject: "u-vic", Email: "vic@acme.example", Groups: []string{"lic-viewers"}})
	b.run("sign in as a viewer", chromedp.Click(chromedp.CSS(`#sso-signin a[data-issuer="acme-idp"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#signout`)))
	b.waitFor("the tenant's license", `document.body.innerText.includes('ACME CAD')`)
	require.Contains(t, eval[string](b, `document.getElementById('signout').textContent`), "(viewer)")
	require.False(t, eval[bool](b, `document.getElementById('license-new') !== null`), "a viewer is offered a new license")
	require.False(t, eval[bool](b, `[...document.querySelectorAll('nav a[data-action="audit.read"]')].some((a) => !a.parentElement.hidden)`),
		"a viewer is offered the audit log")
	require.False(t, eval[bool](b, `[...document.querySelectorAll('nav a[data-action="webhook.read"]')].some((a) => !a.parentElement.hidden)`),
		"a viewer is offered webhooks (an admin's)")
	b.screenshot("overview-viewer")
	b.requireClean()

	// The sign-in page on a phone: the issuer's button fits (a subtest:
	// screenshots of its own, beside the desktop ones).
	t.Run("375px", func(t *testing.T) {
		phone := newBrowser(t, 375, 740)
		phone.run("open the console at 375 px", chromedp.Navigate(p.url("/ui/")), chromedp.WaitVisible(chromedp.CSS(`#sso-signin a[data-issuer="acme-idp"]`)))
		require.LessOrEqual(t, eval[int](phone, `document.documentElement.scrollWidth`), 375, "no sideways scrolling")
		phone.requireLabelled("sign-in at 375 px")
		phone.screenshot("signin-sso")
		phone.requireClean()
	})
}

// evalAsync is eval of an expression whose value is a promise.
func evalAsync[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\npage text:\n%s", expr, err, b.text())
	}
	return v
}
