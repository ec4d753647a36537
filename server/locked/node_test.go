package locked

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/client"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/signing"
)

// fixedFile is a SiteFiles that names serial and id for any license: a
// seatd whose certificates do not match the file a product holds.
type fixedFile struct {
	serial int64
	id     string
}

func (f fixedFile) FileLicense(string, string) (int64, string, bool) { return f.serial, f.id, true }

// TestNodeVerifiesTheChain has Node's crypto, which shares no code with
// seatd, verify locked mode's chain of trust (testdata/verify-chain.mjs):
// the vendor's key verifies the license file, the site key the file names
// the certificate, which names the file's serial and a license (and
// feature) it grants. A certificate signed by a site key the file does
// not name is refused, as is every other broken link; the Go client
// (client.VerifyChainOffline) agrees on every case. Node is required
// (make preflight installs it), never skipped.
func TestNodeVerifiesTheChain(t *testing.T) {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "this test verifies with Node.js (>= 20): install it (make preflight)")
	x := newFixture(t)
	now := during
	siteLic := x.signed(t, x.file(7, 2))
	x.write(t, siteLic)
	c := x.controller(&now)
	require.NoError(t, c.Start(t.Context()))
	token := c.InForce().Token

	issuer := func(priv ed25519.PrivateKey, files signing.SiteFiles) *signing.Issuer {
		site, err := signing.NewSite(priv, files)
		require.NoError(t, err)
		return signing.NewIssuer(x.store, signing.IssuerOptions{Site: site, Now: func() time.Time { return now }})
	}
	_, stranger, err := licensefile.GenerateKey()
	require.NoError(t, err)
	exp := now.Add(time.Hour)
	lease := func(licenseID, feature string) server.Lease {
		return server.Lease{
			ID: server.NewID(server.PrefixLeaseID), LicenseID: licenseID, TenantID: server.DefaultTenantID,
			Fingerprint: "laptop-1", Feature: feature, State: server.LeaseActive, ExpiresAt: exp,
		}
	}
	certify := func(iss *signing.Issuer, l server.Lease) string {
		cert, err := iss.Certificate(context.Background(), l, signing.Binding{KeyHash: signing.LicenseKeyHash("key"), Nonce: "n"})
		require.NoError(t, err)
		return cert
	}
	ours := issuer(x.site.Private, c)
	render := licensefile.GrantID("lic_cad", licensefile.Grant{ID: "render-2024"})
	good := certify(ours, lease("lic_cad", ""))
	_, otherVendor, err := licensefile.GenerateKey()
	require.NoError(t, err)
	byOtherVendor, err := licensefile.Sign(x.file(7, 2), otherVendor)
	require.NoError(t, err)
	head, sig := strings.Split(token, ".")[0], strings.Split(token, ".")[2]
	swapped := head + "." + strings.Split(tokenOf(t, x.signed(t, x.file(8, 50))), ".")[1] + "." + sig

	type nodeCase struct {
		File        string          `json:"file"`
		Certificate string          `json:"certificate"`
		VendorKey   licensefile.JWK `json:"vendor_key"`
		Now         int64           `json:"now"`
	}
	type verdict struct {
		OK      bool   `json:"ok"`
		Reason  string `json:"reason"`
		Serial  int64  `json:"serial"`
		License string `json:"license"`
		LeaseID string `json:"lease_id"`
	}
	cases := []struct {
		name string
		file string
		cert string
		at   time.Time
		want string // the refusal's reason, "" when it chains
		goes error  // the Go client's error
	}{
		{"site.lic and a certificate of its license", string(siteLic), good, now, "", nil},
		{"the file's JWS, as GetSignedLicenseFile answers it", token, good, now, "", nil},
		{"a seat of a feature the file grants", token, certify(ours, lease(render, "render")), now, "", nil},
		{"a certificate signed by a site key the file does not name", token, certify(issuer(stranger, c), lease("lic_cad", "")), now, "site-key", client.ErrWrongSiteKey},
		{"a certificate of the tenant's key (a license the file lacks)", token, certify(ours, lease("lic_other", "")), now, "site-key", client.ErrWrongSiteKey},
		{"a file of another vendor", string(byOtherVendor), good, now, "file-signature", client.ErrLicenseFileInvalid},
		{"another file's payload under the file's signature", swapped, good, now, "file-signature", client.ErrLicenseFileInvalid},
		{"a certificate naming another serial", token, certify(issuer(x.site.Private, fixedFile{6, "cad"}), lease("lic_cad", "")), now, "serial", client.ErrWrongLicenseFile},
		{"a certificate naming a license the file lacks", token, certify(issuer(x.site.Private, fixedFile{7, "nope"}), lease("lic_cad", "")), now, "license", client.ErrLicenseNotInFile},
		{"a seat of a feature the file does not grant", token, certify(ours, lease("lic_cad.0badf00d", "warp")), now, "license", client.ErrLicenseNotInFile},
		{"checked at the file's not_after", token, good, x.file(7, 2).NotAfter, "file-expired", client.ErrLicenseFileExpired},
		{"checked at the certificate's exp", token, good, exp, "expired", client.ErrCertificateExpired},
	}
	in := make([]nodeCase, len(cases))
	for i, tc := range cases {
		in[i] = nodeCase{File: tc.file, Certificate: tc.cert, VendorKey: licensefile.NewJWK(x.vendorPub), Now: tc.at.Unix()}
	}
	input, err := json.Marshal(in)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/verify-chain.mjs")
	cmd.Stdin = strings.NewReader(string(input))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var verdicts []verdict
	require.NoError(t, json.Unmarshal(out, &verdicts), "node said %s", out)
	require.Len(t, verdicts, len(cases))

	vendorPEM, err := licensefile.MarshalPublicKey(x.vendorPub)
	require.NoError(t, err)
	for i, tc := range cases {
		v := verdicts[i]
		claims, goErr := client.VerifyChainOffline(tc.cert, []byte(tc.file), vendorPEM, tc.at)
		if tc.want == "" {
			require.True(t, v.OK, "%s: node says %s", tc.name, v.Reason)
			require.EqualValues(t, 7, v.Serial, tc.name)
			require.Equal(t, "cad", v.License, tc.name)
			require.NoError(t, goErr, tc.name)
			require.Equal(t, v.LeaseID, claims.LeaseID, tc.name)
			continue
		}
		require.Equal(t, verdict{Reason: tc.want}, v, tc.name)
		require.ErrorIs(t, goErr, tc.goes, "%s: Go agrees", tc.name)
	}
}

// tokenOf is the JWS of an armoured license file.
func tokenOf(t *testing.T, data []byte) string {
	t.Helper()
	text := string(data)
	i := strings.Index(text, "-----BEGIN SEATD SIGNATURE-----")
	j := strings.Index(text, "-----END SEATD SIGNATURE-----")
	require.True(t, i >= 0 && j > i)
	return strings.Join(strings.Fields(text[i+len("-----BEGIN SEATD SIGNATURE-----"):j]), "")
}
