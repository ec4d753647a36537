package seatctl

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/seatd/seatd/server/licensefile"
)

// These tests run the vendor and site commands on files in a temporary
// directory, at a fixed time: the whole air-gapped loop (site key, request,
// signed file, inspection, usage export) without a seatd.

var signedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// runFiles runs seatctl with args at signedAt; no seatd is dialled (a
// command that tried would find no admin client and fail).
func runFiles(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	g := &globals{stdout: &out, now: func() time.Time { return signedAt }}
	code := run(g, args, &out, &errb)
	require.Nil(t, g.conn, "seatctl %v dialled seatd", args)
	return result{out: out.String(), err: errb.String(), code: code}
}

func runFilesOK(t *testing.T, args ...string) string {
	t.Helper()
	r := runFiles(t, args...)
	require.Equal(t, ExitOK, r.code, "seatctl %v: %s", args, r.err)
	return r.out
}

// requireExit checks a failed run: its exit code, and one line on stderr
// holding each of the words.
func requireExit(t *testing.T, r result, code int, words ...string) {
	t.Helper()
	require.Equal(t, code, r.code, "stderr: %s", r.err)
	require.True(t, strings.HasPrefix(r.err, "seatctl: ") && strings.Count(r.err, "\n") == 1, "%q", r.err)
	for _, w := range words {
		require.Contains(t, r.err, w)
	}
}

const entitlementsYAML = `# Acme, plant 4: renewal of March 2026
serial: 7
customer: Acme Fabrication & Sons
not_after: 2027-03-01T00:00:00Z
licenses:
  - id: cad
    name: ACME CAD
    seats: 20
    overdraft: 2
    max_borrow_duration: 72h
    max_borrowed_seats: 5
    grants:
      - id: render-2024
        feature: render
        version: "2024.10"
        seats: 5
        overdraft: 1
        expires_at: 2026-09-01T00:00:00Z
  - id: viewer
    name: ACME Viewer
    seats: 100
    lease_ttl: 2m
    leasing_strategy: user
`

// airGap is a vendor directory and a site directory with their keys, the
// site's request and an entitlements file, as the loop has them before
// vendor sign.
type airGap struct {
	dir, vendorKey, vendorPub, siteKey, request, entitlements string
}

func newAirGap(t *testing.T, requestArgs ...string) airGap {
	t.Helper()
	dir := t.TempDir()
	a := airGap{
		dir:       dir,
		vendorKey: filepath.Join(dir, "vendor", "vendor.key"), vendorPub: filepath.Join(dir, "vendor", "vendor.pub"),
		siteKey: filepath.Join(dir, "site", "site.key"), request: filepath.Join(dir, "site", "request.txt"),
		entitlements: filepath.Join(dir, "vendor", "acme.yaml"),
	}
	runFilesOK(t, "vendor", "keygen", "-o", filepath.Join(dir, "vendor"))
	runFilesOK(t, "site", "keygen", "-o", filepath.Join(dir, "site"))
	runFilesOK(t, append([]string{"site", "request", "--key", a.siteKey, "--name", "Plant 4", "-o", a.request}, requestArgs...)...)
	require.NoError(t, os.WriteFile(a.entitlements, []byte(entitlementsYAML), 0o600))
	return a
}

func (a airGap) sign(t *testing.T, out string) result {
	t.Helper()
	return runFiles(t, "vendor", "sign", "--key", a.vendorKey, "--request", a.request, "--entitlements", a.entitlements, "-o", out)
}

func (a airGap) keys(t *testing.T) (vendor []ed25519.PublicKey, site ed25519.PrivateKey) {
	t.Helper()
	pub, err := os.ReadFile(a.vendorPub)
	require.NoError(t, err)
	vendor, err = licensefile.ParsePublicKeys(pub)
	require.NoError(t, err)
	priv, err := os.ReadFile(a.siteKey)
	require.NoError(t, err)
	site, err = licensefile.ParsePrivateKey(priv)
	require.NoError(t, err)
	return vendor, site
}

func TestKeygenWritesAKeyPairAndNeverReplacesIt(t *testing.T) {
	for _, who := range []string{"vendor", "site"} {
		dir := filepath.Join(t.TempDir(), "keys")
		out := runFilesOK(t, who, "keygen", "-o", dir)
		key, pub := filepath.Join(dir, who+".key"), filepath.Join(dir, who+".pub")

		st, err := os.Stat(key)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the private key is the owner's only")
		st, err = os.Stat(dir)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), st.Mode().Perm())

		privPEM, err := os.ReadFile(key)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(privPEM), "-----BEGIN PRIVATE KEY-----\n"), "PKCS #8")
		priv, err := licensefile.ParsePrivateKey(privPEM)
		require.NoError(t, err)
		pubPEM, err := os.ReadFile(pub)
		require.NoError(t, err)
		keys, err := licensefile.ParsePublicKeys(pubPEM)
		require.NoError(t, err)
		require.Len(t, keys, 1)
		require.True(t, keys[0].Equal(priv.Public()))
		require.Contains(t, out, licensefile.KeyID(keys[0]))

		r := runFiles(t, who, "keygen", "-o", dir)
		requireExit(t, r, ExitRefused, key, "never replaced")
		again, err := os.ReadFile(key)
		require.NoError(t, err)
		require.Equal(t, privPEM, again, "the key is unchanged")

		requireExit(t, runFiles(t, who, "keygen"), ExitUsage, "-o DIR")
	}
}

func TestSiteRequest(t *testing.T) {
	a := newAirGap(t, "--hostname", "lic1.plant.example", "--machine-id", "0123456789abcdef0123456789abcdef")
	data, err := os.ReadFile(a.request)
	require.NoError(t, err)
	req, err := licensefile.VerifyRequest(data)
	require.NoError(t, err)
	require.Equal(t, "Plant 4", req.Name)
	require.Equal(t, signedAt, req.CreatedAt)
	require.Equal(t, "lic1.plant.example", req.Hostname)
	_, site := a.keys(t)
	require.True(t, req.PublicKey().Equal(site.Public()))

	// --this-host: this host's name and machine-id (the file systemd keeps,
	// here the test's).
	idFile := filepath.Join(t.TempDir(), "machine-id")
	require.NoError(t, os.WriteFile(idFile, []byte("fedcba9876543210fedcba9876543210\n"), 0o600))
	defer func(p string) { machineIDPath = p }(machineIDPath)
	machineIDPath = idFile
	thisHost := filepath.Join(t.TempDir(), "request.txt")
	runFilesOK(t, "site", "request", "--key", a.siteKey, "--name", "Plant 4", "--this-host", "-o", thisHost)
	data, err = os.ReadFile(thisHost)
	require.NoError(t, err)
	req, err = licensefile.VerifyRequest(data)
	require.NoError(t, err)
	hostname, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, hostname, req.Hostname)
	require.Equal(t, "fedcba9876543210fedcba9876543210", req.MachineID)
	machineIDPath = filepath.Join(t.TempDir(), "none")
	requireExit(t, runFiles(t, "site", "request", "--key", a.siteKey, "--name", "x", "--this-host"), ExitUsage, "--this-host", "--machine-id")

	// Without -o, to stdout.
	out := runFilesOK(t, "site", "request", "--key", a.siteKey, "--name", "Plant 4")
	require.True(t, strings.HasPrefix(out, "-----BEGIN SEATD SITE REQUEST-----\n"), out)

	requireExit(t, runFiles(t, "site", "request", "--key", a.siteKey), ExitUsage, "--name")
	requireExit(t, runFiles(t, "site", "request", "--name", "x"), ExitUsage, "--key")
	requireExit(t, runFiles(t, "site", "request", "--key", a.vendorPub, "--name", "x"), ExitRefused, "PRIVATE KEY")
	requireExit(t, runFiles(t, "site", "request", "--key", a.siteKey, "--name", "x", "--machine-id", "nope"), ExitUsage, "machine_id")
}

func TestVendorSignWritesAFileTheSiteVerifies(t *testing.T) {
	a := newAirGap(t)
	lic := filepath.Join(a.dir, "site", "site.lic")
	r := a.sign(t, lic)
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "serial 7 for Acme Fabrication & Sons")

	vendor, site := a.keys(t)
	data, err := os.ReadFile(lic)
	require.NoError(t, err)
	f, err := licensefile.Verify(data, vendor, licensefile.Site{Key: site.Public().(ed25519.PublicKey)}, signedAt.Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 7, f.Serial)
	require.Equal(t, signedAt, f.IssuedAt)
	require.Nil(t, f.Host)
	require.Len(t, f.Licenses, 2)
	cad, viewer := f.Licenses[0], f.Licenses[1]
	require.Equal(t, 20, cad.Seats)
	require.Equal(t, licensefile.DefaultLeaseTTL, cad.LeaseTTL, "no lease_ttl: seatd's default, written out")
	require.Equal(t, "2024.10", cad.Grants[0].Version)
	require.Equal(t, 72*time.Hour, cad.MaxBorrowDuration.Std())
	require.Equal(t, 2*time.Minute, viewer.LeaseTTL.Std())
	require.EqualValues(t, "user", viewer.LeasingStrategy)

	// JSON entitlements are read alike; to stdout without -o.
	j, err := os.ReadFile(a.entitlements)
	require.NoError(t, err)
	var asJSON bytes.Buffer
	require.NoError(t, json.Indent(&asJSON, mustYAMLToJSON(t, j), "", " "))
	require.NoError(t, os.WriteFile(a.entitlements, asJSON.Bytes(), 0o600))
	out := runFilesOK(t, "vendor", "sign", "--key", a.vendorKey, "--request", a.request, "--entitlements", a.entitlements)
	require.Equal(t, string(data), out, "the same terms at the same time sign the same file")
}

func TestVendorSignBindsTheHostFromTheRequest(t *testing.T) {
	a := newAirGap(t, "--hostname", "lic1.plant.example", "--machine-id", "0123456789abcdef0123456789abcdef")
	require.NoError(t, os.WriteFile(a.entitlements, []byte("bind_host: machine-id\n"+entitlementsYAML), 0o600))
	lic := filepath.Join(a.dir, "site.lic")
	require.Equal(t, ExitOK, a.sign(t, lic).code)
	data, err := os.ReadFile(lic)
	require.NoError(t, err)
	vendor, _ := a.keys(t)
	f, err := licensefile.Open(data, vendor)
	require.NoError(t, err)
	require.Equal(t, &licensefile.HostBinding{Kind: licensefile.BindMachineID, Value: "0123456789abcdef0123456789abcdef"}, f.Host)

	noHost := newAirGap(t)
	require.NoError(t, os.WriteFile(noHost.entitlements, []byte("bind_host: hostname\n"+entitlementsYAML), 0o600))
	requireExit(t, noHost.sign(t, lic), ExitUsage, "bind_host hostname", "--this-host")
}

func TestVendorSignRefuses(t *testing.T) {
	a := newAirGap(t)
	lic := filepath.Join(a.dir, "site.lic")
	withEntitlements := func(text string) result {
		t.Helper()
		require.NoError(t, os.WriteFile(a.entitlements, []byte(text), 0o600))
		return a.sign(t, lic)
	}
	for _, c := range []struct {
		name, entitlements string
		words              []string
	}{
		{"a misspelt field", strings.Replace(entitlementsYAML, "    seats: 20", "    seat: 20", 1), []string{`unknown field "seat"`}},
		{"a field twice", strings.Replace(entitlementsYAML, "serial: 7", "serial: 7\nserial: 9", 1), []string{"serial"}},
		{"a version unquoted", strings.Replace(entitlementsYAML, `"2024.10"`, "2024.10", 1), []string{"licenses.grants.version", "quote"}},
		{"no serial", strings.Replace(entitlementsYAML, "serial: 7\n", "", 1), []string{"serial"}},
		{"no not_after", strings.Replace(entitlementsYAML, "not_after: 2027-03-01T00:00:00Z\n", "", 1), []string{"not_after", "required"}},
		{"a date without a time", strings.Replace(entitlementsYAML, "2027-03-01T00:00:00Z", "2027-03-01", 1), []string{"RFC 3339"}},
		{"seats seatd would refuse", strings.Replace(entitlementsYAML, "    seats: 20", "    seats: 0", 1), []string{"licenses[0].seats"}},
		{"a bad feature", strings.Replace(entitlementsYAML, "feature: render", "feature: render!", 1), []string{"licenses[0].grants[0].feature"}},
		{"a bad duration", strings.Replace(entitlementsYAML, "72h", "3 days", 1), []string{"3 days"}},
		{"a bad bind_host", "bind_host: ip\n" + entitlementsYAML, []string{"bind_host"}},
		{"not YAML", "licenses: [\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireExit(t, withEntitlements(c.entitlements), ExitUsage, append([]string{a.entitlements}, c.words...)...)
			_, err := os.Stat(lic)
			require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
		})
	}
	require.NoError(t, os.WriteFile(a.entitlements, []byte(entitlementsYAML), 0o600))

	// A request that does not verify is refused, as is a key that is not
	// a private Ed25519 key.
	req, err := os.ReadFile(a.request)
	require.NoError(t, err)
	tampered := filepath.Join(a.dir, "tampered.txt")
	require.NoError(t, os.WriteFile(tampered, []byte(strings.Replace(string(req), "Plant 4", "Plant 5", 1)), 0o600))
	r := runFiles(t, "vendor", "sign", "--key", a.vendorKey, "--request", tampered, "--entitlements", a.entitlements, "-o", lic)
	requireExit(t, r, ExitRefused, "--request", "readable payload differs")
	r = runFiles(t, "vendor", "sign", "--key", a.vendorPub, "--request", a.request, "--entitlements", a.entitlements, "-o", lic)
	requireExit(t, r, ExitRefused, "--key")
	r = runFiles(t, "vendor", "sign", "--key", filepath.Join(a.dir, "missing.key"), "--request", a.request, "--entitlements", a.entitlements)
	requireExit(t, r, ExitUsage, "missing.key")
	r = runFiles(t, "vendor", "sign", "--request", a.request, "--entitlements", a.entitlements)
	requireExit(t, r, ExitUsage, "--key")
}

func TestVendorInspect(t *testing.T) {
	a := newAirGap(t)
	lic := filepath.Join(a.dir, "site.lic")
	require.Equal(t, ExitOK, a.sign(t, lic).code)

	out := runFilesOK(t, "vendor", "inspect", lic, "--pub", a.vendorPub)
	vendor, site := a.keys(t)
	require.Regexp(t, `signature\s+verified: vendor key `+licensefile.KeyID(vendor[0])+`\n`, out)
	require.Regexp(t, `serial\s+7\n`, out)
	require.Regexp(t, `customer\s+Acme Fabrication & Sons\n`, out)
	require.Regexp(t, `site key\s+`+licensefile.KeyID(site.Public().(ed25519.PublicKey))+`\n`, out)
	require.Regexp(t, `host\s+any \(bound to the site key only\)\n`, out)
	require.Regexp(t, `cad\s+ACME CAD\s+20\s+2\s+6m\s+fingerprint\s+3d \(5 seats\)\s+no\s+-\s+lic_cad\n`, out)
	require.Regexp(t, `viewer\s+ACME Viewer\s+100\s+0\s+2m\s+user\s+no\s+no\s+-\s+lic_viewer\n`, out)
	// The seatd id: the license's, a dot, SHA-256("render-2024")'s first 4 bytes.
	require.Regexp(t, `cad/render-2024\s+render\s+2024\.10\s+5\s+1\s+-\s+2026-09-01T00:00:00Z\s+no\s+lic_cad\.ea8af4b8\n`, out)

	out = runFilesOK(t, "vendor", "inspect", lic)
	require.Regexp(t, `signature\s+NOT CHECKED \(pass --pub vendor.pub\)`, out)
	require.Regexp(t, `serial\s+7\n`, out)

	var v struct {
		Signature string           `json:"signature"`
		VendorKid string           `json:"vendor_kid"`
		File      licensefile.File `json:"file"`
	}
	require.NoError(t, json.Unmarshal([]byte(runFilesOK(t, "vendor", "inspect", lic, "--pub", a.vendorPub, "-o", "json")), &v))
	require.Equal(t, "verified", v.Signature)
	require.EqualValues(t, 7, v.File.Serial)
	require.Equal(t, "2024.10", v.File.Licenses[0].Grants[0].Version)

	// Refused: another vendor's key; an edited copy, with or without --pub.
	other := filepath.Join(a.dir, "other")
	runFilesOK(t, "vendor", "keygen", "-o", other)
	requireExit(t, runFiles(t, "vendor", "inspect", lic, "--pub", filepath.Join(other, "vendor.pub")), ExitRefused, "unknown key")
	data, err := os.ReadFile(lic)
	require.NoError(t, err)
	edited := filepath.Join(a.dir, "edited.lic")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(string(data), `"seats": 20`, `"seats": 200`, 1)), 0o600))
	requireExit(t, runFiles(t, "vendor", "inspect", edited, "--pub", a.vendorPub), ExitRefused, "licenses[0].seats")
	requireExit(t, runFiles(t, "vendor", "inspect", edited), ExitRefused, "licenses[0].seats")
	requireExit(t, runFiles(t, "vendor", "inspect", lic, "--pub", a.siteKey), ExitRefused, "is this a private key?")
	requireExit(t, runFiles(t, "vendor", "inspect"), ExitUsage, "FILE")
}

func TestVendorVerifyUsage(t *testing.T) {
	a := newAirGap(t)
	lic := filepath.Join(a.dir, "site.lic")
	require.Equal(t, ExitOK, a.sign(t, lic).code)
	_, site := a.keys(t)

	export := func(u licensefile.UsageExport, key ed25519.PrivateKey) string {
		t.Helper()
		data, err := licensefile.SignUsage(u, key)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "usage.txt")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}
	march := licensefile.UsageExport{
		FileSerial: 7, PeriodStart: signedAt, PeriodEnd: signedAt.AddDate(0, 1, 0), CreatedAt: signedAt.AddDate(0, 1, 0),
		Rows: []licensefile.UsageRow{
			{LicenseID: "cad", PeakSeats: 22, Denials: 3, SeatHours: 1234.5},
			{LicenseID: "cad", Feature: "render", PeakSeats: 4, SeatHours: 88.25},
			{LicenseID: "viewer", PeakSeats: 40, SeatHours: 10},
		},
	}
	usage := export(march, site)

	out := runFilesOK(t, "vendor", "verify-usage", "--pub", a.vendorPub, "--file", lic, usage)
	require.Regexp(t, `usage export\s+verified: signed by site key \S+, license file serial 7 of Acme Fabrication & Sons\n`, out)
	require.Regexp(t, `period\s+2026-03-01T12:00:00Z to 2026-04-01T12:00:00Z\n`, out)
	require.Regexp(t, `cad\s+-\s+22\s+20\s+2\s+3\s+1234\.50\n`, out, "2 seats of overdraft used")
	require.Regexp(t, `cad\s+render\s+4\s+5\s+0\s+0\s+88\.25\n`, out)
	require.Regexp(t, `viewer\s+-\s+40\s+100\s+0\s+0\s+10\.00\n`, out)

	var v usageVerified
	require.NoError(t, json.Unmarshal([]byte(runFilesOK(t, "vendor", "verify-usage", "--pub", a.vendorPub, "--file", lic, usage, "-o", "json")), &v))
	require.True(t, v.Verified)
	require.Equal(t, 2, v.Rows[0].OverSeats)
	require.Equal(t, 20, v.Rows[0].LicensedSeats)

	// Refused: an export signed by another site key, one made under
	// another file, one edited; a file that does not verify.
	_, stranger := newKeyPair(t)
	requireExit(t, runFiles(t, "vendor", "verify-usage", "--pub", a.vendorPub, "--file", lic, export(march, stranger)), ExitRefused, "another site key")
	later := march
	later.FileSerial = 8
	requireExit(t, runFiles(t, "vendor", "verify-usage", "--pub", a.vendorPub, "--file", lic, export(later, site)), ExitRefused, "serial 8")
	data, err := os.ReadFile(usage)
	require.NoError(t, err)
	edited := filepath.Join(a.dir, "edited.txt")
	require.NoError(t, os.WriteFile(edited, []byte(strings.Replace(string(data), `"peak_seats": 22`, `"peak_seats": 12`, 1)), 0o600))
	requireExit(t, runFiles(t, "vendor", "verify-usage", "--pub", a.vendorPub, "--file", lic, edited), ExitRefused, "rows[0].peak_seats")
	other := filepath.Join(a.dir, "other")
	runFilesOK(t, "vendor", "keygen", "-o", other)
	requireExit(t, runFiles(t, "vendor", "verify-usage", "--pub", filepath.Join(other, "vendor.pub"), "--file", lic, usage), ExitRefused, "--file")
	requireExit(t, runFiles(t, "vendor", "verify-usage", "--pub", a.vendorPub, "--file", lic, lic), ExitRefused, "license file, not a usage export")
	requireExit(t, runFiles(t, "vendor", "verify-usage", "--file", lic, usage), ExitUsage, "--pub")
}

func newKeyPair(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := licensefile.GenerateKey()
	require.NoError(t, err)
	return pub, priv
}

func mustYAMLToJSON(t *testing.T, y []byte) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	require.NoError(t, err)
	return j
}
