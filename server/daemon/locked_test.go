package daemon

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server/licensefile"
)

// TestLockedModeFlags: the locked-mode flags go together, each mistake
// named; the environment sets them as any flag.
func TestLockedModeFlags(t *testing.T) {
	t.Parallel()
	parse := func(args []string, env map[string]string) (Config, error) {
		return ParseConfig(args, func(k string) string { return env[k] }, &bytes.Buffer{})
	}
	_, err := parse([]string{"--license-file", "site.lic"}, nil)
	require.ErrorContains(t, err, "--license-file needs the vendor's public key to verify it: --vendor-key")
	_, err = parse([]string{"--vendor-key", "vendor.pub"}, nil)
	require.ErrorContains(t, err, "--vendor-key needs --license-file")
	_, err = parse([]string{"--license-file", "site.lic", "--vendor-key", "v.pub", "--license-file-watch-interval", "1ms"}, nil)
	require.ErrorContains(t, err, "--license-file-watch-interval")
	_, err = parse([]string{"--license-file", "site.lic", "--vendor-key", "v.pub", "--license-file-watch-timeout", "0s"}, nil)
	require.ErrorContains(t, err, "--license-file-watch-timeout must be at least 100ms")
	c, err := parse(nil, map[string]string{"SEATD_LICENSE_FILE": "/etc/seatd/site.lic", "SEATD_VENDOR_KEY": "/etc/seatd/vendor.pub"})
	require.NoError(t, err)
	require.Equal(t, "/etc/seatd/site.lic", c.LicenseFile)
	require.Equal(t, "/etc/seatd/vendor.pub", c.VendorKey)
	require.Equal(t, 30*time.Second, c.LicenseFileWatchTimeout, "the default")
}

// TestVendorKeys: --vendor-key in each form a vendor hands out; a key
// built in (several, comma-separated) is the only one, and --vendor-key
// is then refused. Not parallel: it sets the package's VendorKey.
func TestVendorKeys(t *testing.T) {
	pub1, _, err := licensefile.GenerateKey()
	require.NoError(t, err)
	pub2, _, err := licensefile.GenerateKey()
	require.NoError(t, err)
	pemKey, err := licensefile.MarshalPublicKey(pub1)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "vendor.pub")
	require.NoError(t, os.WriteFile(path, pemKey, 0o644))
	keys, err := vendorKeys(Config{VendorKey: path})
	require.NoError(t, err)
	require.Equal(t, []ed25519.PublicKey{pub1}, keys)
	_, err = vendorKeys(Config{VendorKey: filepath.Join(t.TempDir(), "missing.pub")})
	require.ErrorContains(t, err, "--vendor-key")

	b64 := func(k ed25519.PublicKey) string { return base64.RawURLEncoding.EncodeToString(k) }
	VendorKey = b64(pub1) + "," + b64(pub2)
	t.Cleanup(func() { VendorKey = "" })
	keys, err = vendorKeys(Config{})
	require.NoError(t, err)
	require.Equal(t, []ed25519.PublicKey{pub1, pub2}, keys)
	_, err = ParseConfig([]string{"--license-file", "site.lic", "--vendor-key", path}, func(string) string { return "" }, &bytes.Buffer{})
	require.ErrorContains(t, err, "built with its vendor's key")
	_, err = ParseConfig([]string{"--license-file", "site.lic"}, func(string) string { return "" }, &bytes.Buffer{})
	require.NoError(t, err, "the built-in key verifies")
	VendorKey = "not a key"
	_, err = vendorKeys(Config{})
	require.ErrorContains(t, err, "the vendor key built into this seatd")
}

// TestSiteIDImportsAKey: seatd site-id --import-key makes a key made
// apart the site key, and its request carries it; another key is then
// refused; without the flag the site key stays.
func TestSiteIDImportsAKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := func(name string) (string, ed25519.PublicKey) {
		pub, priv, err := licensefile.GenerateKey()
		require.NoError(t, err)
		pemKey, err := licensefile.MarshalPrivateKey(priv)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, pemKey, 0o600))
		return p, pub
	}
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := siteIDMain(t.Context(), append([]string{"--data-dir", dir, "--name", "plant"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	k1, pub1 := keyFile("site.key")
	code, out, errOut := run("--import-key", k1)
	require.Equal(t, 0, code, errOut)
	req, err := licensefile.VerifyRequest([]byte(out))
	require.NoError(t, err)
	require.Equal(t, pub1, req.PublicKey())
	require.Contains(t, errOut, "site key "+licensefile.KeyID(pub1))

	k2, _ := keyFile("other.key")
	code, _, errOut = run("--import-key", k2)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "this seatd has a site key already ("+licensefile.KeyID(pub1)+")")

	code, out, _ = run()
	require.Equal(t, 0, code)
	req, err = licensefile.VerifyRequest([]byte(out))
	require.NoError(t, err)
	require.Equal(t, pub1, req.PublicKey(), "the site key stays")

	code, _, errOut = run("stray")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unexpected argument "stray"`)
}
