package e2e

// Lease certificates end to end: a certificate seatd hands out verifies
// with the JWKS it publishes at /v1/tenants/{tenant}/jwks.json (fetched
// with plain net/http, no credentials) by an implementation other than
// seatd's: Node's built-in crypto (createPublicKey from the JWK, verify
// with the Ed25519 key). It fails with another tenant's keys, with one
// byte changed, with another nonce; a rotation keeps old certificates
// verifying until they expire, and a JWKS fetched before the rotation
// verifies the certificates signed after it (the next key was in it), but
// not after a second rotation. Sealed signing keys need their encryption
// key at start.

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// verifyCertJS checks certificates as a product would, with nothing but
// Node's crypto: stdin is a JSON array of {token, jwks, nonce, now}, stdout
// the same number of {ok, reason, claims}. now is Unix seconds.
const verifyCertJS = `
const crypto = require('node:crypto');
const b64 = (s) => Buffer.from(s, 'base64url');
function check({token, jwks, nonce, now}) {
  const parts = token.split('.');
  if (parts.length !== 3) return {ok: false, reason: 'not a compact JWS'};
  const header = JSON.parse(b64(parts[0]).toString('utf8'));
  if (header.alg !== 'EdDSA') return {ok: false, reason: 'alg ' + header.alg};
  const jwk = (jwks.keys || []).find((k) => k.kid === header.kid);
  if (!jwk) return {ok: false, reason: 'kid not in the JWKS'};
  const key = crypto.createPublicKey({key: jwk, format: 'jwk'});
  const data = Buffer.from(parts[0] + '.' + parts[1], 'ascii');
  if (!crypto.verify(null, data, key, b64(parts[2]))) return {ok: false, reason: 'bad signature'};
  const claims = JSON.parse(b64(parts[1]).toString('utf8'));
  if (claims.nonce !== nonce) return {ok: false, reason: 'nonce', claims};
  if (!(now < claims.exp)) return {ok: false, reason: 'expired', claims};
  return {ok: true, reason: '', claims};
}
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  const out = JSON.parse(input).map((c) => { try { return check(c); } catch (e) { return {ok: false, reason: 'error: ' + e.message}; } });
  process.stdout.write(JSON.stringify(out));
});
`

// certCase is one certificate to check with Node.
type certCase struct {
	Name  string          `json:"-"`
	Token string          `json:"token"`
	JWKS  json.RawMessage `json:"jwks"`
	Nonce string          `json:"nonce"`
	Now   int64           `json:"now"`
}

type certVerdict struct {
	OK     bool           `json:"ok"`
	Reason string         `json:"reason"`
	Claims map[string]any `json:"claims"`
}

// nodeVerify checks every case in one run of node.
func nodeVerify(t *testing.T, cases []certCase) []certVerdict {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the certificate tests verify with Node.js (>= 20): install it (make preflight)")
	script := filepath.Join(t.TempDir(), "verify.cjs")
	require.NoError(t, os.WriteFile(script, []byte(verifyCertJS), 0o600))
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	cmd := exec.CommandContext(stepContext(t, unaryTimeout), node, script)
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var verdicts []certVerdict
	require.NoError(t, json.Unmarshal(out, &verdicts), "node said %s", out)
	require.Len(t, verdicts, len(cases))
	return verdicts
}

// fetchJWKS gets a tenant's JWKS with plain net/http, no credentials.
func fetchJWKS(t *testing.T, p *proc, tenant string) json.RawMessage {
	t.Helper()
	resp, err := http.Get(p.url("/v1/tenants/" + tenant + "/jwks.json"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	require.NotEmpty(t, doc.Keys)
	for _, k := range doc.Keys {
		require.Equal(t, []string{"alg", "crv", "kid", "kty", "use", "x"}, slices.Sorted(maps.Keys(k)), "a plain public JWK: %s", body)
		require.Equal(t, "OKP", k["kty"])
		require.Equal(t, "Ed25519", k["crv"])
		require.Equal(t, "sig", k["use"])
		require.Equal(t, "EdDSA", k["alg"])
	}
	return body
}

// jwksKids lists the kids of a JWKS document.
func jwksKids(t *testing.T, doc json.RawMessage) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(doc, &set))
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// certKid is the kid in a certificate's header.
func certKid(t *testing.T, token string) string {
	t.Helper()
	header, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	require.NoError(t, err)
	var h struct {
		Kid string `json:"kid"`
	}
	require.NoError(t, json.Unmarshal(header, &h))
	return h.Kid
}

// changeOneByte returns the token with one byte of its claims changed (the
// fingerprint's first letter), re-encoded so that it still parses.
func changeOneByte(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	i := strings.Index(string(payload), `"fingerprint":"`) + len(`"fingerprint":"`)
	payload[i] ^= 0x01
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}

func randomNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestCertificatesVerifyOutsideSeatd(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testCertificates(t, start(t, options{}), nil)
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		procs := b.startCluster(t, 2, "cert")
		testCertificates(t, procs[0], procs[1])
	})
}

// testCertificates runs the checks on p; other, when set, is another
// instance on the same backend, which must sign with a rotated key within
// its cache TTL.
func testCertificates(t *testing.T, p, other *proc) {
	ctx := testContext(t)
	lic, err := p.admin().CreateLicense(p.asOperator(ctx), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "certs", Seats: 5, LeaseTtl: durationpb.New(time.Hour),
	}})
	require.NoError(t, err)
	key := lic.GetLicense().GetKey()
	nonce := randomNonce()
	acq, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "laptop-1", Nonce: nonce})
	require.NoError(t, err)
	cert := acq.GetLeaseCertificate()
	require.NotEmpty(t, cert)
	jwks := fetchJWKS(t, p, "default")

	tn, err := p.admin().CreateTenant(p.asOperator(ctx), &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "other-" + randomHex(3)}})
	require.NoError(t, err)
	otherJWKS := fetchJWKS(t, p, tn.GetTenant().GetId())
	// Another tenant's key under this certificate's kid: the signature
	// itself must fail, not only the lookup.
	var impostor struct {
		Keys []map[string]any `json:"keys"`
	}
	require.NoError(t, json.Unmarshal(otherJWKS, &impostor))
	impostor.Keys[0]["kid"] = certKid(t, cert)
	impostorJWKS, err := json.Marshal(impostor)
	require.NoError(t, err)

	now := time.Now().Unix()
	cases := []certCase{
		{Name: "as issued", Token: cert, JWKS: jwks, Nonce: nonce, Now: now},
		{Name: "another tenant's JWKS", Token: cert, JWKS: otherJWKS, Nonce: nonce, Now: now},
		{Name: "another tenant's key under its kid", Token: cert, JWKS: impostorJWKS, Nonce: nonce, Now: now},
		{Name: "one byte changed", Token: changeOneByte(t, cert), JWKS: jwks, Nonce: nonce, Now: now},
		{Name: "another nonce", Token: cert, JWKS: jwks, Nonce: randomNonce(), Now: now},
	}
	verdicts := nodeVerify(t, cases)
	require.True(t, verdicts[0].OK, "as issued: %s", verdicts[0].Reason)
	claims := verdicts[0].Claims
	require.Equal(t, "seatd", claims["iss"])
	require.Equal(t, acq.GetLease().GetId(), claims["sub"])
	require.Equal(t, acq.GetLease().GetId(), claims["lease_id"])
	require.Equal(t, "default", claims["tenant_id"])
	require.Equal(t, lic.GetLicense().GetId(), claims["license_id"])
	require.Equal(t, "laptop-1", claims["fingerprint"])
	require.Equal(t, false, claims["borrowed"])
	require.InDelta(t, float64(acq.GetLease().GetExpiresAt().AsTime().Unix()), claims["exp"], 0, "exp: the deadline in whole seconds")
	for i, want := range []string{"", "kid not in the JWKS", "bad signature", "bad signature", "nonce"} {
		if i == 0 {
			continue
		}
		require.False(t, verdicts[i].OK, cases[i].Name)
		require.Equal(t, want, verdicts[i].Reason, cases[i].Name)
	}

	// A rotation: new certificates carry the kid of the next key, which
	// the JWKS fetched before held already; the old certificate keeps
	// verifying with the published JWKS until its deadline.
	oldKid := certKid(t, cert)
	require.Len(t, jwksKids(t, jwks), 2, "the key that signs and the next key")
	require.Equal(t, oldKid, jwksKids(t, jwks)[1])
	rotated := p.do(t, http.MethodPost, "/v1/admin/tenants/default/signing-keys:rotate", p.OperatorKey, map[string]any{}).requireCode(t, http.StatusOK)
	newKid := rotated.str(t, "signingKey.kid")
	require.Equal(t, jwksKids(t, jwks)[0], newKid, "the next key, published before the rotation, signs")
	require.Equal(t, "SIGNING_KEY_STATE_SIGNING", rotated.str(t, "signingKey.state"))
	nonce2 := randomNonce()
	acq2, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "laptop-2", Nonce: nonce2})
	require.NoError(t, err)
	require.Equal(t, newKid, certKid(t, acq2.GetLeaseCertificate()), "the instance that rotated signs with the new key at once")
	beat, err := p.heartbeats().Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: acq.GetLease().GetId(), LeaseToken: acq.GetLeaseToken(), Nonce: nonce2})
	require.NoError(t, err)
	require.Equal(t, newKid, certKid(t, beat.GetLeaseCertificate()), "a heartbeat's certificate too")

	after := fetchJWKS(t, p, "default")
	require.Len(t, jwksKids(t, after), 3)
	newNextKid := jwksKids(t, after)[0]
	require.Equal(t, []string{newKid, oldKid}, jwksKids(t, after)[1:], "a new next key; the old key stays published")
	exp := acq.GetLease().GetExpiresAt().AsTime().Unix()
	verdicts = nodeVerify(t, []certCase{
		{Token: cert, JWKS: after, Nonce: nonce, Now: time.Now().Unix()},
		{Token: cert, JWKS: after, Nonce: nonce, Now: exp - 1},
		{Token: cert, JWKS: after, Nonce: nonce, Now: exp},
		{Token: acq2.GetLeaseCertificate(), JWKS: after, Nonce: nonce2, Now: time.Now().Unix()},
		{Token: beat.GetLeaseCertificate(), JWKS: after, Nonce: nonce2, Now: time.Now().Unix()},
		{Token: acq2.GetLeaseCertificate(), JWKS: jwks, Nonce: nonce2, Now: time.Now().Unix()},
	})
	require.True(t, verdicts[0].OK, "old certificate after the rotation: %s", verdicts[0].Reason)
	require.True(t, verdicts[1].OK, "old certificate a second before its deadline: %s", verdicts[1].Reason)
	require.Equal(t, "expired", verdicts[2].Reason, "old certificate at its deadline")
	require.True(t, verdicts[3].OK, "new certificate: %s", verdicts[3].Reason)
	require.True(t, verdicts[4].OK, "heartbeat certificate: %s", verdicts[4].Reason)
	require.True(t, verdicts[5].OK, "a JWKS fetched before the rotation verifies the certificates signed after it: %s", verdicts[5].Reason)

	if other != nil {
		// Another instance learns of the rotation within its cache TTL
		// (5 s): it publishes the new next key, and signs with the
		// promoted one.
		eventually(t, eventTimeout, "the other instance to publish the new next key", func() bool {
			return slices.Equal(jwksKids(t, after), jwksKids(t, fetchJWKS(t, other, "default")))
		})
		eventually(t, eventTimeout, "the other instance to sign with the rotated key", func() bool {
			r, err := other.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "laptop-3", Nonce: nonce})
			require.NoError(t, err)
			return certKid(t, r.GetLeaseCertificate()) == newKid
		})
	}

	// A second rotation makes the key sign that was made by the first: a
	// JWKS fetched before the first rotation lacks it, one fetched after
	// has it.
	rotated = p.do(t, http.MethodPost, "/v1/admin/tenants/default/signing-keys:rotate", p.OperatorKey, map[string]any{}).requireCode(t, http.StatusOK)
	require.Equal(t, newNextKid, rotated.str(t, "signingKey.kid"))
	nonce3 := randomNonce()
	acq3, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "laptop-4", Nonce: nonce3})
	require.NoError(t, err)
	require.Equal(t, newNextKid, certKid(t, acq3.GetLeaseCertificate()))
	verdicts = nodeVerify(t, []certCase{
		{Token: acq3.GetLeaseCertificate(), JWKS: after, Nonce: nonce3, Now: time.Now().Unix()},
		{Token: acq3.GetLeaseCertificate(), JWKS: jwks, Nonce: nonce3, Now: time.Now().Unix()},
	})
	require.True(t, verdicts[0].OK, "the JWKS fetched between the two rotations: %s", verdicts[0].Reason)
	require.Equal(t, "kid not in the JWKS", verdicts[1].Reason, "a JWKS fetched before the previous rotation lacks the key that signs")
}

// TestSigningKeySealedAtRest: with an encryption key, the signing key is
// sealed; a start without that key, or with another one, stops with the
// reason; with it, seatd signs with the same key as before.
func TestSigningKeySealedAtRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	newKey := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	kek := newKey()
	withKey := func(k string) []string { return []string{"SEATD_SIGNING_KEY_ENCRYPTION_KEY=" + k} }

	p := start(t, options{dataDir: dir, env: withKey(kek)})
	require.Contains(t, p.Output(), "sealed=true")
	require.NotContains(t, p.Output(), kek, "the encryption key is never logged")
	before := jwksKids(t, fetchJWKS(t, p, "default"))
	p.stopOK()

	base := []string{"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data-dir", dir, "--operator-key", testOperatorKey}
	code, out := runToExit(t, startTimeout, base, nil)
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "sealed (encrypted at rest) but no signing key encryption key is configured", "a start without the key says why")
	wrong := newKey()
	code, out = runToExit(t, startTimeout, base, withKey(wrong))
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "sealed with another encryption key")
	require.NotContains(t, out, wrong)
	require.NotContains(t, out, kek)

	p = start(t, options{dataDir: dir, env: withKey(kek)})
	require.Equal(t, before, jwksKids(t, fetchJWKS(t, p, "default")), "the same key after a restart")
}
