package sso

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/service"
)

// A console session lives in its cookie, sealed (AES-256-GCM) under a key
// every instance shares: no session table, so any instance serves any
// browser. Sign-out clears the cookie; a copy taken before stays valid
// until its expiry, which --sso-session-lifetime bounds.
const sessionPrefix = "sss_"

// session is what a console session cookie holds.
type session struct {
	Issuer  string      `json:"iss"` // the issuer's name
	Subject string      `json:"sub"`
	Email   string      `json:"email,omitempty"`
	Tenant  string      `json:"tenant,omitempty"`
	Role    server.Role `json:"role"`
	Expires int64       `json:"exp"`  // unix seconds
	CSRF    string      `json:"csrf"` // the token state-changing calls must send
	Kind    string      `json:"kind"` // "session" or "login" (a sign-in under way)
	// Refresh is the IdP's refresh token; Recheck (unix seconds, the ID
	// token's expiry) is when the session must be renewed with it: the
	// person's groups mapped again, a refusal ending the session.
	Refresh string `json:"rt,omitempty"`
	Recheck int64  `json:"recheck,omitempty"`
	// A sign-in under way: its state, nonce and PKCE verifier.
	State    string `json:"state,omitempty"`
	Nonce    string `json:"nonce,omitempty"`
	Verifier string `json:"verifier,omitempty"`
}

func (s session) signedIn() grpcapi.SignedIn {
	return grpcapi.SignedIn{
		Person:   service.Person{Issuer: s.Issuer, Subject: s.Subject, Email: s.Email},
		TenantID: s.Tenant, Role: s.Role,
	}
}

type sealer struct {
	aead     cipher.AEAD
	lifetime time.Duration
	now      func() time.Time
}

// DeriveSessionKey makes the session key from a secret every instance
// shares (the operator key, when no session_key_file is given).
func DeriveSessionKey(secret []byte) []byte {
	key, err := hkdf.Key(sha256.New, secret, nil, "seatd console session v1", 32)
	if err != nil {
		panic(err) // 32 bytes of SHA-256 HKDF: cannot fail
	}
	return key
}

func newSealer(key []byte, lifetime time.Duration, now func() time.Time) *sealer {
	block, err := aes.NewCipher(DeriveSessionKey(key))
	if err != nil {
		panic(err) // a 32-byte key
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &sealer{aead: aead, lifetime: lifetime, now: now}
}

func (s *sealer) seal(v session) string {
	plain, _ := json.Marshal(v)
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	// The kind is bound as associated data too: a login cookie never
	// passes for a session.
	out := s.aead.Seal(nonce, nonce, plain, []byte(v.Kind))
	return sessionPrefix + base64.RawURLEncoding.EncodeToString(out)
}

var errSessionInvalid = server.Errorf(server.EUNAUTHENTICATED, server.ReasonUnauthenticated, "the console session is not valid: sign in again")

func (s *sealer) unseal(token, kind string) (session, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, sessionPrefix))
	if err != nil || len(raw) < s.aead.NonceSize() {
		return session{}, errSessionInvalid
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(kind))
	if err != nil {
		return session{}, errSessionInvalid
	}
	var v session
	if json.Unmarshal(plain, &v) != nil || v.Kind != kind {
		return session{}, errSessionInvalid
	}
	if !s.now().Before(time.Unix(v.Expires, 0)) {
		return session{}, server.Errorf(server.EUNAUTHENTICATED, server.ReasonSessionExpired, "the console session has expired: sign in again")
	}
	return v, nil
}

// open reads a console session (not a sign-in under way).
func (s *sealer) open(token string) (session, error) { return s.unseal(token, "session") }

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
