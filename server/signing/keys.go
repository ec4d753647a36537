// Package signing owns seatd's lease-signing keys and the certificates they
// sign: Ed25519 key generation, keeping private keys at rest (sealed with
// AES-256-GCM when an encryption key is configured, seal.go), the JWS lease
// certificates (certificate.go), the public keys as a JWKS, and the Issuer
// that caches each tenant's keys in memory (issuer.go). Private keys leave
// this package only as sealed bytes for the store.
package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/seatd/seatd/server"
)

// Algorithm is the JWS alg of every certificate.
const Algorithm = "EdDSA"

// KeyID is the kid of a public key: base64url of the first 12 bytes of its
// SHA-256, so that one key has one kid wherever it is computed.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// NewKey makes a new key for the tenant, created at now, its private half
// sealed by s (nil: kept plain).
func NewKey(tenantID string, now time.Time, s *Sealer) (server.SigningKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return server.SigningKey{}, fmt.Errorf("generate signing key: %w", err)
	}
	kid := KeyID(pub)
	sealed, err := s.Seal(tenantID, kid, priv.Seed())
	clear(priv)
	if err != nil {
		return server.SigningKey{}, err
	}
	return server.SigningKey{
		ID: kid, TenantID: tenantID, PublicKey: pub, PrivateKey: sealed,
		CreatedAt: now.UTC().Truncate(time.Microsecond),
	}, nil
}

// JWK is a public key as RFC 7517 and RFC 8037 write it (kty OKP, crv
// Ed25519), as GetSigningKeys publishes it.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// PublicJWK is k's public half as a JWK, written by go-jose.
func PublicJWK(k server.SigningKey) (JWK, error) {
	if len(k.PublicKey) != ed25519.PublicKeySize {
		return JWK{}, fmt.Errorf("signing key %s of tenant %s: public key is %d bytes, not %d", k.ID, k.TenantID, len(k.PublicKey), ed25519.PublicKeySize)
	}
	data, err := json.Marshal(jose.JSONWebKey{
		Key: ed25519.PublicKey(k.PublicKey), KeyID: k.ID, Use: "sig", Algorithm: Algorithm,
	})
	if err != nil {
		return JWK{}, fmt.Errorf("signing key %s as JWK: %w", k.ID, err)
	}
	var jwk JWK
	if err := json.Unmarshal(data, &jwk); err != nil {
		return JWK{}, fmt.Errorf("signing key %s as JWK: %w", k.ID, err)
	}
	return jwk, nil
}

// Published returns, of a tenant's keys (in server.SortSigningKeys's
// order), those a verifier needs at now: the next key (so that a JWKS
// embedded before a rotation trusts the key that signs after it), the one
// that signs, and the retired ones some certificate may still be valid
// under (PublishUntil with slack after now).
func Published(keys []server.SigningKey, now time.Time, slack time.Duration) []server.SigningKey {
	var out []server.SigningKey
	for _, k := range keys {
		if k.RetiredAt.IsZero() || k.PublishUntil(slack).After(now) {
			out = append(out, k)
		}
	}
	return out
}
