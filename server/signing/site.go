package signing

import (
	"crypto/ed25519"
	"fmt"

	"github.com/seatd/seatd/server"
)

// SiteFiles tells a Site what the license file in force says of a
// lease's license (docs/concepts/license-files.md): locked.Controller.
type SiteFiles interface {
	// FileLicense returns the serial of the license file in force and the
	// file's id of the license licenseID of tenant tenantID (the vendor's,
	// License.ID in the file); ok is false when the file does not hold it.
	FileLicense(tenantID, licenseID string) (serial int64, fileLicenseID string, ok bool)
}

// Site signs locked mode's certificates with the site key. The license
// file in force names that key and the vendor signed the file, so a
// product that holds only the vendor's public key verifies the chain
// vendor → file → site key → certificate. The site key signs the
// certificates itself, rather than certifying the tenant's lease-signing
// key: one signature fewer to check and no delegation document to invent,
// and the site key is kept exactly as the lease-signing keys are (in the
// store, sealed), so signing with it risks nothing they do not.
type Site struct {
	signer *keySigner
	pub    ed25519.PublicKey
	files  SiteFiles
}

// NewSite is the signer of the site key priv for the license files files
// tells of.
func NewSite(priv ed25519.PrivateKey, files SiteFiles) (*Site, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("site key: %d bytes, not an Ed25519 private key", len(priv))
	}
	pub := priv.Public().(ed25519.PublicKey)
	s, err := newKeySigner(KeyID(pub), priv)
	if err != nil {
		return nil, fmt.Errorf("site key: %w", err)
	}
	return &Site{signer: s, pub: pub, files: files}, nil
}

// SiteTenant is the tenant whose licenses locked mode takes from the
// file (locked.Sync): its JWKS publishes the site key and its list of
// returned certificates is signed by it.
const SiteTenant = server.DefaultTenantID

// PublicKey is the site key's public half as a published key (ID,
// PublicKey; no private half, no times).
func (s *Site) PublicKey() server.SigningKey {
	return server.SigningKey{ID: s.signer.kid, TenantID: SiteTenant, PublicKey: s.pub}
}

// sign signs c when the file in force holds its lease's license, naming
// the file's serial and license id; ok false when it does not (the
// tenant's key signs it then, as without a file: a certificate of the
// site key always names a license the file grants).
func (s *Site) sign(c Claims) (token string, ok bool, err error) {
	serial, id, ok := s.files.FileLicense(c.TenantID, c.LicenseID)
	if !ok {
		return "", false, nil
	}
	c.FileSerial, c.FileLicenseID = serial, id
	token, err = s.signer.sign(c)
	return token, true, err
}
