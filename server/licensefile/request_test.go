package licensefile

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

func TestSiteRequestRoundTrip(t *testing.T) {
	data, err := MakeRequest(SiteRequest{Name: "Plant 4 — Linz", CreatedAt: issued.Add(time.Millisecond),
		Hostname: "lic1.plant.example", MachineID: testSite.MachineID}, sitePriv)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "-----BEGIN SEATD SITE REQUEST-----\n{\n  \"name\": \"Plant 4 — Linz\""), "%s", data)

	r, err := VerifyRequest(data)
	require.NoError(t, err)
	require.Equal(t, "Plant 4 — Linz", r.Name)
	require.Equal(t, NewJWK(sitePub), r.SiteKey)
	require.True(t, r.PublicKey().Equal(sitePub))
	require.Equal(t, issued, r.CreatedAt)
	require.Equal(t, testSite.MachineID, r.MachineID)
}

func TestSiteRequestRefuses(t *testing.T) {
	good, err := MakeRequest(SiteRequest{Name: "plant 4", CreatedAt: issued}, sitePriv)
	require.NoError(t, err)
	label, readable, _ := parts(t, good)
	// The payload of a request for the site's key, signed by another: a
	// request typed up from someone else's public key.
	claimsSiteKey := compactJSON(t, readable)

	cases := []struct {
		name  string
		data  []byte
		want  error
		words []string
	}{
		{"truncated", good[:len(good)-40], ErrMalformed, nil},
		{"a license file", signSample(t, nil), ErrWrongDocument, []string{"license file"}},
		{"readable copy edited", []byte(strings.Replace(string(good), "plant 4", "plant 5", 1)), ErrTampered, []string{"name"}},
		{"signed by another key than it carries",
			armour(label, readable, rawToken(t, jose.EdDSA, site2Priv, KeyID(site2Pub), kindSiteRequest.typ, []byte(claimsSiteKey))),
			ErrBadSignature, []string{KeyID(site2Pub), KeyID(sitePub)}},
		{"signed by another key claiming the carried kid",
			armour(label, readable, rawToken(t, jose.EdDSA, site2Priv, KeyID(sitePub), kindSiteRequest.typ, []byte(claimsSiteKey))),
			ErrBadSignature, nil},
		{"an extra field", rawDocument(t, kindSiteRequest, sitePriv, strings.Replace(claimsSiteKey, `"name"`, `"seats":100,"name"`, 1)),
			ErrUnknownField, []string{"seats"}},
		{"no name", rawDocument(t, kindSiteRequest, sitePriv, strings.Replace(claimsSiteKey, `"plant 4"`, `""`, 1)),
			ErrInvalid, []string{"name"}},
		{"a key that is not Ed25519", rawDocument(t, kindSiteRequest, sitePriv, strings.Replace(claimsSiteKey, `"Ed25519"`, `"P-256"`, 1)),
			ErrKeyType, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := VerifyRequest(c.data)
			requireRefused(t, err, c.want, c.words...)
			require.Nil(t, r)
		})
	}

	for field, r := range map[string]SiteRequest{
		"name":       {CreatedAt: issued},
		"created_at": {Name: "x"},
		"hostname":   {Name: "x", CreatedAt: issued, Hostname: "not a host"},
		"machine_id": {Name: "x", CreatedAt: issued, MachineID: "abc"},
	} {
		_, err := MakeRequest(r, sitePriv)
		requireRefused(t, err, ErrInvalid, field)
	}
	_, err = MakeRequest(SiteRequest{Name: "x", CreatedAt: issued}, ed25519.PrivateKey(sitePriv[:10]))
	requireRefused(t, err, ErrKeyType)
}
