package e2e

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server/licensefile"
)

// vendor is a vendor's key pair, its public half in a PEM file.
type vendor struct {
	pub     ed25519.PublicKey
	priv    ed25519.PrivateKey
	pubPath string
}

func newVendor(t *testing.T) vendor {
	t.Helper()
	pub, priv, err := licensefile.GenerateKey()
	require.NoError(t, err)
	pem, err := licensefile.MarshalPublicKey(pub)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "vendor.pub")
	require.NoError(t, os.WriteFile(p, pem, 0o644))
	return vendor{pub: pub, priv: priv, pubPath: p}
}

// siteID runs `seatd site-id` with the store flags given and returns the
// site key of the request it prints (verified).
func siteID(t *testing.T, storeFlags ...string) ed25519.PublicKey {
	t.Helper()
	out := filepath.Join(t.TempDir(), "request.txt")
	code, output := runToExit(t, eventTimeout, append([]string{"site-id", "--name", "e2e plant", "-o", out}, storeFlags...), nil)
	require.Equal(t, 0, code, output)
	require.Contains(t, output, "send the request to your vendor")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	req, err := licensefile.VerifyRequest(data)
	require.NoError(t, err)
	require.Equal(t, "e2e plant", req.Name)
	return req.PublicKey()
}

// lockedFile is a file for site: the license "cad" (seats, a 1-minute
// TTL) with a grant of 1 seat of feature render, issued an hour ago for a
// year.
func lockedFile(site ed25519.PublicKey, serial int64, seats int) *licensefile.File {
	issued := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	return &licensefile.File{
		Serial: serial, Customer: "Acme", IssuedAt: issued, NotAfter: issued.AddDate(1, 0, 0),
		SiteKey: licensefile.NewJWK(site),
		Licenses: []licensefile.License{{
			ID: "cad", Name: "ACME CAD", Seats: seats, LeaseTTL: licensefile.Duration(time.Minute),
			Grants: []licensefile.Grant{{ID: "render", Feature: "render", Seats: 1}},
		}},
	}
}

// writeSigned signs f with v and writes it at path.
func (v vendor) writeSigned(t *testing.T, path string, f *licensefile.File) []byte {
	t.Helper()
	data, err := licensefile.Sign(f, v.priv)
	require.NoError(t, err)
	writeAtomically(t, path, data)
	return data
}

// writeAtomically replaces path (a rename: a reader sees the old file or
// the new one, never half of one).
func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

const lockedLicenseID = "lic_cad"

// dialChained is a Go client of p that checks every certificate from
// the vendor's public key (vendor.pub, as a product embeds it) through
// the chain vendor → license file → site key → certificate; it
// heartbeats only when asked.
func dialChained(t *testing.T, p *proc, v vendor) *client.Client {
	t.Helper()
	pub, err := os.ReadFile(v.pubPath)
	require.NoError(t, err)
	keys, err := client.ParseVendorKeys(pub)
	require.NoError(t, err)
	c, err := client.DialWithOptions(p.GRPCAddr, client.Options{VendorKeys: keys})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// requireChains: the lease's certificate verifies offline from
// vendor.pub and the license file the site has (site.lic, as written),
// naming serial and the file's license; the JWS the lease names is that
// file's.
func requireChains(t *testing.T, l *client.Lease, v vendor, siteLic []byte, serial int64) {
	t.Helper()
	pub, err := os.ReadFile(v.pubPath)
	require.NoError(t, err)
	for name, file := range map[string][]byte{"site.lic": siteLic, "the lease's": []byte(l.LicenseFile())} {
		claims, err := client.VerifyChainOffline(l.Certificate(), file, pub, time.Now())
		require.NoError(t, err, name)
		require.Equal(t, serial, claims.FileSerial, name)
		require.Equal(t, "cad", claims.FileLicenseID, name)
		require.Equal(t, lockedLicenseID, claims.LicenseID, name)
	}
}

// signedFileOverREST is GET /v1/license-file.jws, needing no credentials:
// the file in force's JWS.
func signedFileOverREST(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get(p.url("/v1/license-file.jws"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /v1/license-file.jws: %s", body)
	var token string
	require.NoError(t, json.Unmarshal(body, &token), "%s", body)
	return token
}

func (p *proc) lockedLicense(t *testing.T) *seatdv1.License {
	t.Helper()
	got, err := p.admin().GetLicense(p.asOperator(testContext(t)), &seatdv1.GetLicenseRequest{LicenseId: lockedLicenseID})
	require.NoError(t, err)
	return got.GetLicense()
}

// requireExhausted: the next new client finds no seat.
func (p *proc) requireExhausted(t *testing.T, key, fp string) {
	t.Helper()
	_, err := p.acquire(testContext(t), key, fp)
	requireStatus(t, err, codes.ResourceExhausted, "SEATS_EXHAUSTED")
}

// reloadRefused reloads by SIGHUP, then by the admin call, and requires
// both refused with cause, the file in force staying.
func (p *proc) reloadRefused(t *testing.T, cause string) {
	t.Helper()
	before := strings.Count(p.Output(), "cause="+cause)
	p.signal(syscall.SIGHUP)
	eventually(t, eventTimeout, "SIGHUP's refusal logged with cause "+cause, func() bool {
		return strings.Count(p.Output(), "cause="+cause) > before
	})
	_, err := p.admin().ReloadLicenseFile(p.asOperator(testContext(t)), &seatdv1.ReloadLicenseFileRequest{})
	st := requireStatus(t, err, codes.FailedPrecondition, "LICENSE_FILE_REFUSED")
	require.Equal(t, cause, errorInfo(st).GetMetadata()["cause"], "%v", st)
}

// TestLockedModeEmbedded: the whole loop on the real binary. seatd
// site-id gives the site key; a file signed for it is served in locked
// mode: its seats are the limit, every admin route that could raise them
// (gRPC and REST) is refused, a tampered file, an older serial, a file for
// another site and one past its not_after are refused on reload (SIGHUP
// and the admin call) with the file in force kept, a valid bigger one
// takes effect at once, and a restart with an older file is refused.
func TestLockedModeEmbedded(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	site := siteID(t, "--data-dir", dataDir)
	v := newVendor(t)
	path := filepath.Join(t.TempDir(), "site.lic")
	in5 := v.writeSigned(t, path, lockedFile(site, 5, 2))
	args := []string{"--license-file", path, "--vendor-key", v.pubPath, "--license-file-watch-interval", "1h"}
	p := start(t, options{dataDir: dataDir, args: args})
	require.Contains(t, p.Output(), `msg="license file in force"`)
	ctx := testContext(t)
	op := p.asOperator(ctx)

	lic := p.lockedLicense(t)
	require.EqualValues(t, 2, lic.GetSeats())
	require.Len(t, lic.GetGrants(), 1)
	grantID := lic.GetGrants()[0].GetId()
	// The first seat's holder checks its certificates from the vendor's
	// key alone: the site key signs them and names the file.
	chained := dialChained(t, p, v)
	kept, err := chained.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "a"})
	require.NoError(t, err)
	requireChains(t, kept, v, in5, 5)
	require.Equal(t, kept.LicenseFile(), signedFileOverREST(t, p))
	jwks := restJWKS(t, p, "default")
	require.Contains(t, string(jwks), `"kid":"`+licensefile.KeyID(site)+`"`, "the JWKS names the site key")
	_, err = client.VerifyOffline(kept.Certificate(), jwks, time.Now())
	require.NoError(t, err, "a product that embeds the JWKS verifies it too")
	_, err = p.acquire(ctx, lic.GetKey(), "b")
	require.NoError(t, err)
	p.requireExhausted(t, lic.GetKey(), "c")

	// Every admin route that could raise the seats, over gRPC...
	admin := p.admin()
	for name, call := range map[string]func() error{
		"CreateLicense": func() error {
			_, err := admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Name: "more", Seats: 100}})
			return err
		},
		"UpdateLicense": func() error {
			_, err := admin.UpdateLicense(op, &seatdv1.UpdateLicenseRequest{
				License: &seatdv1.License{Id: lockedLicenseID, Seats: 100, Overdraft: 100}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats", "overdraft"}},
			})
			return err
		},
		"DeleteLicense": func() error {
			_, err := admin.DeleteLicense(op, &seatdv1.DeleteLicenseRequest{LicenseId: lockedLicenseID})
			return err
		},
		"CreateFeatureGrant": func() error {
			_, err := admin.CreateFeatureGrant(op, &seatdv1.CreateFeatureGrantRequest{LicenseId: lockedLicenseID, Grant: &seatdv1.FeatureGrant{Feature: "render", Seats: 100}})
			return err
		},
		"UpdateFeatureGrant": func() error {
			_, err := admin.UpdateFeatureGrant(op, &seatdv1.UpdateFeatureGrantRequest{
				LicenseId: lockedLicenseID, Grant: &seatdv1.FeatureGrant{Id: grantID, Seats: 100}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
			})
			return err
		},
		"DeleteFeatureGrant": func() error {
			_, err := admin.DeleteFeatureGrant(op, &seatdv1.DeleteFeatureGrantRequest{LicenseId: lockedLicenseID, GrantId: grantID})
			return err
		},
	} {
		err := call()
		require.Error(t, err, name)
		requireStatus(t, err, codes.FailedPrecondition, "LICENSE_FILE_LOCKED")
	}
	// ... and over REST.
	licPath := "/v1/admin/licenses/" + lockedLicenseID
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/admin/licenses", `{"name": "more", "seats": 100}`},
		{"PATCH", licPath, `{"seats": 100}`},
		{"PATCH", licPath, `{"overdraft": 100}`},
		{"DELETE", licPath, ""},
		{"POST", licPath + "/grants", `{"feature": "render", "seats": 100}`},
		{"PATCH", licPath + "/grants/" + grantID, `{"seats": 100}`},
		{"DELETE", licPath + "/grants/" + grantID, ""},
	} {
		resp := p.do(t, r.method, r.path, p.OperatorKey, r.body)
		resp.requireCode(t, http.StatusBadRequest)
		require.Equal(t, "LICENSE_FILE_LOCKED", resp.errorReason(), "%s %s", r.method, r.path)
	}
	p.requireExhausted(t, lic.GetKey(), "c")

	// Replaced files that are refused, the file in force staying.
	bigger := v.writeSigned(t, path, lockedFile(site, 6, 10))
	writeAtomically(t, path, bytes.Replace(bigger, []byte(`"seats": 10,`), []byte(`"seats": 1000,`), 1))
	p.reloadRefused(t, "tampered")
	v.writeSigned(t, path, lockedFile(site, 4, 10))
	p.reloadRefused(t, "not_newer")
	other, _, err := licensefile.GenerateKey()
	require.NoError(t, err)
	foreign := v.writeSigned(t, path, lockedFile(other, 6, 10))
	p.reloadRefused(t, "wrong_site")
	pub, err := os.ReadFile(v.pubPath)
	require.NoError(t, err)
	_, err = client.VerifyChainOffline(kept.Certificate(), foreign, pub, time.Now())
	require.ErrorIs(t, err, client.ErrWrongSiteKey, "a certificate signed by a site key the file does not name")
	require.ErrorIs(t, err, client.ErrBadCertificate)
	past := lockedFile(site, 6, 10)
	past.IssuedAt, past.NotAfter = past.IssuedAt.AddDate(0, 0, -2), time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	v.writeSigned(t, path, past)
	p.reloadRefused(t, "expired")
	p.requireExhausted(t, lic.GetKey(), "c")
	got, err := admin.GetLicenseFile(op, &seatdv1.GetLicenseFileRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 5, got.GetLicenseFile().GetSerial())

	// A valid bigger file: in force at once.
	in6 := v.writeSigned(t, path, lockedFile(site, 6, 3))
	reloaded, err := admin.ReloadLicenseFile(op, &seatdv1.ReloadLicenseFileRequest{})
	require.NoError(t, err)
	require.True(t, reloaded.GetChanged())
	require.EqualValues(t, 6, reloaded.GetLicenseFile().GetSerial())
	require.NoError(t, kept.Heartbeat(ctx), "the kept lease's certificate names serial 6: the client fetches it")
	requireChains(t, kept, v, in6, 6)
	_, err = p.acquire(ctx, lic.GetKey(), "c")
	require.NoError(t, err, "the third seat")
	p.requireExhausted(t, lic.GetKey(), "d")
	require.Equal(t, lic.GetKey(), p.lockedLicense(t).GetKey(), "the license keeps its key")
	p.stopOK()

	// A restart with an older file stops the start, in one line.
	v.writeSigned(t, path, lockedFile(site, 5, 50))
	code, out := runToExit(t, eventTimeout, append([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...), nil)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "seatd: --license-file "+path+" refused: license file serial 5 is not newer than the license file in force (serial 6)")
}

// TestLockedModeDistributed: two instances serve one file from one record
// and site key: its seats are the limit across them; an instance whose
// file is not the one in force (another was reloaded to a newer one) is
// not ready until it has it; either signs the usage export of both; an
// instance started with an older file is refused.
func TestLockedModeDistributed(t *testing.T) {
	t.Parallel()
	b := sharedBackend(t, "")
	storeFlags := []string{"--postgres-url", b.PGURL, "--redis-url", b.RedisURL, "--redis-key-prefix", b.Prefix}
	site := siteID(t, storeFlags...)
	v := newVendor(t)
	paths := []string{filepath.Join(t.TempDir(), "site.lic"), filepath.Join(t.TempDir(), "site.lic")}
	// One file, its bytes on both paths: signed twice, a second apart,
	// serial 1 would be two files (issued_at differs), the second refused.
	serial1 := v.writeSigned(t, paths[0], lockedFile(site, 1, 2))
	writeAtomically(t, paths[1], serial1)
	locked := func(path string) []string {
		return []string{"--license-file", path, "--vendor-key", v.pubPath, "--license-file-watch-interval", "100ms"}
	}
	p0 := b.startSeatd(t, "locked-0-"+randomHex(3), locked(paths[0])...)
	p1 := b.startSeatd(t, "locked-1-"+randomHex(3), locked(paths[1])...)
	ctx := testContext(t)

	lic := p0.lockedLicense(t)
	require.Equal(t, lic.GetKey(), p1.lockedLicense(t).GetKey(), "one license, made once")
	_, err := p0.acquire(ctx, lic.GetKey(), "a")
	require.NoError(t, err)
	// The second seat's holder checks its certificates from the vendor's
	// key: one site key for every instance.
	kept, err := dialChained(t, p1, v).Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "b"})
	require.NoError(t, err)
	requireChains(t, kept, v, serial1, 1)
	p0.requireExhausted(t, lic.GetKey(), "c")
	p1.requireExhausted(t, lic.GetKey(), "c")
	_, err = p1.admin().UpdateLicense(p1.asOperator(ctx), &seatdv1.UpdateLicenseRequest{
		License: &seatdv1.License{Id: lockedLicenseID, Seats: 100}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
	})
	requireStatus(t, err, codes.FailedPrecondition, "LICENSE_FILE_LOCKED")

	// p0 gets serial 2 (3 seats); p1 keeps serial 1: not ready until it
	// has serial 2 too.
	serial2 := v.writeSigned(t, paths[0], lockedFile(site, 2, 3))
	r, err := p0.admin().ReloadLicenseFile(p0.asOperator(ctx), &seatdv1.ReloadLicenseFileRequest{})
	if err == nil {
		require.EqualValues(t, 2, r.GetLicenseFile().GetSerial())
	} // else p0's watch was first: the file is in force all the same
	ready := func(p *proc) int { return p.do(t, "GET", "/readyz", "", nil).Code }
	eventually(t, eventTimeout, "p1 not ready", func() bool { return ready(p1) == http.StatusServiceUnavailable })
	require.Equal(t, http.StatusOK, ready(p0))
	require.Contains(t, p1.Output(), "this instance's license file is not the one in force")
	_, err = p1.acquire(ctx, lic.GetKey(), "c")
	require.NoError(t, err, "the record's terms (3 seats) apply on every instance")

	// The same file (another signing of serial 2 would be another file,
	// refused: one serial, one file).
	writeAtomically(t, paths[1], serial2)
	eventually(t, eventTimeout, "p1 ready again", func() bool { return ready(p1) == http.StatusOK })
	got, err := p1.admin().GetLicenseFile(p1.asOperator(ctx), &seatdv1.GetLicenseFileRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 2, got.GetLicenseFile().GetSerial())
	require.NoError(t, kept.Heartbeat(ctx), "p1's certificates name serial 2 now: the client fetches it")
	requireChains(t, kept, v, serial2, 2)

	// Any instance signs the usage export with the one site key: the
	// leases taken on both count, and it verifies against the file.
	exported, err := p1.admin().ExportUsage(p1.asOperator(ctx), &seatdv1.ExportUsageRequest{})
	require.NoError(t, err)
	f, err := licensefile.Open(serial2, []ed25519.PublicKey{v.pub})
	require.NoError(t, err)
	u, err := licensefile.VerifyUsage([]byte(exported.GetUsageExport()), &f.File)
	require.NoError(t, err)
	require.Equal(t, licensefile.UsageRow{LicenseID: "cad", PeakSeats: 3, Denials: 2, SeatHours: u.Rows[0].SeatHours}, u.Rows[0], "a, b and c; c refused once on each")

	// A third instance with the older file does not start.
	older := filepath.Join(t.TempDir(), "site.lic")
	v.writeSigned(t, older, lockedFile(site, 1, 50))
	code, out := runToExit(t, eventTimeout, append(append([]string{"--operator-key", testOperatorKey, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--pg-max-conns", "2"}, storeFlags...), locked(older)...), nil)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "license file serial 1 is not newer than the license file in force (serial 2)")
	stopAllOK(t, p0, p1)
}
