package sso

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/seatd/seatd/server"
)

// The console's sign-in, under /ui/auth/ (the console's own path, so its
// CSP and cookies stay with it):
//
//	GET  /ui/auth/session          who is signed in, the CSRF token, the issuers to sign in with
//	GET  /ui/auth/login?issuer=N   to the IdP (authorization code flow, PKCE S256, state, nonce)
//	GET  /ui/auth/callback         back from the IdP: the code exchanged, the ID token checked, the session set
//	POST /ui/auth/logout           the session cleared (X-CSRF-Token required)
//
// The session cookie is HttpOnly, Secure, SameSite=Strict, Path=/; the
// REST API takes it in place of a bearer header (Authenticate), and
// every call but GET and HEAD must carry the session's CSRF token in
// X-CSRF-Token.
const (
	SessionCookie = "seatd_session"
	loginCookie   = "seatd_login"
	CSRFHeader    = "X-CSRF-Token"
	authPrefix    = "/ui/auth/"
	loginLifetime = 10 * time.Minute // to come back from the IdP
)

// Routes registers the sign-in routes on mux.
func (v *Verifier) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+authPrefix+"session", v.serveSession)
	mux.HandleFunc("GET "+authPrefix+"login", v.serveLogin)
	mux.HandleFunc("GET "+CallbackPath, v.serveCallback)
	mux.HandleFunc("POST "+authPrefix+"logout", v.serveLogout)
}

func (is *issuer) oauth2Config(p interface{ Endpoint() oauth2.Endpoint }) *oauth2.Config {
	return &oauth2.Config{
		ClientID: is.ClientID, ClientSecret: is.clientSecret, Endpoint: p.Endpoint(),
		RedirectURL: is.v.cfg.PublicURL + CallbackPath, Scopes: is.Scopes,
	}
}

func noStore(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	noStore(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// signInFailed sends the browser back to the console with a reason it
// shows as text (#/signin?error=REASON).
func signInFailed(w http.ResponseWriter, r *http.Request, reason string) {
	noStore(w)
	http.Redirect(w, r, "/ui/?signin_error="+url.QueryEscape(reason), http.StatusSeeOther)
}

type issuerChoice struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// serveSession tells the console who is signed in (and the CSRF token it
// must send), or which issuers it may offer.
func (v *Verifier) serveSession(w http.ResponseWriter, r *http.Request) {
	out := struct {
		SignedIn  bool           `json:"signedIn"`
		Issuer    string         `json:"issuer,omitempty"`
		Subject   string         `json:"subject,omitempty"`
		Email     string         `json:"email,omitempty"`
		Tenant    string         `json:"tenant,omitempty"`
		Role      server.Role    `json:"role,omitempty"`
		Expires   string         `json:"expires,omitempty"`
		CSRFToken string         `json:"csrfToken,omitempty"`
		Issuers   []issuerChoice `json:"issuers"`
		Reason    string         `json:"reason,omitempty"`
	}{Issuers: []issuerChoice{}}
	for _, is := range v.cfg.Issuers {
		if is.ClientID != "" {
			out.Issuers = append(out.Issuers, issuerChoice{Name: is.Name, Label: is.Label})
		}
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		s, err := v.sessions.open(c.Value)
		if err == nil {
			s, err = v.renewIfDue(w, r, s)
		}
		if err == nil {
			out.SignedIn, out.Issuer, out.Subject, out.Email, out.Tenant, out.Role = true, s.Issuer, s.Subject, s.Email, s.Tenant, s.Role
			out.Expires, out.CSRFToken = time.Unix(s.Expires, 0).UTC().Format(time.RFC3339), s.CSRF
		} else {
			out.Reason = server.ErrorReason(err)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (v *Verifier) serveLogin(w http.ResponseWriter, r *http.Request) {
	is := v.byName[r.URL.Query().Get("issuer")]
	if is == nil || is.ClientID == "" {
		signInFailed(w, r, server.ReasonTokenIssuerUnknown)
		return
	}
	p, err := is.discover(r.Context())
	if err != nil {
		signInFailed(w, r, server.ErrorReason(err))
		return
	}
	login := session{
		Kind: "login", Issuer: is.Name, State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(),
		Expires: v.now().Add(loginLifetime).Unix(),
	}
	http.SetCookie(w, &http.Cookie{
		Name: loginCookie, Value: v.sessions.seal(login), Path: authPrefix, MaxAge: int(loginLifetime / time.Second),
		// Lax: the IdP's redirect back is a cross-site navigation, which
		// a Strict cookie would not come with.
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode,
	})
	noStore(w)
	http.Redirect(w, r, is.oauth2Config(p).AuthCodeURL(login.State,
		oauth2.S256ChallengeOption(login.Verifier), oauthNonce(login.Nonce)), http.StatusSeeOther)
}

func oauthNonce(n string) oauth2.AuthCodeOption { return oauth2.SetAuthURLParam("nonce", n) }

func (v *Verifier) serveCallback(w http.ResponseWriter, r *http.Request) {
	spent := &http.Cookie{Name: loginCookie, Path: authPrefix, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
	c, err := r.Cookie(loginCookie)
	if err != nil {
		signInFailed(w, r, server.ReasonSessionExpired)
		return
	}
	http.SetCookie(w, spent) // one use
	login, err := v.sessions.unseal(c.Value, "login")
	if err != nil {
		signInFailed(w, r, server.ErrorReason(err))
		return
	}
	q := r.URL.Query()
	if q.Get("error") != "" { // the IdP refused (the person cancelled, ...)
		signInFailed(w, r, "IDP_"+sanitizeReason(q.Get("error")))
		return
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(login.State)) != 1 {
		signInFailed(w, r, server.ReasonCSRFTokenInvalid)
		return
	}
	is := v.byName[login.Issuer]
	if is == nil {
		signInFailed(w, r, server.ReasonTokenIssuerUnknown)
		return
	}
	p, err := is.discover(r.Context())
	if err != nil {
		signInFailed(w, r, server.ErrorReason(err))
		return
	}
	ctx := oauth2ClientContext(r, v.client)
	tok, err := is.oauth2Config(p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(login.Verifier))
	if err != nil {
		v.log.WarnContext(r.Context(), "OIDC code exchange failed", "issuer", is.Name, "err", err)
		signInFailed(w, r, server.ReasonIdentityUnavailable)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		signInFailed(w, r, server.ReasonTokenInvalid)
		return
	}
	// The console's ID token is for its client id, whatever the API's
	// audience is.
	who, idt, err := is.verify(r.Context(), raw, is.ClientID, login.Nonce)
	if err != nil {
		signInFailed(w, r, server.ErrorReason(err))
		return
	}
	s := session{
		Kind: "session", Issuer: is.Name, Subject: who.Person.Subject, Email: who.Person.Email,
		Tenant: who.TenantID, Role: who.Role, CSRF: randomToken(),
		Expires: v.now().Add(v.sessions.lifetime).Unix(),
		Refresh: tok.RefreshToken, Recheck: idt.Expiry.Unix(),
	}
	v.setSession(w, s)
	v.log.InfoContext(r.Context(), "console sign-in", "issuer", is.Name, "subject", s.Subject, "email", s.Email, "role", s.Role, "tenant", s.Tenant)
	noStore(w)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (v *Verifier) serveLogout(w http.ResponseWriter, r *http.Request) {
	if _, err := v.Authenticate(w, r); err != nil {
		writeJSON(w, http.StatusForbidden, map[string]string{"reason": server.ErrorReason(err)})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	writeJSON(w, http.StatusOK, map[string]bool{"signedOut": true})
}

var errCSRF = server.Errorf(server.EPERMISSION, server.ReasonCSRFTokenInvalid,
	"this call changes state: send the console session's CSRF token in X-CSRF-Token")

// Authenticate reads the console session of a REST call that has no
// Authorization header: the bearer value to send in its place, "" when it
// has no session cookie. A call that is not GET or HEAD must carry the
// session's CSRF token (X-CSRF-Token) and must not come from another
// site (Sec-Fetch-Site, where the browser sends it). A session past its
// ID token's expiry is renewed first (renewIfDue), its new cookie set on
// w.
func (v *Verifier) Authenticate(w http.ResponseWriter, r *http.Request) (string, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return "", nil
	}
	s, err := v.sessions.open(c.Value)
	if err != nil {
		return "", err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin":
		default:
			return "", errCSRF
		}
		got := r.Header.Get(CSRFHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) != 1 {
			return "", errCSRF
		}
	}
	if s.Recheck == 0 || v.now().Before(time.Unix(s.Recheck, 0)) {
		return c.Value, nil
	}
	s, err = v.renewIfDue(w, r, s)
	if err != nil {
		return "", err
	}
	return v.sessions.seal(s), nil
}

func (v *Verifier) setSession(w http.ResponseWriter, s session) {
	maxAge := int(time.Unix(s.Expires, 0).Sub(v.now()) / time.Second)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: v.sessions.seal(s), Path: "/", MaxAge: max(maxAge, 1),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	})
}

var errRenewal = server.Errorf(server.EUNAUTHENTICATED, server.ReasonSessionExpired,
	"the identity provider did not renew the console session: sign in again")

// renewIfDue renews a session whose ID token has expired with its refresh
// token: the new ID token is checked as at sign-in and the person's
// groups mapped again (a person taken out of every mapped group is
// refused ROLE_NOT_MAPPED); the session keeps its CSRF token and its end.
// The renewed cookie is set on w.
func (v *Verifier) renewIfDue(w http.ResponseWriter, r *http.Request, s session) (session, error) {
	if s.Recheck == 0 || v.now().Before(time.Unix(s.Recheck, 0)) {
		return s, nil
	}
	is := v.byName[s.Issuer]
	if is == nil || s.Refresh == "" {
		return session{}, errRenewal
	}
	p, err := is.discover(r.Context())
	if err != nil {
		return session{}, err
	}
	old := &oauth2.Token{RefreshToken: s.Refresh, Expiry: v.now().Add(-time.Minute)}
	tok, err := is.oauth2Config(p).TokenSource(oauth2ClientContext(r, v.client), old).Token()
	if err != nil {
		v.log.InfoContext(r.Context(), "console session not renewed", "issuer", is.Name, "subject", s.Subject, "err", err)
		return session{}, errRenewal
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return session{}, errRenewal
	}
	who, idt, err := is.verify(r.Context(), raw, is.ClientID, "")
	if err != nil {
		return session{}, err
	}
	if who.Person.Subject != s.Subject {
		return session{}, errRenewal
	}
	s.Email, s.Role, s.Recheck = who.Person.Email, who.Role, idt.Expiry.Unix()
	if tok.RefreshToken != "" {
		s.Refresh = tok.RefreshToken
	}
	v.setSession(w, s)
	return s, nil
}

// sanitizeReason keeps an IdP's error code to letters, digits and _,
// upper-cased, at most 40 (the console shows it as text anyway).
func sanitizeReason(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < 40; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			out = append(out, c-'a'+'A')
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			out = append(out, c)
		}
	}
	return string(out)
}
