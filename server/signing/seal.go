package signing

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/seatd/seatd/server"
)

// How a private key (its 32-byte Ed25519 seed) is kept at rest. Every
// stored value starts with a version prefix, so that plain and sealed keys
// are told apart and a later format can be added:
//
//	plainPrefix  seed
//	sealedPrefix encryption key id (8 bytes) | nonce (12) | AES-256-GCM(seed) (32 + 16)
//
// The encryption key id is the first 8 bytes of SHA-256 of the encryption
// key: it tells "sealed with another key" apart from "damaged". The GCM
// additional data binds the value to its tenant and kid, so a sealed seed
// copied onto another key's row does not open.
var (
	plainPrefix  = []byte("seatd-ed25519-plain-v1:")
	sealedPrefix = []byte("seatd-ed25519-aes256gcm-v1:")
)

const (
	keyIDLen  = 8
	nonceLen  = 12
	sealedLen = keyIDLen + nonceLen + ed25519.SeedSize + 16
)

// EncryptionKeyLen is the length of the encryption key: AES-256.
const EncryptionKeyLen = 32

// Sealer keeps private keys at rest: sealed with AES-256-GCM when it has an
// encryption key, plain otherwise (the zero value and nil). It opens both
// kinds; a sealed key it cannot open is an error that says why, never a
// panic. Errors never contain key material.
type Sealer struct {
	aead cipher.AEAD
	id   [keyIDLen]byte
}

// ParseEncryptionKey reads an encryption key written as base64 (standard
// or URL alphabet, padded or not) of 32 random bytes, e.g. the output of
// `openssl rand -base64 32`. Surrounding white space is ignored. The error
// never repeats the text.
func ParseEncryptionKey(text string) (*Sealer, error) {
	text = strings.TrimSpace(text)
	var raw []byte
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(text); err == nil {
			raw = b
			break
		}
	}
	if raw == nil {
		return nil, errors.New("the signing key encryption key is not base64")
	}
	if len(raw) != EncryptionKeyLen {
		return nil, fmt.Errorf("the signing key encryption key must be %d bytes (base64 of 32 random bytes, e.g. openssl rand -base64 32), not %d", EncryptionKeyLen, len(raw))
	}
	return NewSealer(raw)
}

// NewSealer seals with key (32 bytes).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != EncryptionKeyLen {
		return nil, fmt.Errorf("the signing key encryption key must be %d bytes, not %d", EncryptionKeyLen, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("signing key encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("signing key encryption key: %w", err)
	}
	s := &Sealer{aead: aead}
	sum := sha256.Sum256(key)
	copy(s.id[:], sum[:keyIDLen])
	return s, nil
}

// Encrypts reports whether new keys are sealed.
func (s *Sealer) Encrypts() bool { return s != nil && s.aead != nil }

// KeyID names the encryption key (hex of the first bytes of its SHA-256):
// safe to log, it tells which key sealed a value.
func (s *Sealer) KeyID() string {
	if !s.Encrypts() {
		return ""
	}
	return hex.EncodeToString(s.id[:])
}

// Seal returns seed as it is kept at rest for the key kid of tenant.
func (s *Sealer) Seal(tenantID, kid string, seed []byte) ([]byte, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("seal signing key %s: a seed is %d bytes", kid, ed25519.SeedSize)
	}
	if !s.Encrypts() {
		return append(bytes.Clone(plainPrefix), seed...), nil
	}
	out := make([]byte, 0, len(sealedPrefix)+sealedLen)
	out = append(out, sealedPrefix...)
	out = append(out, s.id[:]...)
	nonce := make([]byte, nonceLen)
	_, _ = rand.Read(nonce) // never fails (crypto/rand docs)
	out = append(out, nonce...)
	return s.aead.Seal(out, nonce, seed, additionalData(tenantID, kid)), nil
}

// Sealed reports whether a stored private key is encrypted.
func Sealed(stored []byte) bool { return bytes.HasPrefix(stored, sealedPrefix) }

// Errors of Open. They name the key (tenant and kid), never its bytes.
var (
	// ErrNoEncryptionKey: the key is sealed and no encryption key is
	// configured.
	ErrNoEncryptionKey = errors.New("signing key is sealed (encrypted at rest) but no signing key encryption key is configured (SEATD_SIGNING_KEY_ENCRYPTION_KEY or --signing-key-encryption-key-file)")
	// ErrWrongEncryptionKey: sealed with another encryption key.
	ErrWrongEncryptionKey = errors.New("signing key was sealed with another encryption key than the one configured")
	// ErrDamagedKey: the stored value is not a key this seatd can read.
	ErrDamagedKey = errors.New("stored signing key is damaged or of an unknown format")
)

// Open returns k's private key, checked against its public key.
func (s *Sealer) Open(k server.SigningKey) (ed25519.PrivateKey, error) {
	seed, err := s.openSeed(k)
	if err != nil {
		return nil, fmt.Errorf("open signing key %s of tenant %s: %w", k.ID, k.TenantID, err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	clear(seed)
	if !bytes.Equal(priv.Public().(ed25519.PublicKey), k.PublicKey) {
		return nil, fmt.Errorf("open signing key %s of tenant %s: %w (its private half does not match its public key)", k.ID, k.TenantID, ErrDamagedKey)
	}
	return priv, nil
}

func (s *Sealer) openSeed(k server.SigningKey) ([]byte, error) {
	v := k.PrivateKey
	switch {
	case bytes.HasPrefix(v, plainPrefix):
		seed := v[len(plainPrefix):]
		if len(seed) != ed25519.SeedSize {
			return nil, ErrDamagedKey
		}
		return bytes.Clone(seed), nil
	case bytes.HasPrefix(v, sealedPrefix):
		v = v[len(sealedPrefix):]
		if len(v) != sealedLen {
			return nil, ErrDamagedKey
		}
		if !s.Encrypts() {
			return nil, ErrNoEncryptionKey
		}
		if !bytes.Equal(v[:keyIDLen], s.id[:]) {
			return nil, fmt.Errorf("%w (sealed with key id %s, configured: %s)", ErrWrongEncryptionKey, hex.EncodeToString(v[:keyIDLen]), s.KeyID())
		}
		nonce, ct := v[keyIDLen:keyIDLen+nonceLen], v[keyIDLen+nonceLen:]
		seed, err := s.aead.Open(nil, nonce, ct, additionalData(k.TenantID, k.ID))
		if err != nil {
			return nil, ErrDamagedKey
		}
		return seed, nil
	}
	return nil, ErrDamagedKey
}

func additionalData(tenantID, kid string) []byte {
	return []byte("seatd signing key\x00" + tenantID + "\x00" + kid)
}
