// Package sso is seatd's single sign-on: OIDC ID and access tokens as
// bearer credentials of the admin API (gRPC and REST), each issuer mapped
// to a tenant (or to the operator) and its people's groups to roles; and
// the console's sign-in (authorization code flow with PKCE) with its
// sealed, HttpOnly session cookie and CSRF token. Tokens are checked by
// github.com/coreos/go-oidc (discovery, JWKS, signature, expiry, issuer);
// the code flow is golang.org/x/oauth2's.
//
// The configuration is a YAML file (seatd --sso-config); see
// docs/guides/single-sign-on.md.
package sso

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/seatd/seatd/server"
)

// Config is the --sso-config file.
type Config struct {
	// Issuers are the identity providers seatd believes, one or more per
	// tenant and at most a few for the operator.
	Issuers []Issuer `json:"issuers"`
	// PublicURL is where browsers reach seatd (https://seatd.example.com):
	// the console's redirect URI is PublicURL + CallbackPath. Required
	// when an issuer has a client_id (console sign-in).
	PublicURL string `json:"public_url,omitempty"`
	// SessionKeyFile holds the secret that seals console sessions (32
	// bytes or more, any text): every instance behind one address must
	// have the same. Unset: a key derived from the operator key.
	SessionKeyFile string `json:"session_key_file,omitempty"`
}

// Issuer is one OIDC identity provider.
type Issuer struct {
	// Name is seatd's name for it (lowercase letters, digits, -): in the
	// audit log (actor.issuer) and the console's sign-in button.
	Name string `json:"name"`
	// Label is the console's button text (default: Name).
	Label string `json:"label,omitempty"`
	// URL is the issuer identifier: exactly the tokens' iss claim, and
	// where /.well-known/openid-configuration is found.
	URL string `json:"issuer"`
	// Tenant is the tenant its people work in; Operator makes them the
	// operator instead (one of the two).
	Tenant   string `json:"tenant,omitempty"`
	Operator bool   `json:"operator,omitempty"`
	// Audience is what a bearer token's aud must contain (the client id
	// or the API identifier the IdP puts in its access tokens).
	Audience string `json:"audience"`
	// ClientID and ClientSecretFile are the console's OIDC client (its ID
	// tokens' aud is ClientID). No ClientID: no console sign-in through
	// this issuer, bearer tokens only. A public client (PKCE alone) has no
	// secret.
	ClientID         string `json:"client_id,omitempty"`
	ClientSecretFile string `json:"client_secret_file,omitempty"`
	// Scopes asked at sign-in (default openid, email, profile).
	Scopes []string `json:"scopes,omitempty"`
	// GroupsClaim names the claim that lists the person's groups (default
	// "groups"; a dotted path reaches into objects: realm_access.roles).
	GroupsClaim string `json:"groups_claim,omitempty"`
	// EmailClaim names the person's email (default "email"; Entra ID:
	// preferred_username or upn).
	EmailClaim string `json:"email_claim,omitempty"`
	// Roles maps a group to a role: viewer, manager or admin for a
	// tenant's issuer, operator for the operator's. A person in several
	// mapped groups gets the highest; in none, is refused
	// (ROLE_NOT_MAPPED).
	Roles map[string]server.Role `json:"roles"`

	clientSecret string
}

// CallbackPath is where the IdP sends the browser back after sign-in.
const CallbackPath = "/ui/auth/callback"

var nameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// LoadConfig reads and checks the file at path; an error names the field.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("sso config: %w", err)
	}
	return ParseConfig(raw)
}

// ParseConfig reads a configuration (YAML or JSON; unknown fields are
// refused) and checks it, reading client secrets from their files.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(bytes.TrimSpace(raw), &c); err != nil {
		return Config{}, fmt.Errorf("sso config: %w", err)
	}
	return c, c.check()
}

func (c *Config) check() error {
	if len(c.Issuers) == 0 {
		return errors.New("sso config: issuers: at least one")
	}
	seen := map[string]bool{}
	console := false
	for i := range c.Issuers {
		is := &c.Issuers[i]
		field := fmt.Sprintf("issuers[%d]", i)
		if !nameRule.MatchString(is.Name) {
			return fmt.Errorf("sso config: %s.name: %q: lowercase letters, digits and -, at most 40", field, is.Name)
		}
		if seen["name:"+is.Name] {
			return fmt.Errorf("sso config: %s.name: %q used twice", field, is.Name)
		}
		seen["name:"+is.Name] = true
		if err := checkURL(is.URL); err != nil {
			return fmt.Errorf("sso config: %s.issuer: %w", field, err)
		}
		// One iss, one mapping: two entries for one issuer would make a
		// token's tenant depend on the order.
		if seen["iss:"+is.URL] {
			return fmt.Errorf("sso config: %s.issuer: %q configured twice", field, is.URL)
		}
		seen["iss:"+is.URL] = true
		switch {
		case is.Operator && is.Tenant != "":
			return fmt.Errorf("sso config: %s: tenant and operator: one or the other", field)
		case !is.Operator && is.Tenant == "":
			return fmt.Errorf("sso config: %s.tenant: required (or operator: true)", field)
		}
		if is.Audience == "" {
			is.Audience = is.ClientID
		}
		if is.Audience == "" {
			return fmt.Errorf("sso config: %s.audience: required", field)
		}
		if len(is.Roles) == 0 {
			return fmt.Errorf("sso config: %s.roles: map at least one group to a role", field)
		}
		for group, role := range is.Roles {
			switch {
			case group == "":
				return fmt.Errorf("sso config: %s.roles: an empty group", field)
			case is.Operator && role != server.RoleOperator:
				return fmt.Errorf("sso config: %s.roles[%q]: %q: the operator's issuer maps groups to operator", field, group, role)
			case !is.Operator && !slices.Contains(server.TenantRoles, role):
				return fmt.Errorf("sso config: %s.roles[%q]: %q: viewer, manager or admin", field, group, role)
			}
		}
		is.Label = cmp.Or(is.Label, is.Name)
		is.GroupsClaim = cmp.Or(is.GroupsClaim, "groups")
		is.EmailClaim = cmp.Or(is.EmailClaim, "email")
		if len(is.Scopes) == 0 {
			is.Scopes = []string{"openid", "email", "profile"}
		}
		if !slices.Contains(is.Scopes, "openid") {
			return fmt.Errorf("sso config: %s.scopes: must include openid", field)
		}
		if is.ClientSecretFile != "" {
			if is.ClientID == "" {
				return fmt.Errorf("sso config: %s.client_secret_file: without client_id", field)
			}
			b, err := os.ReadFile(is.ClientSecretFile)
			if err != nil {
				return fmt.Errorf("sso config: %s.client_secret_file: %w", field, err)
			}
			is.clientSecret = strings.TrimSpace(string(b))
			if is.clientSecret == "" {
				return fmt.Errorf("sso config: %s.client_secret_file: empty", field)
			}
		}
		console = console || is.ClientID != ""
	}
	if console {
		if err := checkURL(c.PublicURL); err != nil {
			return fmt.Errorf("sso config: public_url (needed for console sign-in): %w", err)
		}
		c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	}
	return nil
}

// checkURL accepts https, and http on a loopback host only (tests, a
// local IdP): tokens and sessions must not cross a network in clear.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: an absolute https URL without query", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			return nil
		}
	}
	return fmt.Errorf("%q: https (http only on a loopback address)", s)
}
