package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The links of the chain vendor → license file → site key → certificate
// that a seatd in locked mode (docs/concepts/license-files.md) gives its
// certificates. A refusal is a *CertificateError whose Chain is one of
// these: errors.Is(err, ErrWrongSiteKey) and errors.Is(err,
// ErrBadCertificate) both hold.
var (
	// ErrLicenseFileInvalid: the license file is not one the vendor's keys
	// verify: not a license file, signed by a key that is not among them,
	// a signature that does not verify, or terms that do not decode.
	ErrLicenseFileInvalid = errors.New("license file not signed by the vendor")
	// ErrLicenseFileExpired: the license file is at or past its not_after
	// (now, or when the certificate was signed).
	ErrLicenseFileExpired = errors.New("license file past its not_after")
	// ErrWrongSiteKey: the certificate is not signed by the site key the
	// license file names (another seatd's key, or forged).
	ErrWrongSiteKey = errors.New("certificate not signed by the site key the license file names")
	// ErrWrongLicenseFile: the certificate names another license file
	// (serial) than the one it is checked against, or none (a seatd not in
	// locked mode).
	ErrWrongLicenseFile = errors.New("certificate names another license file")
	// ErrLicenseNotInFile: the certificate's license, or its feature, is
	// not one the license file grants.
	ErrLicenseNotInFile = errors.New("certificate's license not granted by the license file")
)

func chainErr(link error, format string, args ...any) *CertificateError {
	return &CertificateError{Chain: link, Problem: link.Error() + ": " + fmt.Sprintf(format, args...)}
}

// licenseFileType is the JWS typ of a license file.
const licenseFileType = "seatd-license-file-v1"

// VendorKeys are a vendor's public keys, which sign its license files.
// Safe for concurrent use.
type VendorKeys struct {
	byKid map[string]ed25519.PublicKey
}

// ParseVendorKeys reads the vendor's public keys in any form the vendor
// hands them out (seatctl vendor keygen writes vendor.pub): PEM "PUBLIC
// KEY" blocks (one or more: a vendor that changes its key ships both), a
// JWK or a JWKS, or one base64url 32-byte Ed25519 key. A key that is not
// Ed25519, or a private key, is an error, never skipped: a product built
// with the wrong key must say so, not that every file is forged. Embed
// vendor.pub in the product: it is what every check starts from.
func ParseVendorKeys(data []byte) (*VendorKeys, error) {
	text := bytes.TrimSpace(data)
	var keys []ed25519.PublicKey
	var err error
	switch {
	case len(text) == 0:
		return nil, errors.New("parse vendor keys: empty")
	case bytes.HasPrefix(text, []byte("-----BEGIN")):
		keys, err = pemPublicKeys(text)
	case text[0] == '{':
		keys, err = jwkPublicKeys(text)
	default:
		raw, derr := base64.RawURLEncoding.DecodeString(strings.TrimRight(string(text), "="))
		if derr != nil || len(raw) != ed25519.PublicKeySize {
			return nil, errors.New("parse vendor keys: neither PEM, JSON (JWK, JWKS) nor a base64url 32-byte Ed25519 key")
		}
		keys = []ed25519.PublicKey{raw}
	}
	if err != nil {
		return nil, fmt.Errorf("parse vendor keys: %w", err)
	}
	v := &VendorKeys{byKid: map[string]ed25519.PublicKey{}}
	for _, k := range keys {
		v.byKid[keyID(k)] = k
	}
	return v, nil
}

func pemPublicKeys(text []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for len(bytes.TrimSpace(text)) > 0 {
		block, rest := pem.Decode(text)
		if block == nil {
			return nil, errors.New("a PEM block is cut short or followed by other text")
		}
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("a PEM %q block (want \"PUBLIC KEY\"; is this a private key?)", block.Type)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		pub, ok := key.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
		}
		keys = append(keys, pub)
		text = rest
	}
	return keys, nil
}

func jwkPublicKeys(text []byte) ([]ed25519.PublicKey, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(text, &set); err != nil || len(set.Keys) == 0 {
		var one jose.JSONWebKey
		if err := json.Unmarshal(text, &one); err != nil {
			return nil, fmt.Errorf("not a JWK or JWKS: %w", err)
		}
		set.Keys = []jose.JSONWebKey{one}
	}
	keys := make([]ed25519.PublicKey, 0, len(set.Keys))
	for _, k := range set.Keys {
		pub, ok := k.Key.(ed25519.PublicKey)
		if !ok || !k.IsPublic() {
			return nil, fmt.Errorf("JWK %q holds a %T, or a private key: want an Ed25519 public key", k.KeyID, k.Key)
		}
		keys = append(keys, pub)
	}
	return keys, nil
}

// keyID is a public key's kid as seatd computes it: base64url of the
// first 12 bytes of its SHA-256.
func keyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// KeyIDs are the kids of the keys, in no order.
func (v *VendorKeys) KeyIDs() []string {
	ids := make([]string, 0, len(v.byKid))
	for id := range v.byKid {
		ids = append(ids, id)
	}
	return ids
}

// LicenseFile is a license file the vendor's keys verified: what the
// vendor sold the site, and the site key that signs its certificates.
type LicenseFile struct {
	Serial      int64
	Customer    string
	IssuedAt    time.Time
	NotAfter    time.Time // nothing chains to the file from then on
	SiteKeyID   string    // the kid of the site key the file names
	VendorKeyID string    // the kid of the vendor key that signed it
	Licenses    []FileLicense
	// Token is the file's JWS: store it with a borrowed lease's
	// certificate, for VerifyChainOffline.
	Token string

	siteKey ed25519.PublicKey
}

// FileLicense is one license a file grants: its id (the vendor's; the
// seatd license id is "lic_" and it) and the features of its grants.
type FileLicense struct {
	ID       string
	Name     string
	Features []string
}

// fileJSON is what a client reads of a file's payload. Unlike seatd, it
// ignores fields it does not know: seatd judges the terms (and refuses a
// file it does not fully understand); a product checks only whence its
// certificates come, and keeps working against a later seatd.
type fileJSON struct {
	Serial   int64     `json:"serial"`
	Customer string    `json:"customer"`
	IssuedAt time.Time `json:"issued_at"`
	NotAfter time.Time `json:"not_after"`
	SiteKey  struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
	} `json:"site_key"`
	Licenses []struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Grants []struct {
			Feature string `json:"feature"`
		} `json:"grants"`
	} `json:"licenses"`
}

// VerifyLicenseFile checks a license file with the vendor's keys: the
// file as seatctl vendor sign wrote it (site.lic) or its JWS alone (the
// signature block, as GetSignedLicenseFile answers it): signed (EdDSA,
// typ seatd-license-file-v1) by the vendor key its kid names, naming an
// Ed25519 site key, and before its not_after at now. The readable copy
// of a site.lic is not read: the signed payload is what counts. Errors
// are ErrLicenseFileInvalid or ErrLicenseFileExpired (and
// ErrBadCertificate).
func (v *VendorKeys) VerifyLicenseFile(file []byte, now time.Time) (*LicenseFile, error) {
	token := signatureBlock(string(file))
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(jws.Signatures) != 1 {
		return nil, chainErr(ErrLicenseFileInvalid, "not a license file, nor its JWS (alg EdDSA)")
	}
	h := jws.Signatures[0].Header
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != licenseFileType {
		return nil, chainErr(ErrLicenseFileInvalid, "typ %q, not %q", typ, licenseFileType)
	}
	pub, ok := v.byKid[h.KeyID]
	if !ok {
		return nil, chainErr(ErrLicenseFileInvalid, "signed by key %q, none of the vendor's %v", h.KeyID, v.KeyIDs())
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		return nil, chainErr(ErrLicenseFileInvalid, "the signature does not verify with the vendor's key %q", h.KeyID)
	}
	var raw fileJSON
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, chainErr(ErrLicenseFileInvalid, "its terms do not decode: %v", err)
	}
	sk := raw.SiteKey
	x, err := base64.RawURLEncoding.DecodeString(sk.X)
	switch {
	case raw.Serial < 1:
		return nil, chainErr(ErrLicenseFileInvalid, "serial %d", raw.Serial)
	case raw.NotAfter.IsZero():
		return nil, chainErr(ErrLicenseFileInvalid, "no not_after")
	case sk.Kty != "OKP" || sk.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize:
		return nil, chainErr(ErrLicenseFileInvalid, "its site_key is not an Ed25519 public key")
	case sk.Kid != keyID(x):
		return nil, chainErr(ErrLicenseFileInvalid, "its site_key's kid %q is not the kid of its key", sk.Kid)
	}
	f := &LicenseFile{
		Serial: raw.Serial, Customer: raw.Customer, IssuedAt: raw.IssuedAt, NotAfter: raw.NotAfter,
		SiteKeyID: sk.Kid, VendorKeyID: h.KeyID, Token: token, siteKey: x,
	}
	for _, l := range raw.Licenses {
		fl := FileLicense{ID: l.ID, Name: l.Name}
		for _, g := range l.Grants {
			fl.Features = append(fl.Features, g.Feature)
		}
		f.Licenses = append(f.Licenses, fl)
	}
	if !now.Before(f.NotAfter) {
		return nil, chainErr(ErrLicenseFileExpired, "serial %d ended at %s (now %s)", f.Serial, f.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return f, nil
}

// signatureBlock is the JWS of an armoured document (the lines between
// its signature armour, joined), or text itself, trimmed, when it has
// none (a bare JWS).
func signatureBlock(text string) string {
	const begin, end = "-----BEGIN SEATD SIGNATURE-----", "-----END SEATD SIGNATURE-----"
	_, block, ok := strings.Cut(text, begin)
	if !ok {
		return strings.TrimSpace(text)
	}
	block, _, _ = strings.Cut(block, end)
	return strings.Join(strings.Fields(block), "")
}

// License is the file's license with the seatd id licenseID ("lic_" and
// the file's id), or nil.
func (f *LicenseFile) License(licenseID string) *FileLicense {
	for i := range f.Licenses {
		if "lic_"+f.Licenses[i].ID == licenseID {
			return &f.Licenses[i]
		}
	}
	return nil
}

// SigningKeys is the site key the file names, as a key set: to verify
// the site's signed list of returned certificates (SigningKeys.
// VerifyReturned), which a seatd in locked mode signs with it.
func (f *LicenseFile) SigningKeys() *SigningKeys {
	return &SigningKeys{byKid: map[string]ed25519.PublicKey{f.SiteKeyID: f.siteKey}}
}

// Verify checks a stored certificate against the file (verified with
// the vendor's keys: VerifyLicenseFile), the last links of the chain:
// signed by the site key the file names (ErrWrongSiteKey), naming the
// file's serial (ErrWrongLicenseFile), for a license, and a feature, the
// file grants (ErrLicenseNotInFile), signed before the file's not_after
// and checked before it (ErrLicenseFileExpired), and not expired at now
// (ErrCertificateExpired). The caller checks what the claims must say of
// it, as for SigningKeys.Verify (Claims.CheckHolder).
func (f *LicenseFile) Verify(cert string, now time.Time) (Claims, error) {
	c, err := f.verify(cert, now)
	if err != nil {
		return c, err
	}
	if !now.Before(c.Expiry) {
		return c, &CertificateError{Expired: true,
			Problem: fmt.Sprintf("expired at %s (now %s)", c.Expiry.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	}
	return c, nil
}

// verify checks every link but the certificate's own expiry.
func (f *LicenseFile) verify(cert string, now time.Time) (Claims, error) {
	jws, kid, err := parseCert(cert)
	if err != nil {
		return Claims{}, err
	}
	if kid != f.SiteKeyID {
		return Claims{}, chainErr(ErrWrongSiteKey, "signed by key %q, the license file (serial %d) names site key %q", kid, f.Serial, f.SiteKeyID)
	}
	payload, err := jws.Verify(f.siteKey)
	if err != nil {
		return Claims{}, chainErr(ErrWrongSiteKey, "the signature does not verify with site key %q", kid)
	}
	c, err := claimsOf(payload, kid)
	if err != nil {
		return Claims{}, err
	}
	switch l := f.License(c.LicenseID); {
	case c.FileSerial == 0:
		return c, chainErr(ErrWrongLicenseFile, "it names no license file (a seatd not in locked mode)")
	case c.FileSerial != f.Serial:
		return c, chainErr(ErrWrongLicenseFile, "it names serial %d, the file is serial %d", c.FileSerial, f.Serial)
	case l == nil || l.ID != c.FileLicenseID:
		return c, chainErr(ErrLicenseNotInFile, "license %q (file id %q) is not in file serial %d", c.LicenseID, c.FileLicenseID, f.Serial)
	case c.Feature != "" && !slices.Contains(l.Features, c.Feature):
		return c, chainErr(ErrLicenseNotInFile, "license %q of file serial %d grants no feature %q", l.ID, f.Serial, c.Feature)
	case !c.IssuedAt.Before(f.NotAfter) || !now.Before(f.NotAfter):
		return c, chainErr(ErrLicenseFileExpired, "file serial %d ended at %s (certificate signed %s, now %s)", f.Serial,
			f.NotAfter.UTC().Format(time.RFC3339), c.IssuedAt.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return c, nil
}

// VerifyChainOffline checks a stored certificate (a borrowed seat, say)
// from the vendor's public keys alone, without a network: the license
// file (site.lic, or the JWS Lease.LicenseFile gave) with
// ParseVendorKeys(vendorKeys).VerifyLicenseFile, then the certificate
// with LicenseFile.Verify. Every error satisfies errors.Is(err,
// ErrBadCertificate), and names its link (ErrLicenseFileInvalid,
// ErrLicenseFileExpired, ErrWrongSiteKey, ErrWrongLicenseFile,
// ErrLicenseNotInFile, ErrCertificateExpired); a vendor key that does
// not parse is a plain error.
func VerifyChainOffline(cert string, licenseFile, vendorKeys []byte, now time.Time) (Claims, error) {
	v, err := ParseVendorKeys(vendorKeys)
	if err != nil {
		return Claims{}, err
	}
	f, err := v.VerifyLicenseFile(licenseFile, now)
	if err != nil {
		return Claims{}, err
	}
	return f.Verify(cert, now)
}

// check verifies the certificate of an answer against the file: the
// chain (verify), then what the answer's certificate must say (as
// SigningKeys.check).
func (f *LicenseFile) check(cert string, want expectation, now time.Time) (Claims, error) {
	c, err := f.verify(cert, now)
	if err != nil {
		return c, err
	}
	return c, want.met(c, now)
}

// FetchLicenseFile asks seatd for the license file in force (locked
// mode) as its JWS: VendorKeys.VerifyLicenseFile checks it. Unlike a
// JWKS, it may be fetched from the server it is to check: its trust
// comes from the vendor's signature, not from who answers. A seatd
// without a license file answers FAILED_PRECONDITION
// LICENSE_FILE_NOT_CONFIGURED.
func (c *Client) FetchLicenseFile(ctx context.Context) (string, error) {
	resp, err := c.seats.GetSignedLicenseFile(ctx, &seatdv1.GetSignedLicenseFileRequest{})
	if err != nil {
		return "", wrap(err)
	}
	return resp.GetLicenseFile(), nil
}

// fileChain checks certificates with Options.VendorKeys: it keeps the
// license file in force, fetched from seatd when it has none or when a
// certificate names another serial (a renewal), and verified with the
// vendor's keys before use.
type fileChain struct {
	vendor  *VendorKeys
	fetch   func(context.Context) (string, error)
	timeout time.Duration

	mu   sync.Mutex // one fetch at a time
	file *LicenseFile
}

// check verifies cert (want: as SigningKeys.check) through the file in
// force, and returns the file it chained to.
func (fc *fileChain) check(ctx context.Context, cert string, want expectation, now time.Time) (*LicenseFile, error) {
	f, err := fc.fileFor(ctx, cert, now)
	if err != nil {
		return nil, err
	}
	if _, err := f.check(cert, want, now); err != nil {
		return nil, err
	}
	return f, nil
}

// fileFor is the file kept, or the one seatd has in force now when none
// is kept or the certificate names another serial (read before it is
// verified: only to decide whether to fetch).
func (fc *fileChain) fileFor(ctx context.Context, cert string, now time.Time) (*LicenseFile, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	// A certificate that names no serial is checked against the file
	// kept (and refused): fetching could not help it.
	if s := unverifiedSerial(cert); fc.file != nil && (s == fc.file.Serial || s == 0) && now.Before(fc.file.NotAfter) {
		return fc.file, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fc.timeout)
	defer cancel()
	token, err := fc.fetch(ctx)
	if err != nil {
		return nil, chainErr(ErrLicenseFileInvalid, "the license file could not be fetched from seatd: %v", err)
	}
	f, err := fc.vendor.VerifyLicenseFile([]byte(token), now)
	if err != nil {
		return nil, err
	}
	fc.file = f
	return f, nil
}

// unverifiedSerial is the file_serial a certificate claims, 0 if none.
func unverifiedSerial(cert string) int64 {
	jws, _, err := parseCert(cert)
	if err != nil {
		return 0
	}
	var c struct {
		FileSerial int64 `json:"file_serial"`
	}
	_ = json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c)
	return c.FileSerial
}
