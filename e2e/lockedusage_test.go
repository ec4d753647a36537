package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/seatd/seatd/server/licensefile"
)

// TestLockedModeUsageExport: the true-up loop on the real binaries. A
// locked seatd's seats are filled and one client refused; seatctl usage
// export --signed writes the export signed by the site key, and the
// vendor's seatctl vendor verify-usage accepts it against the file,
// showing the peak, the denial and the file's seats. An export edited
// after signing is refused as tampered, and one checked against another
// site's file as made for another site key (exit 6, one line naming
// why).
func TestLockedModeUsageExport(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	site := siteID(t, "--data-dir", dataDir)
	v := newVendor(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "site.lic")
	v.writeSigned(t, path, lockedFile(site, 3, 2))
	p := start(t, options{dataDir: dataDir, args: []string{"--license-file", path, "--vendor-key", v.pubPath, "--license-file-watch-interval", "1h"}})
	ctx := testContext(t)
	lic := p.lockedLicense(t)
	for _, fp := range []string{"a", "b"} {
		_, err := p.acquire(ctx, lic.GetKey(), fp)
		require.NoError(t, err)
	}
	_, err := p.acquire(ctx, lic.GetKey(), "c")
	requireStatus(t, err, codes.ResourceExhausted, "SEATS_EXHAUSTED")

	c := ctl{t: t, bin: buildSeatctl(t), addr: p.GRPCAddr, key: p.OperatorKey}
	usage := filepath.Join(dir, "usage.txt")
	r := c.run("usage", "export", "--signed", "--since", "1h", "--out", usage)
	require.Equal(t, 0, r.Code, r.Err)
	require.Contains(t, r.Err, "usage export of license file serial 3")
	table := c.ok("usage", "export", "--since", "1h")
	require.Regexp(t, `cad\s+-\s+2\s+1\s+`, table)

	verified := c.ok("vendor", "verify-usage", "--pub", v.pubPath, "--file", path, usage)
	require.Contains(t, verified, "verified: signed by site key")
	require.Contains(t, verified, "license file serial 3 of Acme")
	// LICENSE FEATURE PEAK LICENSED OVER DENIALS SEAT-HOURS
	require.Regexp(t, regexp.MustCompile(`(?m)^cad\s+-\s+2\s+2\s+0\s+1\s+\d+\.\d\d$`), verified)
	require.Regexp(t, regexp.MustCompile(`(?m)^cad\s+render\s+0\s+1\s+0\s+0\s+0\.00$`), verified)

	// Edited after signing: one more seat of peak is the vendor's money.
	data, err := os.ReadFile(usage)
	require.NoError(t, err)
	edited := bytes.Replace(data, []byte(`"peak_seats": 2,`), []byte(`"peak_seats": 1,`), 1)
	require.NotEqual(t, data, edited)
	tampered := filepath.Join(dir, "tampered.txt")
	require.NoError(t, os.WriteFile(tampered, edited, 0o644))
	msg := c.fails(ctlRefused, "vendor", "verify-usage", "--pub", v.pubPath, "--file", path, tampered)
	require.Contains(t, msg, "readable payload differs from the signed payload")

	// Another site's file (its own site key, the same vendor): this
	// export is not that site's.
	otherSite := siteID(t, "--data-dir", t.TempDir())
	otherFile := filepath.Join(dir, "other.lic")
	v.writeSigned(t, otherFile, lockedFile(otherSite, 3, 2))
	msg = c.fails(ctlRefused, "vendor", "verify-usage", "--pub", v.pubPath, "--file", otherFile, usage)
	require.Contains(t, msg, "made for another site key")

	// A seatd without a license file has no export to sign.
	plain := start(t, options{})
	msg = ctl{t: t, bin: c.bin, addr: plain.GRPCAddr, key: plain.OperatorKey}.fails(ctlRefused, "usage", "export", "--signed")
	require.Contains(t, msg, "LICENSE_FILE_NOT_CONFIGURED")
	stopAllOK(t, p, plain)
}

// TestLockedModeHostBinding: a file the vendor bound to this host's name
// is served; one bound to another host is refused on reload (cause
// wrong_host, the file in force staying) and stops the start, naming both
// hosts.
func TestLockedModeHostBinding(t *testing.T) {
	t.Parallel()
	hostname, err := os.Hostname()
	require.NoError(t, err)
	bound := func(f *licensefile.File, host string) *licensefile.File {
		f.Host = &licensefile.HostBinding{Kind: licensefile.BindHostname, Value: host}
		return f
	}
	dataDir := t.TempDir()
	site := siteID(t, "--data-dir", dataDir)
	v := newVendor(t)
	path := filepath.Join(t.TempDir(), "site.lic")
	v.writeSigned(t, path, bound(lockedFile(site, 1, 2), hostname))
	args := []string{"--license-file", path, "--vendor-key", v.pubPath, "--license-file-watch-interval", "1h"}
	p := start(t, options{dataDir: dataDir, args: args})
	require.EqualValues(t, 2, p.lockedLicense(t).GetSeats())

	v.writeSigned(t, path, bound(lockedFile(site, 2, 50), "other-host.example"))
	p.reloadRefused(t, "wrong_host")
	require.EqualValues(t, 2, p.lockedLicense(t).GetSeats())
	p.stopOK()

	v.writeSigned(t, path, bound(lockedFile(site, 3, 50), "other-host.example"))
	code, out := runToExit(t, eventTimeout, append([]string{"--data-dir", dataDir, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...), nil)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, `license file serial 3: bound to another host: it is bound to hostname "other-host.example", this host's is `+hostname)
}
