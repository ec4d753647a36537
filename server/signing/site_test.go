package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// oneFile is a SiteFiles holding one license of the site tenant.
type oneFile struct {
	serial            int64
	licenseID, fileID string
}

func (f oneFile) FileLicense(tenantID, licenseID string) (int64, string, bool) {
	if tenantID != SiteTenant || licenseID != f.licenseID {
		return 0, "", false
	}
	return f.serial, f.fileID, true
}

// TestSiteSignsTheFilesLicenses: in locked mode a certificate of a
// license the file holds is signed by the site key and names the file's
// serial and license id; any other (another license, another tenant) is
// signed by its tenant's key, as without a file, and names no file. The
// site tenant's JWKS key and returned list are the site key's.
func TestSiteSignsTheFilesLicenses(t *testing.T) {
	t.Parallel()
	_, sitePriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	fileLease := testLease(SiteTenant, time.Now().Add(time.Minute))
	site, err := NewSite(sitePriv, oneFile{serial: 7, licenseID: fileLease.LicenseID, fileID: "cad"})
	require.NoError(t, err)
	c := newClock()
	iss := NewIssuer(newMemKeys(SiteTenant, "acme"), IssuerOptions{Now: c.now, Site: site})
	ctx := t.Context()
	siteKey := server.SigningKey{ID: KeyID(sitePriv.Public().(ed25519.PublicKey)), PublicKey: sitePriv.Public().(ed25519.PublicKey)}

	token, err := iss.Certificate(ctx, fileLease, Binding{KeyHash: testKeyHash, Nonce: "n"})
	require.NoError(t, err)
	claims, err := Verify(token, []server.SigningKey{siteKey})
	require.NoError(t, err, "signed by the site key")
	require.EqualValues(t, 7, claims.FileSerial)
	require.Equal(t, "cad", claims.FileLicenseID)
	require.Equal(t, fileLease.LicenseID, claims.LicenseID)
	require.Contains(t, string(mustPayload(t, token)), `"file_serial":7,"file_license_id":"cad"`)

	published, ok := iss.SiteKey(SiteTenant)
	require.True(t, ok)
	require.Equal(t, siteKey.ID, published.ID)
	require.Equal(t, siteKey.PublicKey, published.PublicKey)
	require.Empty(t, published.PrivateKey)
	_, ok = iss.SiteKey("acme")
	require.False(t, ok, "only the site tenant's JWKS names the site key")

	for name, l := range map[string]server.Lease{
		"a license the file does not hold": func() server.Lease {
			l := fileLease
			l.LicenseID = "lic_other"
			return l
		}(),
		"another tenant's license": testLease("acme", time.Now().Add(time.Minute)),
	} {
		token, err := iss.Certificate(ctx, l, Binding{KeyHash: testKeyHash, Nonce: "n"})
		require.NoError(t, err, name)
		_, err = Verify(token, []server.SigningKey{siteKey})
		require.ErrorIs(t, err, ErrBadCertificate, "%s: not the site key's", name)
		keys, err := iss.Published(ctx, l.TenantID)
		require.NoError(t, err)
		claims, err := Verify(token, keys)
		require.NoError(t, err, "%s: the tenant's key", name)
		require.Zero(t, claims.FileSerial, name)
		require.NotContains(t, string(mustPayload(t, token)), "file_", "%s: names no file", name)
	}

	list, err := iss.ReturnedList(ctx, SiteTenant, nil)
	require.NoError(t, err)
	jws, err := jose.ParseSignedCompact(list, []jose.SignatureAlgorithm{jose.EdDSA})
	require.NoError(t, err)
	require.Equal(t, siteKey.ID, jws.Signatures[0].Header.KeyID, "the site tenant's returned list")
	payload, err := jws.Verify(ed25519.PublicKey(siteKey.PublicKey))
	require.NoError(t, err)
	var got ReturnedList
	require.NoError(t, json.Unmarshal(payload, &got))
	require.Equal(t, SiteTenant, got.TenantID)
	other, err := iss.ReturnedList(ctx, "acme", nil)
	require.NoError(t, err)
	acme, err := iss.Published(ctx, "acme")
	require.NoError(t, err)
	_, err = Verify(other, acme)
	require.NoError(t, err, "another tenant's list: its own key")
}

func TestNewSiteRefusesAKeyThatIsNotEd25519(t *testing.T) {
	t.Parallel()
	_, err := NewSite(make([]byte, 12), oneFile{})
	require.Error(t, err)
}
