package client

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// testSigner signs lease certificates as seatd does, with a key of its own.
type testSigner struct {
	kid  string
	priv ed25519.PrivateKey
}

func newTestSigner(kid string) *testSigner {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return &testSigner{kid: kid, priv: priv}
}

// jwk is the signer's public key as GetSigningKeys publishes it.
func (s *testSigner) jwk() *seatdv1.JsonWebKey {
	return &seatdv1.JsonWebKey{
		Kty: "OKP", Crv: "Ed25519", Kid: s.kid, Use: "sig", Alg: "EdDSA",
		X: base64.RawURLEncoding.EncodeToString(s.priv.Public().(ed25519.PublicKey)),
	}
}

// jwks is a JWKS of the signers' public keys.
func jwks(signers ...*testSigner) []byte {
	resp := &seatdv1.GetSigningKeysResponse{}
	for _, s := range signers {
		resp.Keys = append(resp.Keys, s.jwk())
	}
	b, err := JWKS(resp)
	if err != nil {
		panic(err)
	}
	return b
}

// forgery is how a fake (or broken) server spoils a certificate.
type forgery int

const (
	forgeNothing     forgery = iota
	forgeMissing             // no certificate at all
	forgeOtherKey            // signed by another key under the same kid
	forgeUnknownKid          // signed by a key the JWKS does not hold
	forgeNonce               // a nonce other than the request's (a replay)
	forgeExp                 // exp an hour past the deadline told
	forgeLease               // another lease's
	forgeFingerprint         // another machine's
	forgeByte                // one byte of the claims changed after signing
	forgeAlgNone             // alg "none", no signature
	forgeIssuer              // iss not "seatd"
	forgeRelayed             // a relay's: the answer and its certificate name the relay's machine
	forgeLicenseKey          // for a lease of another license key (a relay's cheaper license)
	forgeUnbound             // as an older seatd signed: no bound_to, no license_key_sha256
	forgeOtherUser           // shared per user, for another user
)

var forgeries = map[forgery]string{
	forgeMissing: "missing", forgeOtherKey: "other key", forgeUnknownKid: "unknown kid", forgeNonce: "other nonce",
	forgeExp: "later exp", forgeLease: "other lease", forgeFingerprint: "other fingerprint", forgeByte: "one byte changed",
	forgeAlgNone: "alg none", forgeIssuer: "other issuer", forgeRelayed: "relayed", forgeLicenseKey: "other license key",
	forgeUnbound: "unbound", forgeOtherUser: "other user",
}

// relayFingerprint is the machine of a relay that serves its one lease's
// certificates to other clients (forgeRelayed).
const relayFingerprint = "relay-machine"

// certClaims are the claims seatd puts in the certificate of a lease of
// license key "key" bound to fingerprint.
func certClaims(leaseID, fingerprint string, deadline time.Time, borrowed bool, nonce string) map[string]any {
	return map[string]any{
		"iss": "seatd", "sub": leaseID, "lease_id": leaseID, "tenant_id": "default", "license_id": "lic-1",
		"fingerprint": fingerprint, "user": "", "hostname": "", "bound_to": "fingerprint", "license_key_sha256": LicenseKeyHash("key"),
		"iat": time.Now().Unix(), "exp": deadline.Unix(), "borrowed": borrowed, "nonce": nonce,
	}
}

// certificate signs claims, spoiled by forge.
func (s *testSigner) certificate(forge forgery, claims map[string]any) string {
	signer := s
	switch forge {
	case forgeMissing:
		return ""
	case forgeOtherKey:
		signer = newTestSigner(s.kid)
	case forgeUnknownKid:
		signer = newTestSigner(s.kid + "-unknown")
	case forgeNonce:
		claims["nonce"] = "recorded-earlier"
	case forgeExp:
		claims["exp"] = claims["exp"].(int64) + 3600
	case forgeLease:
		claims["sub"], claims["lease_id"] = "lease-other", "lease-other"
	case forgeFingerprint:
		claims["fingerprint"] = "another-machine"
	case forgeRelayed:
		claims["fingerprint"] = relayFingerprint
	case forgeLicenseKey:
		claims["license_key_sha256"] = LicenseKeyHash("another-key")
	case forgeUnbound:
		delete(claims, "bound_to")
		delete(claims, "license_key_sha256")
	case forgeOtherUser:
		claims["bound_to"], claims["user"] = "user", "bob"
	case forgeIssuer:
		claims["iss"] = "evil"
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	if forge == forgeAlgNone {
		head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"` + s.kid + `"}`))
		return head + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	}
	return signer.sign(payload, forge == forgeByte)
}

func (s *testSigner) sign(payload []byte, flipAByte bool) string {
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: s.priv, KeyID: s.kid}}, nil)
	if err != nil {
		panic(err)
	}
	obj, err := js.Sign(payload)
	if err != nil {
		panic(err)
	}
	token, err := obj.CompactSerialize()
	if err != nil {
		panic(err)
	}
	if flipAByte {
		// Change one byte of the claims, keeping them valid JSON: the
		// fingerprint's last letter.
		parts := strings.Split(token, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
		i := strings.LastIndex(string(raw), `","iat"`)
		if i < 0 {
			i = len(raw) - 2
		}
		raw[i-1] ^= 1
		parts[1] = base64.RawURLEncoding.EncodeToString(raw)
		token = strings.Join(parts, ".")
	}
	return token
}

// GetSigningKeys publishes the fake's key.
func (f *fakeServer) GetSigningKeys(context.Context, *seatdv1.GetSigningKeysRequest) (*seatdv1.GetSigningKeysResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &seatdv1.GetSigningKeysResponse{}
	if f.signer != nil {
		resp.Keys = append(resp.Keys, f.signer.jwk())
	}
	return resp, nil
}
