package signing

import (
	"crypto/ed25519"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestReturnedListIsSignedByTheKeyThatSigns: the list is a JWS of typ
// seatd-returned+jwt, signed by the tenant's key that signs certificates,
// naming each returned certificate by sub and exp, issued now.
func TestReturnedListIsSignedByTheKeyThatSigns(t *testing.T) {
	t.Parallel()
	c := newClock()
	iss := NewIssuer(newMemKeys("acme"), IssuerOptions{Now: c.now})
	k, err := iss.Ensure(t.Context(), "acme")
	require.NoError(t, err)
	exp := c.now().Add(72 * time.Hour)
	token, err := iss.ReturnedList(t.Context(), "acme", []server.ReturnedCertificate{
		{LeaseID: "lse_1", TenantID: "acme", LicenseID: "lic_1", ExpiresAt: exp},
	})
	require.NoError(t, err)

	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	require.NoError(t, err)
	h := jws.Signatures[0].Header
	require.Equal(t, k.ID, h.KeyID)
	require.Equal(t, ReturnedType, h.ExtraHeaders[jose.HeaderType])
	payload, err := jws.Verify(ed25519.PublicKey(k.PublicKey))
	require.NoError(t, err)
	var got ReturnedList
	require.NoError(t, json.Unmarshal(payload, &got))
	require.Equal(t, ReturnedList{Issuer: IssuerName, TenantID: "acme", IssuedAt: c.now().Unix(),
		Returned: []ReturnedEntry{{Subject: "lse_1", Expiry: exp.Unix()}}}, got)

	empty, err := iss.ReturnedList(t.Context(), "acme", nil)
	require.NoError(t, err)
	_, err = Verify(empty, []server.SigningKey{k})
	require.NoError(t, err, "the signature verifies")
	require.Contains(t, string(mustPayload(t, empty)), `"returned":[]`, "an empty list, not null")
}

func mustPayload(t *testing.T, token string) []byte {
	t.Helper()
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	require.NoError(t, err)
	return jws.UnsafePayloadWithoutVerification()
}
