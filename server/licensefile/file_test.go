package licensefile

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

var update = flag.Bool("update", false, "rewrite testdata/*.lic from the code")

func TestSignVerifyRoundTrip(t *testing.T) {
	data := signSample(t, nil)
	got, err := Verify(data, []ed25519.PublicKey{otherPub, vendorPub}, testSite, during)
	require.NoError(t, err)
	require.Equal(t, *sampleFile().normalized(), got.File)
	require.Equal(t, KeyID(vendorPub), got.VendorKeyID)

	// The token alone verifies as the file does (what a product checks).
	fromToken, err := OpenToken(got.Token, []ed25519.PublicKey{vendorPub})
	require.NoError(t, err)
	require.Equal(t, got.File, fromToken.File)

	// The readable copy is the payload, indented: a person reads the terms.
	_, readable, _ := parts(t, data)
	require.Contains(t, readable, `"customer": "Acme Fabrication & Sons"`)
	require.Contains(t, readable, `"lease_ttl": "6m0s"`)
	require.Contains(t, readable, `"version": "2024.2"`)
}

func TestSignKeepsTimesToTheSecondInUTC(t *testing.T) {
	data := signSample(t, func(f *File) {
		f.IssuedAt = issued.Add(123 * time.Millisecond).In(time.FixedZone("CET", 3600))
	})
	got, err := Open(data, []ed25519.PublicKey{vendorPub})
	require.NoError(t, err)
	require.Equal(t, issued, got.IssuedAt)
	require.Equal(t, time.UTC, got.IssuedAt.Location())
}

// TestGoldenFile pins the format: a change to what Sign writes for the
// same input shows here (go test -update to accept one on purpose; files
// already shipped must still verify).
func TestGoldenFile(t *testing.T) {
	golden := filepath.Join("testdata", "site.lic")
	data := signSample(t, nil)
	if *update {
		require.NoError(t, os.WriteFile(golden, data, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), string(data), "Sign no longer writes testdata/site.lic (go test -update if on purpose)")

	got, err := Verify(want, []ed25519.PublicKey{vendorPub}, testSite, during)
	require.NoError(t, err)
	require.EqualValues(t, 7, got.Serial)
	require.Equal(t, "lic_cad", LicenseID("cad"))
	// The first 4 bytes of SHA-256("render-2024").
	require.Equal(t, "lic_cad.ea8af4b8", GrantID(LicenseID("cad"), got.Licenses[0].Grants[0]))

	vendorPEM, err := MarshalPublicKey(vendorPub)
	require.NoError(t, err)
	pemFile := filepath.Join("testdata", "vendor.pub")
	if *update {
		require.NoError(t, os.WriteFile(pemFile, vendorPEM, 0o644))
	}
	onDisk, err := os.ReadFile(pemFile)
	require.NoError(t, err)
	keys, err := ParsePublicKeys(onDisk)
	require.NoError(t, err)
	_, err = Verify(want, keys, testSite, during)
	require.NoError(t, err)
}

func TestWhiteSpaceChangesNothing(t *testing.T) {
	data := signSample(t, nil)
	label, readable, token := parts(t, data)

	crlf := strings.ReplaceAll(string(data), "\n", "\r\n")
	_, err := Verify([]byte(crlf), []ed25519.PublicKey{vendorPub}, testSite, during)
	require.NoError(t, err, "CRLF line ends")

	var compact strings.Builder
	for _, line := range strings.Split(readable, "\n") {
		compact.WriteString(strings.TrimSpace(line) + " ")
	}
	oneLineToken := armour(label, "\n\n"+compact.String()+"\n", token[:10]+"\n  "+token[10:])
	_, err = Verify(oneLineToken, []ed25519.PublicKey{vendorPub}, testSite, during)
	require.NoError(t, err, "re-indented payload, re-wrapped signature")

	_, err = Verify([]byte("\n\n  "+string(data)+"\n\n"), []ed25519.PublicKey{vendorPub}, testSite, during)
	require.NoError(t, err, "blank lines around")
}

// TestVerifyRefuses: every way a file can be wrong, each named by its own
// error.
func TestVerifyRefuses(t *testing.T) {
	good := signSample(t, nil)
	label, readable, token := parts(t, good)
	head, payload, sig := splitToken(token)
	otherFile := signSample(t, func(f *File) { f.Licenses[0].Seats = 200 })
	_, otherReadable, otherToken := parts(t, otherFile)
	_, otherPayload, otherSig := splitToken(otherToken)
	byOtherVendor, err := Sign(sampleFile(), otherPriv)
	require.NoError(t, err)
	usage, err := SignUsage(UsageExport{FileSerial: 7, PeriodStart: issued, PeriodEnd: during, CreatedAt: during}, sitePriv)
	require.NoError(t, err)

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	hmacKey := make([]byte, 32)

	cases := []struct {
		name  string
		data  []byte
		keys  []ed25519.PublicKey
		site  Site
		now   time.Time
		want  error
		words []string
	}{
		{name: "empty", data: nil, want: ErrMalformed},
		{name: "not a license file", data: []byte("serial=7 seats=20\n"), want: ErrMalformed, words: []string{"does not start with"}},
		{name: "truncated in the payload", data: good[:len(good)/3], want: ErrMalformed, words: []string{"cut short"}},
		{name: "truncated in the signature", data: good[:len(good)-len(signatureEnd)-20], want: ErrMalformed, words: []string{"cut short"}},
		{name: "last line lost", data: good[:len(good)-len(signatureEnd)-1], want: ErrMalformed, words: []string{signatureEnd}},
		{name: "text after the end", data: append(append([]byte{}, good...), "P.S. more seats please\n"...), want: ErrMalformed},
		{name: "signature not a JWS", data: armour(label, readable, "bm90IGEgSldT"), want: ErrMalformed, words: []string{"JWS compact"}},
		{name: "signature without payload", data: armour(label, readable, head+".."+sig), want: ErrMalformed},
		{name: "readable copy edited", data: []byte(strings.Replace(string(good), `"seats": 20`, `"seats": 200`, 1)),
			want: ErrTampered, words: []string{"licenses[0].seats", "200", "20"}},
		{name: "readable copy of another file", data: armour(label, otherReadable, token), want: ErrTampered},
		{name: "readable copy not JSON", data: armour(label, readable[:len(readable)-2], token), want: ErrTampered, words: []string{"not JSON"}},
		{name: "payload swapped under the signature", data: armour(label, otherReadable, head+"."+otherPayload+"."+sig), want: ErrBadSignature},
		{name: "signature over a different payload", data: armour(label, readable, head+"."+payload+"."+otherSig), want: ErrBadSignature},
		{name: "signed by another key claiming the vendor's kid",
			data: armour(label, readable, rawToken(t, jose.EdDSA, otherPriv, KeyID(vendorPub), kindLicenseFile.typ, []byte(compactJSON(t, readable)))),
			want: ErrBadSignature},
		{name: "signed by another vendor", data: byOtherVendor, want: ErrUnknownKey, words: []string{KeyID(otherPub)}},
		{name: "no vendor key", data: good, keys: []ed25519.PublicKey{}, want: ErrUnknownKey},
		{name: "signed with RSA", data: armour(label, readable, rawToken(t, jose.RS256, rsaKey, KeyID(vendorPub), kindLicenseFile.typ, []byte(compactJSON(t, readable)))),
			want: ErrKeyType, words: []string{"RS256"}},
		{name: "signed with HMAC", data: armour(label, readable, rawToken(t, jose.HS256, hmacKey, KeyID(vendorPub), kindLicenseFile.typ, []byte(compactJSON(t, readable)))),
			want: ErrKeyType, words: []string{"HS256"}},
		{name: "vendor key of the wrong size", data: good, keys: []ed25519.PublicKey{vendorPub[:31]}, want: ErrKeyType},
		{name: "a usage export", data: usage, want: ErrWrongDocument, words: []string{"usage export"}},
		{name: "a usage export's signature under a license label", data: func() []byte {
			_, r, tok := parts(t, usage)
			return armour(label, r, tok)
		}(), want: ErrWrongDocument, words: []string{"typ"}},
		{name: "another site's file", data: signSample(t, func(f *File) { f.SiteKey = NewJWK(site2Pub) }), want: ErrWrongSite,
			words: []string{KeyID(site2Pub), KeyID(sitePub)}},
		{name: "bound to another hostname", data: signSample(t, func(f *File) { f.Host = &HostBinding{BindHostname, "lic2.plant.example"} }),
			want: ErrWrongHost, words: []string{"lic2.plant.example", "lic1.plant.example"}},
		{name: "bound to another machine-id", data: signSample(t, func(f *File) {
			f.Host = &HostBinding{BindMachineID, "ffffffffffffffffffffffffffffffff"}
		}), want: ErrWrongHost},
		{name: "bound to a host this seatd cannot name", data: signSample(t, func(f *File) {
			f.Host = &HostBinding{BindMachineID, testSite.MachineID}
		}), site: Site{Key: sitePub}, want: ErrWrongHost, words: []string{"unknown"}},
		{name: "past not_after", data: good, now: sampleFile().NotAfter, want: ErrExpired},
		{name: "an extra field", data: rawDocument(t, kindLicenseFile, vendorPriv, payloadOf(t, func(m map[string]any) { m["max_hosts"] = 3 })),
			want: ErrUnknownField, words: []string{"max_hosts"}},
		{name: "an extra field in a license", data: rawDocument(t, kindLicenseFile, vendorPriv, payloadOf(t, func(m map[string]any) {
			m["licenses"].([]any)[0].(map[string]any)["unlimited"] = true
		})), want: ErrUnknownField, words: []string{"unlimited"}},
		{name: "an extra JWS header", data: armour(label, readable, extraHeader(t, readable)), want: ErrMalformed, words: []string{"JWS header"}},
		{name: "a field twice", data: rawDocument(t, kindLicenseFile, vendorPriv, strings.Replace(payloadOf(t, nil), `"serial":7`, `"serial":7,"serial":9`, 1)),
			want: ErrMalformed, words: []string{"serial", "twice"}},
		{name: "a field in capitals", data: rawDocument(t, kindLicenseFile, vendorPriv, strings.Replace(payloadOf(t, nil), `"serial":7`, `"serial":7,"SERIAL":9`, 1)),
			want: ErrMalformed, words: []string{"SERIAL"}},
		{name: "a version as a number", data: rawDocument(t, kindLicenseFile, vendorPriv, strings.Replace(payloadOf(t, nil), `"version":"2024.2"`, `"version":2024.2`, 1)),
			want: ErrMalformed, words: []string{"licenses.grants.version"}},
		{name: "signed but invalid", data: rawDocument(t, kindLicenseFile, vendorPriv, payloadOf(t, func(m map[string]any) {
			m["licenses"].([]any)[0].(map[string]any)["seats"] = 0
		})), want: ErrInvalid, words: []string{"licenses[0].seats"}},
		{name: "signed but its site key is not Ed25519", data: rawDocument(t, kindLicenseFile, vendorPriv, payloadOf(t, func(m map[string]any) {
			m["site_key"].(map[string]any)["crv"] = "X25519"
		})), want: ErrKeyType, words: []string{"site_key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := c.keys
			if keys == nil {
				keys = []ed25519.PublicKey{vendorPub}
			}
			site := c.site
			if site.Key == nil {
				site = testSite
			}
			now := c.now
			if now.IsZero() {
				now = during
			}
			got, err := Verify(c.data, keys, site, now)
			requireRefused(t, err, c.want, c.words...)
			require.Nil(t, got)
			for _, other := range []error{ErrMalformed, ErrWrongDocument, ErrUnknownField, ErrKeyType, ErrUnknownKey, ErrBadSignature,
				ErrTampered, ErrInvalid, ErrWrongSite, ErrWrongHost, ErrExpired} {
				if other != c.want {
					require.NotErrorIs(t, err, other, "one refusal, one name: %v", err)
				}
			}
		})
	}
}

func TestVerifyNamesTheFieldOfAnInvalidFile(t *testing.T) {
	data := rawDocument(t, kindLicenseFile, vendorPriv, payloadOf(t, func(m map[string]any) {
		m["licenses"].([]any)[0].(map[string]any)["grants"].([]any)[1].(map[string]any)["feature"] = "-sim"
	}))
	_, err := Open(data, []ed25519.PublicKey{vendorPub})
	var se *server.Error
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, "licenses[0].grants[1].feature", se.Field)
}

func TestHostBindingAccepts(t *testing.T) {
	byName := signSample(t, func(f *File) { f.Host = &HostBinding{BindHostname, "LIC1.plant.example"} })
	_, err := Verify(byName, []ed25519.PublicKey{vendorPub}, testSite, during)
	require.NoError(t, err, "hostnames compare without case")

	byID := signSample(t, func(f *File) { f.Host = &HostBinding{BindMachineID, testSite.MachineID} })
	s := testSite
	s.MachineID = strings.ToUpper(s.MachineID) + "\n" // as read from a file
	_, err = Verify(byID, []ed25519.PublicKey{vendorPub}, s, during)
	require.NoError(t, err)
}

// TestSignRefusesWhatSeatdWould: a vendor cannot sign a file seatd would
// refuse to serve; each bad value names its field.
func TestSignRefusesWhatSeatdWould(t *testing.T) {
	lic := func(f *File) *License { return &f.Licenses[0] }
	grant := func(f *File) *Grant { return &f.Licenses[0].Grants[0] }
	cases := []struct {
		field string
		edit  func(*File)
	}{
		{"serial", func(f *File) { f.Serial = 0 }},
		{"serial", func(f *File) { f.Serial = MaxSerial + 1 }},
		{"customer", func(f *File) { f.Customer = "  " }},
		{"customer", func(f *File) { f.Customer = "Acme\x00" }},
		{"customer", func(f *File) { f.Customer = "Acme\u202e" }},
		{"customer", func(f *File) { f.Customer = strings.Repeat("a", 257) }},
		{"issued_at", func(f *File) { f.IssuedAt = time.Time{} }},
		{"not_after", func(f *File) { f.NotAfter = time.Time{} }},
		{"not_after", func(f *File) { f.NotAfter = f.IssuedAt }},
		{"site_key.x", func(f *File) { f.SiteKey.X = "AAAA" }},
		{"site_key.kid", func(f *File) { f.SiteKey.Kid = KeyID(site2Pub) }},
		{"host.kind", func(f *File) { f.Host = &HostBinding{Kind: "ip", Value: "10.0.0.1"} }},
		{"host.value", func(f *File) { f.Host = &HostBinding{BindHostname, "lic 1"} }},
		{"host.value", func(f *File) { f.Host = &HostBinding{BindMachineID, "0123"} }},
		{"host.value", func(f *File) { f.Host = &HostBinding{BindMachineID, strings.ToUpper(testSite.MachineID)} }},
		{"licenses", func(f *File) { f.Licenses = nil }},
		{"licenses", func(f *File) { f.Licenses = make([]License, MaxLicenses+1) }},
		{"licenses[0].id", func(f *File) { lic(f).ID = "" }},
		{"licenses[0].id", func(f *File) { lic(f).ID = "cad.2024" }},
		{"licenses[0].id", func(f *File) { lic(f).ID = "CAD" }},
		{"licenses[1].id", func(f *File) { f.Licenses[1].ID = "cad" }},
		{"licenses[0].name", func(f *File) { lic(f).Name = "a\nb" }},
		{"licenses[0].seats", func(f *File) { lic(f).Seats = 0 }},
		{"licenses[0].seats", func(f *File) { lic(f).Seats = server.MaxSeats + 1 }},
		{"licenses[0].overdraft", func(f *File) { lic(f).Overdraft = -1 }},
		{"licenses[0].lease_ttl", func(f *File) { lic(f).LeaseTTL = 0 }},
		{"licenses[0].lease_ttl", func(f *File) { lic(f).LeaseTTL = Duration(server.MaxLeaseTTL + time.Second) }},
		{"licenses[0].max_borrow_duration", func(f *File) { lic(f).MaxBorrowDuration = Duration(server.MaxBorrowDuration + time.Hour) }},
		{"licenses[0].max_borrowed_seats", func(f *File) { lic(f).MaxBorrowedSeats = 21 }},
		{"licenses[0].max_borrowed_seats", func(f *File) { lic(f).MaxBorrowedSeats = -1 }},
		{"licenses[0].expires_at", func(f *File) { lic(f).ExpiresAt = f.IssuedAt.Add(-time.Hour) }},
		{"licenses[0].leasing_strategy", func(f *File) { lic(f).LeasingStrategy = "site" }},
		{"licenses[0].grants", func(f *File) {
			lic(f).Grants = make([]Grant, server.MaxGrantsPerLicense+1)
		}},
		{"licenses[0].grants[0].id", func(f *File) { grant(f).ID = "" }},
		{"licenses[0].grants[1].id", func(f *File) { lic(f).Grants[1].ID = grant(f).ID }},
		// Two ids whose seatd grant ids (GrantID) would be one.
		{"licenses[0].grants[1].id", func(f *File) { grant(f).ID, lic(f).Grants[1].ID = "g19493", "g48715" }},
		{"licenses[0].grants[0].feature", func(f *File) { grant(f).Feature = "" }},
		{"licenses[0].grants[0].feature", func(f *File) { grant(f).Feature = "render!" }},
		{"licenses[0].grants[0].version", func(f *File) { grant(f).Version = "2024.x" }},
		{"licenses[0].grants[0].version", func(f *File) { grant(f).Version = "v2024" }},
		{"licenses[0].grants[0].seats", func(f *File) { grant(f).Seats = -1 }},
		{"licenses[0].grants[0].overdraft", func(f *File) { grant(f).Overdraft = server.MaxSeats + 1 }},
		{"licenses[0].grants[0].max_borrow_duration", func(f *File) { grant(f).MaxBorrowDuration = -1 }},
		{"licenses[0].grants[0].max_borrowed_seats", func(f *File) { grant(f).MaxBorrowedSeats = 6 }},
		{"licenses[0].grants[0].expires_at", func(f *File) { grant(f).StartsAt = grant(f).ExpiresAt }},
		{"licenses[0].grants[0].expires_at", func(f *File) { grant(f).ExpiresAt = f.IssuedAt }},
	}
	for _, c := range cases {
		f := sampleFile()
		c.edit(f)
		data, err := Sign(f, vendorPriv)
		require.Nil(t, data, c.field)
		var se *server.Error
		if errors.Is(err, ErrKeyType) {
			t.Fatalf("%s: %v", c.field, err)
		}
		requireRefused(t, err, ErrInvalid)
		require.True(t, errors.As(err, &se), "%s: %v", c.field, err)
		require.Equal(t, c.field, se.Field, "%v", err)
		require.Equal(t, server.EINVALID, se.Code)
	}

	f := sampleFile()
	f.SiteKey.Crv = "P-256"
	_, err := Sign(f, vendorPriv)
	requireRefused(t, err, ErrKeyType, "site_key")

	_, err = Sign(sampleFile(), vendorPriv[:32])
	requireRefused(t, err, ErrKeyType)
}

func TestReplaces(t *testing.T) {
	cur := sampleFile()
	newer := sampleFile()
	newer.Serial, newer.Licenses[0].Seats = 8, 10 // fewer seats: still a valid renewal
	require.NoError(t, Replaces(cur, newer))

	older := sampleFile()
	older.Serial, older.Licenses[0].Seats = 6, 500
	requireRefused(t, Replaces(cur, older), ErrNotNewer, "serial 6", "serial 7")

	sameSerial := sampleFile()
	sameSerial.Licenses[0].Seats = 500
	requireRefused(t, Replaces(cur, sameSerial), ErrNotNewer)
	require.NotErrorIs(t, Replaces(cur, sameSerial), ErrSameFile)

	requireRefused(t, Replaces(cur, sampleFile()), ErrSameFile)
}

func TestInspectReadsWithoutTrusting(t *testing.T) {
	byOther, err := Sign(sampleFile(), otherPriv)
	require.NoError(t, err)
	in, err := Inspect(byOther)
	require.NoError(t, err)
	require.Equal(t, KeyID(otherPub), in.VendorKeyID)
	require.EqualValues(t, 7, in.File.Serial)
	require.NoError(t, in.Problem)

	invalidFile := rawDocument(t, kindLicenseFile, vendorPriv, payloadOf(t, func(m map[string]any) { m["serial"] = 0 }))
	in, err = Inspect(invalidFile)
	require.NoError(t, err)
	requireRefused(t, in.Problem, ErrInvalid, "serial")

	edited := strings.Replace(string(byOther), `"seats": 20`, `"seats": 200`, 1)
	_, err = Inspect([]byte(edited))
	requireRefused(t, err, ErrTampered)
}

func TestOpenTokenRefuses(t *testing.T) {
	s, err := Open(signSample(t, nil), []ed25519.PublicKey{vendorPub})
	require.NoError(t, err)
	_, err = OpenToken(s.Token, []ed25519.PublicKey{otherPub})
	requireRefused(t, err, ErrUnknownKey)
	_, err = OpenToken(s.Token[:len(s.Token)-4], []ed25519.PublicKey{vendorPub})
	require.Error(t, err)
	_, err = OpenToken(strings.Split(s.Token, ".")[0], []ed25519.PublicKey{vendorPub})
	requireRefused(t, err, ErrMalformed)
}

func TestKeyFiles(t *testing.T) {
	privPEM, err := MarshalPrivateKey(vendorPriv)
	require.NoError(t, err)
	require.Contains(t, string(privPEM), "-----BEGIN PRIVATE KEY-----")
	priv, err := ParsePrivateKey(privPEM)
	require.NoError(t, err)
	require.True(t, priv.Equal(vendorPriv))

	pubPEM, err := MarshalPublicKey(vendorPub)
	require.NoError(t, err)
	otherPEM, err := MarshalPublicKey(otherPub)
	require.NoError(t, err)
	jwk, err := json.Marshal(jose.JSONWebKey{Key: vendorPub, KeyID: KeyID(vendorPub)})
	require.NoError(t, err)
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: otherPub}, {Key: vendorPub}}})
	require.NoError(t, err)
	for name, c := range map[string]struct {
		data []byte
		want []ed25519.PublicKey
	}{
		"pem":       {pubPEM, []ed25519.PublicKey{vendorPub}},
		"two pem":   {append(append([]byte{}, otherPEM...), pubPEM...), []ed25519.PublicKey{otherPub, vendorPub}},
		"jwk":       {jwk, []ed25519.PublicKey{vendorPub}},
		"jwks":      {jwks, []ed25519.PublicKey{otherPub, vendorPub}},
		"base64url": {[]byte(NewJWK(vendorPub).X + "\n"), []ed25519.PublicKey{vendorPub}},
	} {
		got, err := ParsePublicKeys(c.data)
		require.NoError(t, err, name)
		require.Equal(t, c.want, got, name)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	require.NoError(t, err)
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaDER})
	rsaJWK, err := json.Marshal(jose.JSONWebKey{Key: &rsaKey.PublicKey})
	require.NoError(t, err)
	rsaPrivDER, err := x509.MarshalPKCS8PrivateKey(rsaKey)
	require.NoError(t, err)
	rsaPrivPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaPrivDER})
	privJWK, err := json.Marshal(jose.JSONWebKey{Key: vendorPriv})
	require.NoError(t, err)

	for name, c := range map[string]struct {
		data []byte
		want error
	}{
		"rsa pem":                {rsaPEM, ErrKeyType},
		"rsa jwk":                {rsaJWK, ErrKeyType},
		"ed25519 and rsa pem":    {append(append([]byte{}, pubPEM...), rsaPEM...), ErrKeyType},
		"a private key as jwk":   {privJWK, ErrKeyType},
		"a private key as pem":   {privPEM, ErrMalformed},
		"empty":                  {nil, ErrMalformed},
		"pem cut short":          {pubPEM[:len(pubPEM)-10], ErrMalformed},
		"31 bytes":               {[]byte(NewJWK(vendorPub).X[:41]), ErrMalformed},
		"a license file instead": {signSample(t, nil), ErrMalformed},
	} {
		_, err := ParsePublicKeys(c.data)
		requireRefused(t, err, c.want)
		require.NotContains(t, err.Error(), "PRIVATE KEY-----\n", name)
	}

	got, err := Ed25519Keys(vendorPub, otherPub)
	require.NoError(t, err)
	require.Equal(t, []ed25519.PublicKey{vendorPub, otherPub}, got)
	_, err = Ed25519Keys(vendorPub, &rsaKey.PublicKey)
	requireRefused(t, err, ErrKeyType, "key 1")

	_, err = ParsePrivateKey(rsaPrivPEM)
	requireRefused(t, err, ErrKeyType)
	_, err = ParsePrivateKey(pubPEM)
	requireRefused(t, err, ErrMalformed)
	_, err = ParsePrivateKey(privPEM[:40])
	requireRefused(t, err, ErrMalformed)
}

// splitToken is a compact JWS's three parts.
func splitToken(token string) (head, payload, sig string) {
	p := strings.Split(token, ".")
	return p[0], p[1], p[2]
}

func compactJSON(t *testing.T, readable string) string {
	t.Helper()
	var v json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(readable), &v))
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

// extraHeader signs the readable copy's payload with the vendor's key and
// one more JWS header than seatd writes.
func extraHeader(t *testing.T, readable string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: vendorPriv, KeyID: KeyID(vendorPub)}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(kindLicenseFile.typ)).WithHeader("seats", "unlimited"))
	require.NoError(t, err)
	jws, err := signer.Sign([]byte(compactJSON(t, readable)))
	require.NoError(t, err)
	token, err := jws.CompactSerialize()
	require.NoError(t, err)
	return token
}
