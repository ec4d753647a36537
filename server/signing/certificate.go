package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/seatd/seatd/server"
)

// IssuerName is the iss claim of every certificate.
const IssuerName = "seatd"

// Claims are a lease certificate's claims, exactly as
// AcquireSeatResponse.lease_certificate lists them, in this order.
type Claims struct {
	Issuer      string `json:"iss"`
	Subject     string `json:"sub"` // the lease id
	LeaseID     string `json:"lease_id"`
	TenantID    string `json:"tenant_id"`
	LicenseID   string `json:"license_id"`
	Fingerprint string `json:"fingerprint"`
	User        string `json:"user"`
	Hostname    string `json:"hostname"`
	// BoundTo names the claim that says whom the lease is for: BoundFingerprint,
	// or, when the license shares one lease per user or per hostname,
	// BoundUser or BoundHostname. A verifier compares that claim with its
	// own value, never with one the same answer carries.
	BoundTo string `json:"bound_to"`
	// LicenseKeySHA256 is LicenseKeyHash of the license's key: a client
	// knows the key it asked with, not the license id.
	LicenseKeySHA256 string `json:"license_key_sha256"`
	IssuedAt         int64  `json:"iat"` // Unix seconds
	Expiry           int64  `json:"exp"` // the lease's deadline, Unix seconds rounded down
	Borrowed         bool   `json:"borrowed"`
	Nonce            string `json:"nonce"` // the request's; "" when it sent none
	// For a lease of a feature grant only (omitted otherwise): the feature
	// and version first asked for, the grant's id, and its expiry (Unix
	// seconds; omitted when it has none). LicenseID stays the license's.
	Feature        string `json:"feature,omitempty"`
	Version        string `json:"version,omitempty"`
	GrantID        string `json:"grant_id,omitempty"`
	GrantExpiresAt int64  `json:"grant_expires_at,omitempty"`
	// GrantVersion is the highest version the grant covers (omitted: every
	// version). A lease handed back to the same client asking again may
	// have been first asked for at another version the grant covers, so
	// a client checks that this covers its version, not Version.
	GrantVersion string `json:"grant_version,omitempty"`
	// In locked mode only (Site; omitted otherwise), for a certificate
	// signed by the site key: the serial of the license file in force and
	// the file's id of the lease's license (the vendor's, License.ID in
	// the file), which a product checks against the file the vendor
	// signed.
	FileSerial    int64  `json:"file_serial,omitempty"`
	FileLicenseID string `json:"file_license_id,omitempty"`
}

// Binding is what a certificate says beyond its lease: the hash of the
// license key that opened it (LicenseKeyHash), the request's nonce, and
// for a lease of a feature grant the grant's expiry (zero: none) and
// version ("": every version).
type Binding struct {
	KeyHash        string
	Nonce          string
	GrantExpiresAt time.Time
	GrantVersion   string
}

// The values of Claims.BoundTo.
const (
	BoundFingerprint = "fingerprint"
	BoundUser        = "user"
	BoundHostname    = "hostname"
)

// BoundTo is whom l is for, as Claims.BoundTo says it: its dedupe key's
// kind (server.DedupeKey), the fingerprint when it has none.
func BoundTo(l server.Lease) string {
	switch {
	case strings.HasPrefix(l.DedupeKey, "user:"):
		return BoundUser
	case strings.HasPrefix(l.DedupeKey, "host:"):
		return BoundHostname
	default:
		return BoundFingerprint
	}
}

// LicenseKeyHash is the license_key_sha256 claim of a license key: its
// SHA-256, lowercase hex. The key is a random secret, so its hash in a
// certificate kept on disk tells nobody the key.
func LicenseKeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// LeaseClaims are the claims of l's certificate issued at now with b. The
// license_id claim is the license's, also for a lease of a grant
// (Lease.LicenseOf), whose grant the grant claims name.
func LeaseClaims(l server.Lease, b Binding, now time.Time) Claims {
	c := Claims{
		Issuer: IssuerName, Subject: l.ID, LeaseID: l.ID,
		TenantID: l.TenantID, LicenseID: l.LicenseOf(), Fingerprint: l.Fingerprint,
		User: l.User, Hostname: l.Hostname, BoundTo: BoundTo(l), LicenseKeySHA256: b.KeyHash,
		IssuedAt: now.Unix(), Expiry: l.ExpiresAt.Unix(),
		Borrowed: l.Borrowed, Nonce: b.Nonce,
	}
	if g := l.GrantID(); g != "" {
		c.Feature, c.Version, c.GrantID, c.GrantVersion = l.Feature, l.Version, g, b.GrantVersion
		if !b.GrantExpiresAt.IsZero() {
			c.GrantExpiresAt = b.GrantExpiresAt.Unix()
		}
	}
	return c
}

// keySigner signs with one opened key.
type keySigner struct {
	kid      string
	signer   jose.Signer
	returned jose.Signer // the same key, typ ReturnedType (returned.go)
}

func newKeySigner(kid string, priv ed25519.PrivateKey) (*keySigner, error) {
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return nil, fmt.Errorf("signer for key %s: %w", kid, err)
	}
	returned, err := newReturnedSigner(kid, priv)
	if err != nil {
		return nil, fmt.Errorf("signer for key %s: %w", kid, err)
	}
	return &keySigner{kid: kid, signer: signer, returned: returned}, nil
}

// sign returns the claims as a JWS compact token: header {alg EdDSA, kid,
// typ JWT}.
func (s *keySigner) sign(c Claims) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("certificate claims: %w", err)
	}
	jws, err := s.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign certificate with key %s: %w", s.kid, err)
	}
	return jws.CompactSerialize()
}

// ErrBadCertificate is any certificate Verify refuses.
var ErrBadCertificate = errors.New("lease certificate does not verify")

// Verify checks a certificate's signature with the key its kid names among
// keys (public keys) and returns its claims. It checks nothing else
// (expiry, nonce): that is the verifier's business (the clients).
func Verify(token string, keys []server.SigningKey) (Claims, error) {
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return Claims{}, fmt.Errorf("%w: not a JWS compact token with one signature", ErrBadCertificate)
	}
	kid := jws.Signatures[0].Header.KeyID
	for _, k := range keys {
		if k.ID != kid {
			continue
		}
		payload, err := jws.Verify(ed25519.PublicKey(k.PublicKey))
		if err != nil {
			return Claims{}, fmt.Errorf("%w: bad signature for kid %s", ErrBadCertificate, kid)
		}
		var c Claims
		if err := json.Unmarshal(payload, &c); err != nil {
			return Claims{}, fmt.Errorf("%w: claims do not decode", ErrBadCertificate)
		}
		return c, nil
	}
	return Claims{}, fmt.Errorf("%w: no key with kid %q", ErrBadCertificate, kid)
}
