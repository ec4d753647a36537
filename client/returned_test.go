package client

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

// returnedList signs a list of returned certificates as seatd does
// (server/signing, ReturnedList), with typ typ.
func (s *testSigner) returnedList(typ string, claims map[string]any) string {
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: s.priv, KeyID: s.kid}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		panic(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return out
}

func listClaims(iat time.Time, leaseIDs ...string) map[string]any {
	var entries []map[string]any
	for _, id := range leaseIDs {
		entries = append(entries, map[string]any{"sub": id, "exp": time.Now().Add(time.Hour).Unix()})
	}
	return map[string]any{"iss": "seatd", "tenant_id": "default", "iat": iat.Unix(), "returned": entries}
}

// TestVerifyOfflineRefusesAReturnedCertificate: a certificate named by the
// signed list of returned certificates is refused offline although it
// verifies and has not expired; another is not; no list, no refusal.
func TestVerifyOfflineRefusesAReturnedCertificate(t *testing.T) {
	signer := newTestSigner("k1")
	keys := jwks(signer)
	deadline := time.Now().Add(time.Hour)
	cert := signer.certificate(forgeNothing, certClaims("lease-1", "fp", deadline, true, "n"))
	list := signer.returnedList(returnedType, listClaims(time.Now(), "lease-1", "lease-9"))

	c, err := VerifyOfflineReturned(cert, keys, list, time.Now())
	require.ErrorIs(t, err, ErrCertificateReturned)
	require.ErrorIs(t, err, ErrBadCertificate)
	require.Equal(t, "lease-1", c.LeaseID)

	other := signer.returnedList(returnedType, listClaims(time.Now(), "lease-2"))
	_, err = VerifyOfflineReturned(cert, keys, other, time.Now())
	require.NoError(t, err, "a list that does not name it")
	_, err = VerifyOfflineReturned(cert, keys, "", time.Now())
	require.NoError(t, err, "no list kept yet")
	empty := signer.returnedList(returnedType, map[string]any{"iss": "seatd", "tenant_id": "default", "iat": time.Now().Unix(), "returned": []any{}})
	_, err = VerifyOfflineReturned(cert, keys, empty, time.Now())
	require.NoError(t, err, "an empty list")
}

// TestVerifyReturnedRefusesTampering: a list is taken only as seatd signed
// it for this tenant: every change, another key, another tenant, a lease
// certificate offered as a list (and a list as a certificate), or a list
// too old (replayed) when the caller asks for a fresh one.
func TestVerifyReturnedRefusesTampering(t *testing.T) {
	signer := newTestSigner("k1")
	keys, err := ParseSigningKeys(jwks(signer))
	require.NoError(t, err)
	now := time.Now()
	good := signer.returnedList(returnedType, listClaims(now, "lease-1"))
	l, err := keys.VerifyReturned(good, "default", time.Minute, now)
	require.NoError(t, err)
	require.True(t, l.Returned("lease-1"))
	require.False(t, l.Returned("lease-2"))
	require.Equal(t, 1, l.Len())
	require.Equal(t, "k1", l.KeyID)
	require.Equal(t, good, l.Token)

	// One byte of the claims changed: the payload no longer verifies.
	parts := strings.Split(good, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	forged := strings.Replace(string(payload), "lease-1", "lease-X", 1)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2]

	bad := map[string]string{
		"one byte changed":           tampered,
		"entry dropped":              parts[0] + "." + base64.RawURLEncoding.EncodeToString(mustJSON(listClaims(now))) + "." + parts[2],
		"other key":                  newTestSigner("k1").returnedList(returnedType, listClaims(now, "lease-1")),
		"unknown kid":                newTestSigner("k9").returnedList(returnedType, listClaims(now, "lease-1")),
		"typ of a lease certificate": signer.returnedList("JWT", listClaims(now, "lease-1")),
		"other issuer": signer.returnedList(returnedType, func() map[string]any {
			c := listClaims(now, "lease-1")
			c["iss"] = "evil"
			return c
		}()),
		"other tenant": signer.returnedList(returnedType, func() map[string]any {
			c := listClaims(now, "lease-1")
			c["tenant_id"] = "acme"
			return c
		}()),
		"no iat": signer.returnedList(returnedType, func() map[string]any {
			c := listClaims(now, "lease-1")
			delete(c, "iat")
			return c
		}()),
		"alg none":   parts[0][:0] + base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"seatd-returned+jwt"}`)) + "." + parts[1] + ".",
		"replayed":   signer.returnedList(returnedType, listClaims(now.Add(-2*time.Hour), "lease-1")),
		"from later": signer.returnedList(returnedType, listClaims(now.Add(time.Hour), "lease-1")),
		"not a JWS":  "a.b.c",
	}
	for what, list := range bad {
		_, err := keys.VerifyReturned(list, "default", time.Minute, now)
		require.ErrorIs(t, err, ErrBadCertificate, what)
	}
	// Offline (maxAge 0) an old list still counts: it is the newest the
	// product has.
	_, err = keys.VerifyReturned(bad["replayed"], "default", 0, now)
	require.NoError(t, err)

	// A list is never a lease certificate.
	_, err = keys.Verify(good, now)
	require.ErrorIs(t, err, ErrBadCertificate, "a list offered as a certificate")
}

// TestNewerKeepsTheLatestList: a product never replaces the list it keeps
// by an older one (a replay that would unlist a returned certificate).
func TestNewerKeepsTheLatestList(t *testing.T) {
	signer := newTestSigner("k1")
	keys, err := ParseSigningKeys(jwks(signer))
	require.NoError(t, err)
	now := time.Now()
	older, err := keys.VerifyReturned(signer.returnedList(returnedType, listClaims(now.Add(-time.Hour))), "default", 0, now)
	require.NoError(t, err)
	newer, err := keys.VerifyReturned(signer.returnedList(returnedType, listClaims(now, "lease-1")), "default", 0, now)
	require.NoError(t, err)
	require.Same(t, newer, Newer(nil, newer))
	require.Same(t, newer, Newer(older, newer))
	require.Same(t, newer, Newer(newer, older), "an older list fetched later is not kept")
	require.Same(t, older, Newer(older, nil))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
