package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"
)

// What one lease certificate costs: go-jose's signer (what seatd uses),
// against ed25519.Sign over a header encoded once, and the whole Issuer
// path (cache lookup, claims, signing).

func benchKey(b *testing.B) (string, ed25519.PrivateKey) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	return KeyID(priv.Public().(ed25519.PublicKey)), priv
}

func benchClaims() Claims {
	now := time.Now()
	return LeaseClaims(testLease("default", now.Add(6*time.Minute)), Binding{KeyHash: LicenseKeyHash("slk_bench"), Nonce: "q9Hn1rP0c2xYvN0bLk3W8A"}, now)
}

func BenchmarkCertificateGoJose(b *testing.B) {
	kid, priv := benchKey(b)
	s, err := newKeySigner(kid, priv)
	if err != nil {
		b.Fatal(err)
	}
	c := benchClaims()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.sign(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCertificateDirectEd25519(b *testing.B) {
	kid, priv := benchKey(b)
	header, _ := json.Marshal(map[string]string{"alg": Algorithm, "kid": kid, "typ": "JWT"})
	prefix := base64.RawURLEncoding.EncodeToString(header) + "."
	c := benchClaims()
	b.ReportAllocs()
	for b.Loop() {
		payload, err := json.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		input := prefix + base64.RawURLEncoding.EncodeToString(payload)
		sig := ed25519.Sign(priv, []byte(input))
		_ = input + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
}

func BenchmarkIssuerCertificate(b *testing.B) {
	iss := NewIssuer(newMemKeys("default"), IssuerOptions{})
	l := testLease("default", time.Now().Add(6*time.Minute))
	if _, err := iss.Certificate(b.Context(), l, Binding{KeyHash: testKeyHash, Nonce: "n"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iss.Certificate(b.Context(), l, Binding{KeyHash: testKeyHash, Nonce: "q9Hn1rP0c2xYvN0bLk3W8A"}); err != nil {
			b.Fatal(err)
		}
	}
}
