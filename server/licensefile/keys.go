package licensefile

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"

	"github.com/seatd/seatd/server/signing"
)

// KeyID is a public key's kid: signing.KeyID, so that the site key has
// the same kid in a license file, a site request, a usage export and the
// lease certificates it signs.
func KeyID(pub ed25519.PublicKey) string { return signing.KeyID(pub) }

// JWK is an Ed25519 public key as RFC 8037 writes it, as a document
// carries it: the site key in a license file or a site request.
type JWK struct {
	Kty string `json:"kty"` // "OKP"
	Crv string `json:"crv"` // "Ed25519"
	X   string `json:"x"`   // the 32-byte key, base64url without padding
	Kid string `json:"kid"` // KeyID of X
}

// NewJWK is pub as a JWK.
func NewJWK(pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: KeyID(pub)}
}

// PublicKey is the key k holds: ErrKeyType for another kty or crv,
// ErrInvalid (naming field) for a bad x or a kid that is not x's.
func (k JWK) PublicKey(field string) (ed25519.PublicKey, error) {
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, fmt.Errorf("%s: %w (kty %q, crv %q; want OKP, Ed25519)", field, ErrKeyType, k.Kty, k.Crv)
	}
	raw, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, invalid(field+".x", "must be a 32-byte Ed25519 public key, base64url without padding")
	}
	pub := ed25519.PublicKey(raw)
	if k.Kid != KeyID(pub) {
		return nil, invalid(field+".kid", "is not the kid of x (want %s)", KeyID(pub))
	}
	return pub, nil
}

// PEM block types of the key files seatctl writes.
const (
	pemPrivateKey = "PRIVATE KEY" // PKCS #8
	pemPublicKey  = "PUBLIC KEY"  // PKIX (SubjectPublicKeyInfo)
)

// GenerateKey makes a new Ed25519 key pair (a vendor's or a site's).
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate Ed25519 key: %w", err)
	}
	return pub, priv, nil
}

// MarshalPrivateKey writes a private key as PEM PKCS #8, as OpenSSL
// reads it (openssl pkey -in vendor.key -text).
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

// MarshalPublicKey writes a public key as PEM PKIX (SubjectPublicKeyInfo).
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der}), nil
}

// ParsePrivateKey reads a PEM PKCS #8 private key: ErrKeyType for one
// that is not Ed25519. The error never repeats the key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != pemPrivateKey || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("private key: %w: want one PEM %q block (PKCS #8)", ErrMalformed, pemPrivateKey)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private key: %w: not PKCS #8", ErrMalformed)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("private key: %w (a %T)", ErrKeyType, key)
	}
	return priv, nil
}

// ParsePublicKeys reads public keys, in any of the forms a vendor may
// hand out: PEM "PUBLIC KEY" blocks (one or more: a vendor that rotates
// its key ships the old and the new), a JWK or a JWKS (JSON), or one bare
// base64url key (the 32 bytes, the form that fits -ldflags -X). A key
// that is not Ed25519 is ErrKeyType, never skipped: a verifier configured
// with the wrong key must hear so, not that every file is forged.
func ParsePublicKeys(data []byte) ([]ed25519.PublicKey, error) {
	text := bytes.TrimSpace(data)
	switch {
	case len(text) == 0:
		return nil, fmt.Errorf("public keys: %w: empty", ErrMalformed)
	case bytes.HasPrefix(text, []byte("-----BEGIN")):
		return parsePEMPublicKeys(text)
	case text[0] == '{':
		return parseJWKs(text)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(string(text), "="))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public keys: %w: neither PEM, JSON (JWK, JWKS) nor a base64url 32-byte Ed25519 key", ErrMalformed)
	}
	return []ed25519.PublicKey{raw}, nil
}

func parsePEMPublicKeys(text []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for len(bytes.TrimSpace(text)) > 0 {
		block, rest := pem.Decode(text)
		if block == nil {
			return nil, fmt.Errorf("public keys: %w: a PEM block is cut short or followed by other text", ErrMalformed)
		}
		if block.Type != pemPublicKey {
			return nil, fmt.Errorf("public keys: %w: a PEM %q block (want %q; is this a private key?)", ErrMalformed, block.Type, pemPublicKey)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("public keys: %w: %v", ErrMalformed, err)
		}
		pub, ok := key.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public keys: %w (a %T)", ErrKeyType, key)
		}
		keys = append(keys, pub)
		text = rest
	}
	return keys, nil
}

func parseJWKs(text []byte) ([]ed25519.PublicKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(text, &set); err != nil || len(set.Keys) == 0 {
		var one jose.JSONWebKey
		if err := json.Unmarshal(text, &one); err != nil {
			return nil, fmt.Errorf("public keys: %w: not a JWK or JWKS: %v", ErrMalformed, err)
		}
		set.Keys = []jose.JSONWebKey{one}
	}
	keys := make([]ed25519.PublicKey, 0, len(set.Keys))
	for _, k := range set.Keys {
		pub, ok := k.Key.(ed25519.PublicKey)
		if !ok || !k.IsPublic() {
			return nil, fmt.Errorf("public keys: %w (JWK %q holds a %T, or a private key)", ErrKeyType, k.KeyID, k.Key)
		}
		keys = append(keys, pub)
	}
	return keys, nil
}

// Ed25519Keys checks that every key is an Ed25519 public key (as
// x509.ParsePKIXPublicKey or a JWK gives them): ErrKeyType otherwise.
func Ed25519Keys(keys ...crypto.PublicKey) ([]ed25519.PublicKey, error) {
	out := make([]ed25519.PublicKey, 0, len(keys))
	for i, k := range keys {
		pub, ok := k.(ed25519.PublicKey)
		if !ok || len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("key %d: %w (a %T)", i, ErrKeyType, k)
		}
		out = append(out, pub)
	}
	return out, nil
}
