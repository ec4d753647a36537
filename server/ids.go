package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
)

// NewSecret returns a random secret with 256 bits of entropy and the given
// prefix, e.g. "slt_" for lease tokens (prefixes make leaked secrets easy to
// recognise in logs and scanners).
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand docs)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// NewID returns a random, URL-safe identifier with the given prefix.
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// HashSecret returns the hex SHA-256 of a secret. Secrets are random and
// long, so a fast hash is enough (no password stretching needed).
func HashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// SecretMatches compares a secret with a stored hash in constant time.
func SecretMatches(secret, hash string) bool {
	got := HashSecret(secret)
	return subtle.ConstantTimeCompare([]byte(got), []byte(hash)) == 1
}

// Prefixes of generated identifiers and secrets.
const (
	PrefixLicenseID  = "lic_"
	PrefixLicenseKey = "slk_"
	PrefixLeaseID    = "lse_"
	PrefixLeaseToken = "slt_"
	PrefixAPIKeyID   = "key_"
	PrefixAPISecret  = "sak_"
	PrefixOperator   = "sop_"
)
