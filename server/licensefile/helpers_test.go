package licensefile

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
)

// testKey is a fixed key pair made from name, so that the golden files
// come out the same on every run (Ed25519 signatures are deterministic).
func testKey(name string) (ed25519.PublicKey, ed25519.PrivateKey) {
	seed := sha256.Sum256([]byte("seatd licensefile test key: " + name))
	priv := ed25519.NewKeyFromSeed(seed[:])
	return priv.Public().(ed25519.PublicKey), priv
}

var (
	vendorPub, vendorPriv = testKey("vendor")
	otherPub, otherPriv   = testKey("another vendor")
	sitePub, sitePriv     = testKey("site")
	site2Pub, site2Priv   = testKey("another site")

	issued = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// sampleFile is a file for the test site: two licenses, one with grants.
func sampleFile() *File {
	return &File{
		Serial: 7, Customer: "Acme Fabrication & Sons", IssuedAt: issued,
		NotAfter: issued.AddDate(1, 0, 0), SiteKey: NewJWK(sitePub),
		Licenses: []License{
			{
				ID: "cad", Name: "ACME CAD", Seats: 20, Overdraft: 2, LeaseTTL: Duration(6 * time.Minute),
				MaxBorrowDuration: Duration(72 * time.Hour), MaxBorrowedSeats: 5,
				ExpiresAt: issued.AddDate(1, 0, 0),
				Grants: []Grant{
					{ID: "render-2024", Feature: "render", Version: "2024.2", Seats: 5, Overdraft: 1,
						ExpiresAt: issued.AddDate(0, 6, 0)},
					{ID: "sim", Feature: "sim", Seats: 2, StartsAt: issued.AddDate(0, 1, 0),
						MaxBorrowDuration: Duration(24 * time.Hour), MaxBorrowedSeats: 1},
				},
			},
			{ID: "viewer", Name: "ACME Viewer", Seats: 100, LeaseTTL: Duration(2 * time.Minute),
				LeasingStrategy: "user", AllowEarlyReturn: true},
		},
	}
}

var testSite = Site{Key: sitePub, Hostname: "lic1.plant.example", MachineID: "0123456789abcdef0123456789abcdef"}

// during is an instant while sampleFile is valid.
var during = issued.Add(24 * time.Hour)

func signSample(t *testing.T, edit func(*File)) []byte {
	t.Helper()
	f := sampleFile()
	if edit != nil {
		edit(f)
	}
	data, err := Sign(f, vendorPriv)
	require.NoError(t, err)
	return data
}

// parts splits a document into its readable copy and its JWS.
func parts(t *testing.T, data []byte) (label, readable, token string) {
	t.Helper()
	text := strings.TrimSpace(string(data))
	first, rest, _ := strings.Cut(text, "\n")
	label = strings.TrimSuffix(strings.TrimPrefix(first, "-----BEGIN "), "-----")
	readable, sig, ok := strings.Cut(rest, "\n"+signatureBegin+"\n")
	require.True(t, ok)
	sig = strings.TrimSuffix(sig, "\n"+signatureEnd)
	return label, readable, strings.Join(strings.Fields(sig), "")
}

// armour puts a readable copy and a token together as seal does.
func armour(label, readable, token string) []byte {
	return []byte(beginLine(label) + "\n" + readable + "\n" + signatureBegin + "\n" + token + "\n" + signatureEnd + "\n")
}

// rawToken signs payload as-is, with any alg, kid and typ: documents
// Sign would never make.
func rawToken(t *testing.T, alg jose.SignatureAlgorithm, key any, kid, typ string, payload []byte) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	require.NoError(t, err)
	jws, err := signer.Sign(payload)
	require.NoError(t, err)
	token, err := jws.CompactSerialize()
	require.NoError(t, err)
	return token
}

// rawDocument is a document whose payload is given as JSON, signed with
// key and its readable copy made to match, so that only the payload's
// content is judged.
func rawDocument(t *testing.T, k kind, key ed25519.PrivateKey, payload string) []byte {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(payload), &v), "test payload")
	token := rawToken(t, jose.EdDSA, key, KeyID(key.Public().(ed25519.PublicKey)), k.typ, []byte(payload))
	return armour(k.label, indent(t, payload), token)
}

func indent(t *testing.T, payload string) string {
	t.Helper()
	var b strings.Builder
	var v json.RawMessage = []byte(payload)
	out, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	b.Write(out)
	return b.String()
}

// payloadOf is the JSON of sampleFile after edit, as a map to change.
func payloadOf(t *testing.T, edit func(map[string]any)) string {
	t.Helper()
	data, err := json.Marshal(sampleFile().normalized())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	if edit != nil {
		edit(m)
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

// requireRefused checks err wraps want and its message holds each of
// the words.
func requireRefused(t *testing.T, err error, want error, words ...string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, want, "got: %v", err)
	for _, w := range words {
		require.Contains(t, err.Error(), w)
	}
}
