package client

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// testVendor signs license files as seatctl vendor sign does (a JWS of
// typ seatd-license-file-v1), written here without seatd's server code.
type testVendor struct{ priv ed25519.PrivateKey }

func newTestVendor() *testVendor {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return &testVendor{priv: priv}
}

func (v *testVendor) pub() ed25519.PublicKey { return v.priv.Public().(ed25519.PublicKey) }

// pem is the vendor's public key as vendor.pub holds it.
func (v *testVendor) pem() []byte {
	der, err := x509.MarshalPKIXPublicKey(v.pub())
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// siteSigner is a certificate signer whose kid is its key's, as seatd's
// site key is.
func siteSigner() *testSigner {
	s := newTestSigner("")
	s.kid = keyID(s.priv.Public().(ed25519.PublicKey))
	return s
}

// filePayload is a license file's terms for site: serial, the license
// "cad" with a grant of feature render, valid from an hour ago for a day.
func filePayload(site *testSigner, serial int64) map[string]any {
	now := time.Now().UTC().Truncate(time.Second)
	return map[string]any{
		"serial": serial, "customer": "Acme", "issued_at": now.Add(-time.Hour).Format(time.RFC3339),
		"not_after": now.Add(24 * time.Hour).Format(time.RFC3339),
		"site_key": map[string]any{
			"kty": "OKP", "crv": "Ed25519", "kid": site.kid,
			"x": base64.RawURLEncoding.EncodeToString(site.priv.Public().(ed25519.PublicKey)),
		},
		"licenses": []any{map[string]any{
			"id": "cad", "name": "ACME CAD", "seats": 2, "lease_ttl": "1m0s",
			"grants": []any{map[string]any{"id": "render-2024", "feature": "render", "seats": 1}},
		}},
		"a_later_field": true, // a client reads only what it needs
	}
}

// sign signs payload as a license file's JWS, with the typ given.
func (v *testVendor) sign(payload map[string]any, typ string) string {
	body, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: v.priv, KeyID: keyID(v.pub())}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		panic(err)
	}
	obj, err := js.Sign(body)
	if err != nil {
		panic(err)
	}
	token, err := obj.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return token
}

// armour writes token as site.lic is written: the readable copy, then
// the JWS wrapped at 64 columns.
func armour(token string) []byte {
	var b strings.Builder
	b.WriteString("-----BEGIN SEATD LICENSE FILE-----\n{\"readable\": \"not read by the client\"}\n-----BEGIN SEATD SIGNATURE-----\n")
	for len(token) > 64 {
		b.WriteString(token[:64] + "\n")
		token = token[64:]
	}
	b.WriteString(token + "\n-----END SEATD SIGNATURE-----\n")
	return []byte(b.String())
}

// lockedFake is the fake's locked mode: the file it serves, and what its
// certificates say of it.
type lockedFake struct {
	file    string // the JWS GetSignedLicenseFile answers
	serial  int64  // file_serial in certificates
	license string // file_license_id in certificates
	fetches atomic.Int32
}

// name adds what a locked seatd's certificate says of its file.
func (l *lockedFake) name(claims map[string]any) {
	claims["license_id"], claims["file_serial"], claims["file_license_id"] = "lic_"+l.license, l.serial, l.license
}

func (f *fakeServer) GetSignedLicenseFile(context.Context, *seatdv1.GetSignedLicenseFileRequest) (*seatdv1.GetSignedLicenseFileResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locked == nil {
		return nil, reasonErr(codes.FailedPrecondition, "LICENSE_FILE_NOT_CONFIGURED")
	}
	f.locked.fetches.Add(1)
	return &seatdv1.GetSignedLicenseFileResponse{LicenseFile: f.locked.file, Serial: f.locked.serial}, nil
}

// chained is a client with VendorKeys of a fake in locked mode whose
// site key signs certificates naming file serial 1.
func chained(t *testing.T, o Options, configure func(f *fakeServer)) (*testBundle, *testVendor) {
	t.Helper()
	v, site := newTestVendor(), siteSigner()
	keys, err := ParseVendorKeys(v.pem())
	require.NoError(t, err)
	o.VendorKeys = keys
	return setup(t, o, func(f *fakeServer) {
		f.signer = site
		f.locked = &lockedFake{file: v.sign(filePayload(site, 1), licenseFileType), serial: 1, license: "cad"}
		if configure != nil {
			configure(f)
		}
	}), v
}

func TestParseVendorKeys(t *testing.T) {
	a, b := newTestVendor(), newTestVendor()
	jwk := func(v *testVendor) string {
		return `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(v.pub()) + `"}`
	}
	for name, data := range map[string]string{
		"PEM":              string(a.pem()),
		"two PEM blocks":   string(a.pem()) + string(b.pem()),
		"JWK":              jwk(a),
		"JWKS":             `{"keys":[` + jwk(a) + `,` + jwk(b) + `]}`,
		"bare base64url":   base64.RawURLEncoding.EncodeToString(a.pub()) + "\n",
		"padded base64url": base64.URLEncoding.EncodeToString(a.pub()),
	} {
		keys, err := ParseVendorKeys([]byte(data))
		require.NoError(t, err, name)
		require.Contains(t, keys.KeyIDs(), keyID(a.pub()), name)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a wrong key type, never used to sign
	require.NoError(t, err)
	rsaDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	require.NoError(t, err)
	privDER, err := x509.MarshalPKCS8PrivateKey(a.priv)
	require.NoError(t, err)
	for name, data := range map[string]string{
		"empty":               " \n",
		"RSA":                 string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaDER})),
		"a private key":       string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})),
		"a private JWK":       `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(a.pub()) + `","d":"` + base64.RawURLEncoding.EncodeToString(a.priv.Seed()) + `"}`,
		"PEM cut short":       string(a.pem())[:40],
		"neither":             "hello",
		"a 31-byte key":       base64.RawURLEncoding.EncodeToString(a.pub()[:31]),
		"PEM then other text": string(a.pem()) + "trailing",
	} {
		_, err := ParseVendorKeys([]byte(data))
		require.Error(t, err, name)
	}
}

// TestVerifyLicenseFile: the file (armoured or its JWS alone) verifies
// with the vendor's key; each refusal is named.
func TestVerifyLicenseFile(t *testing.T) {
	v, site := newTestVendor(), siteSigner()
	keys, err := ParseVendorKeys(v.pem())
	require.NoError(t, err)
	token := v.sign(filePayload(site, 7), licenseFileType)
	now := time.Now()

	for name, data := range map[string][]byte{"its JWS": []byte(token), "site.lic": armour(token), "with CRLF": []byte(strings.ReplaceAll(string(armour(token)), "\n", "\r\n"))} {
		f, err := keys.VerifyLicenseFile(data, now)
		require.NoError(t, err, name)
		require.EqualValues(t, 7, f.Serial)
		require.Equal(t, "Acme", f.Customer)
		require.Equal(t, site.kid, f.SiteKeyID)
		require.Equal(t, keyID(v.pub()), f.VendorKeyID)
		require.Equal(t, token, f.Token, "%s: the JWS, to store", name)
		require.Equal(t, []FileLicense{{ID: "cad", Name: "ACME CAD", Features: []string{"render"}}}, f.Licenses)
		require.NotNil(t, f.License("lic_cad"))
		require.Nil(t, f.License("cad"))
	}

	payload := func(edit func(map[string]any)) map[string]any {
		p := filePayload(site, 7)
		edit(p)
		return p
	}
	parts := strings.Split(token, ".")
	other := strings.Split(v.sign(payload(func(p map[string]any) { p["serial"] = 8 }), licenseFileType), ".")
	for name, c := range map[string]struct {
		data string
		want error
	}{
		"another vendor's":                    {newTestVendor().sign(filePayload(site, 7), licenseFileType), ErrLicenseFileInvalid},
		"another payload under its signature": {parts[0] + "." + other[1] + "." + parts[2], ErrLicenseFileInvalid},
		"a usage export's typ":                {v.sign(filePayload(site, 7), "seatd-usage-export-v1"), ErrLicenseFileInvalid},
		"a lease certificate":                 {site.certificate(forgeNothing, certClaims("l", "fp", now.Add(time.Hour), false, "n")), ErrLicenseFileInvalid},
		"cut short":                           {token[:len(token)/2], ErrLicenseFileInvalid},
		"not a JWS":                           {"hello", ErrLicenseFileInvalid},
		"a site key of another kid":           {v.sign(payload(func(p map[string]any) { p["site_key"].(map[string]any)["kid"] = "other" }), licenseFileType), ErrLicenseFileInvalid},
		"an RSA site key":                     {v.sign(payload(func(p map[string]any) { p["site_key"].(map[string]any)["kty"] = "RSA" }), licenseFileType), ErrLicenseFileInvalid},
		"no serial":                           {v.sign(payload(func(p map[string]any) { delete(p, "serial") }), licenseFileType), ErrLicenseFileInvalid},
		"terms that do not decode":            {v.sign(payload(func(p map[string]any) { p["serial"] = "seven" }), licenseFileType), ErrLicenseFileInvalid},
		"past its not_after":                  {v.sign(payload(func(p map[string]any) { p["not_after"] = now.Add(-time.Second).UTC().Format(time.RFC3339) }), licenseFileType), ErrLicenseFileExpired},
	} {
		_, err := keys.VerifyLicenseFile([]byte(c.data), now)
		require.ErrorIs(t, err, c.want, name)
		require.ErrorIs(t, err, ErrBadCertificate, name)
		var ce *CertificateError
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, c.want, ce.Chain, name)
	}
}

// TestLicenseFileVerify: the last links of the chain, a certificate
// checked against the file; a certificate signed by a site key the file
// does not name is refused, and every other failure is named.
func TestLicenseFileVerify(t *testing.T) {
	v, site := newTestVendor(), siteSigner()
	keys, err := ParseVendorKeys(v.pem())
	require.NoError(t, err)
	f, err := keys.VerifyLicenseFile([]byte(v.sign(filePayload(site, 7), licenseFileType)), time.Now())
	require.NoError(t, err)
	deadline := time.Now().Add(time.Hour)
	cert := func(s *testSigner, edit func(map[string]any)) string {
		c := certClaims("lease-1", "fp", deadline, true, "n")
		(&lockedFake{serial: 7, license: "cad"}).name(c)
		if edit != nil {
			edit(c)
		}
		return s.certificate(forgeNothing, c)
	}

	claims, err := f.Verify(cert(site, nil), time.Now())
	require.NoError(t, err)
	require.EqualValues(t, 7, claims.FileSerial)
	require.Equal(t, "cad", claims.FileLicenseID)
	require.Equal(t, "lic_cad", claims.LicenseID)
	require.Equal(t, site.kid, claims.KeyID)
	require.NoError(t, claims.CheckHolder(AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}))
	_, err = f.Verify(cert(site, func(c map[string]any) { c["feature"] = "render" }), time.Now())
	require.NoError(t, err, "a feature the file grants")

	stranger := siteSigner()
	forgedUnderKid := newTestSigner(site.kid)
	for name, c := range map[string]struct {
		cert string
		want error
	}{
		"signed by a site key the file does not name": {cert(stranger, nil), ErrWrongSiteKey},
		"another key under the site key's kid":        {cert(forgedUnderKid, nil), ErrWrongSiteKey},
		"one byte changed":                            {site.sign([]byte(`{"iss":"seatd","sub":"l","lease_id":"l","exp":1}`), true), ErrWrongSiteKey},
		"another serial":                              {cert(site, func(c map[string]any) { c["file_serial"] = 6 }), ErrWrongLicenseFile},
		"no serial (not locked mode)":                 {cert(site, func(c map[string]any) { delete(c, "file_serial") }), ErrWrongLicenseFile},
		"a license the file does not grant":           {cert(site, func(c map[string]any) { c["license_id"], c["file_license_id"] = "lic_viewer", "viewer" }), ErrLicenseNotInFile},
		"a file id that is not its license's":         {cert(site, func(c map[string]any) { c["file_license_id"] = "viewer" }), ErrLicenseNotInFile},
		"a feature the file does not grant":           {cert(site, func(c map[string]any) { c["feature"] = "sim" }), ErrLicenseNotInFile},
		"signed after the file's not_after":           {cert(site, func(c map[string]any) { c["iat"] = f.NotAfter.Unix() }), ErrLicenseFileExpired},
	} {
		_, err := f.Verify(c.cert, time.Now())
		require.ErrorIs(t, err, c.want, name)
		require.ErrorIs(t, err, ErrBadCertificate, name)
	}
	_, err = f.Verify(cert(site, nil), f.NotAfter)
	require.ErrorIs(t, err, ErrLicenseFileExpired, "checked at the file's not_after")
	_, err = f.Verify(cert(site, nil), deadline)
	require.ErrorIs(t, err, ErrCertificateExpired)
	require.NotErrorIs(t, err, ErrWrongSiteKey)

	// The site's returned list verifies with the site key the file names.
	list := site.returnedList(returnedType, listClaims(time.Now(), "lease-1"))
	got, err := f.SigningKeys().VerifyReturned(list, "default", 0, time.Now())
	require.NoError(t, err)
	require.True(t, got.Returned("lease-1"))
}

// TestVerifyChainOffline: from vendor.pub, site.lic (or the JWS a lease
// gave) and the stored certificate alone.
func TestVerifyChainOffline(t *testing.T) {
	v, site := newTestVendor(), siteSigner()
	token := v.sign(filePayload(site, 3), licenseFileType)
	c := certClaims("lease-1", "fp", time.Now().Add(time.Hour), true, "n")
	(&lockedFake{serial: 3, license: "cad"}).name(c)
	cert := site.certificate(forgeNothing, c)
	for _, file := range [][]byte{[]byte(token), armour(token)} {
		claims, err := VerifyChainOffline(cert, file, v.pem(), time.Now())
		require.NoError(t, err)
		require.EqualValues(t, 3, claims.FileSerial)
	}
	_, err := VerifyChainOffline(cert, []byte(token), newTestVendor().pem(), time.Now())
	require.ErrorIs(t, err, ErrLicenseFileInvalid, "another vendor")
	_, err = VerifyChainOffline(siteSigner().certificate(forgeNothing, c), []byte(token), v.pem(), time.Now())
	require.ErrorIs(t, err, ErrWrongSiteKey)
	_, err = VerifyChainOffline(cert, []byte(token), []byte("not a key"), time.Now())
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrBadCertificate, "a product built with a broken vendor.pub: its own error")
}

// TestVendorKeysVerifyEveryAnswer: a client with VendorKeys fetches the
// file once, checks every answer's certificate through it (acquire,
// heartbeats on the stream or unary), and names the file on the lease; a
// renewal (a certificate naming a newer serial) fetches the file again
// and the lease goes on.
func TestVendorKeysVerifyEveryAnswer(t *testing.T) {
	for _, unary := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream", true: "unary"}[unary], func(t *testing.T) {
			b, v := chained(t, DefaultOptions(), func(f *fakeServer) { f.streamUnimplemented = unary })
			l := acquire(t, b)
			first := b.fake.locked.file
			require.Equal(t, first, l.LicenseFile())
			eventually(t, func() bool { return b.fake.beats(l.ID()) >= 3 }, "heartbeats")
			requireNotLost(t, l)
			require.EqualValues(t, 1, b.fake.locked.fetches.Load(), "the file is fetched once")

			renewal := v.sign(filePayload(b.fake.signer, 2), licenseFileType)
			b.fake.set(func(f *fakeServer) { f.locked.file, f.locked.serial = renewal, 2 })
			eventually(t, func() bool { return l.LicenseFile() == renewal }, "the renewal fetched and named")
			n := b.fake.beats(l.ID())
			eventually(t, func() bool { return b.fake.beats(l.ID()) >= n+2 }, "heartbeats go on")
			requireNotLost(t, l)
			require.EqualValues(t, 2, b.fake.locked.fetches.Load(), "once per serial")

			claims, err := VerifyChainOffline(l.Certificate(), []byte(l.LicenseFile()), v.pem(), time.Now())
			require.NoError(t, err, "what the lease holds verifies offline")
			require.EqualValues(t, 2, claims.FileSerial)
			require.NoError(t, l.Release(testContext(t)))
		})
	}
}

// TestVendorKeysRefuse: a seat whose certificate does not chain to the
// vendor's key is no seat (Acquire fails, the seat given back), and a
// kept lease whose heartbeat's does not is lost, naming the link.
func TestVendorKeysRefuse(t *testing.T) {
	stranger := siteSigner()
	for name, c := range map[string]struct {
		configure func(f *fakeServer, v *testVendor)
		want      error
	}{
		"a site key the file does not name": {func(f *fakeServer, _ *testVendor) { f.signer = stranger }, ErrWrongSiteKey},
		"a file of another vendor": {func(f *fakeServer, _ *testVendor) {
			f.locked.file = newTestVendor().sign(filePayload(f.signer, 1), licenseFileType)
		}, ErrLicenseFileInvalid},
		"a file for another site key": {func(f *fakeServer, v *testVendor) {
			f.locked.file = v.sign(filePayload(stranger, 1), licenseFileType)
		}, ErrWrongSiteKey},
		"no file (not locked mode)":              {func(f *fakeServer, _ *testVendor) { f.locked = nil }, ErrLicenseFileInvalid},
		"a file that does not grant the license": {func(f *fakeServer, _ *testVendor) { f.locked.license = "viewer" }, ErrLicenseNotInFile},
		"certificates naming no file":            {func(f *fakeServer, _ *testVendor) { f.locked.serial = 0 }, ErrWrongLicenseFile},
		"certificates naming another serial than the file in force": {func(f *fakeServer, v *testVendor) {
			f.locked.file = v.sign(filePayload(stranger, 1), licenseFileType)
			f.signer = stranger
			f.locked.serial = 2 // the certificates name 2, the file fetched is 1
		}, ErrWrongLicenseFile},
	} {
		t.Run(name, func(t *testing.T) {
			b, v := chained(t, DefaultOptions(), nil)
			b.fake.set(func(f *fakeServer) { c.configure(f, v) })
			_, err := b.client.Acquire(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"})
			requireBadCertificate(t, err)
			require.ErrorIs(t, err, c.want)
			require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.live() }), "the refused seat is given back")
		})
	}

	t.Run("a heartbeat signed by another site key", func(t *testing.T) {
		b, _ := chained(t, DefaultOptions(), nil)
		l := acquire(t, b)
		eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "heartbeats")
		b.fake.set(func(f *fakeServer) { f.signer = stranger })
		requireLost(t, l)
		requireBadCertificate(t, l.Err())
		require.ErrorIs(t, l.Err(), ErrWrongSiteKey)
	})
}
