package client

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"google.golang.org/protobuf/encoding/protojson"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Errors of certificate checks, to test with errors.Is. Every refused
// certificate is ErrBadCertificate; one whose exp has passed is also
// ErrCertificateExpired. errors.As finds the *CertificateError.
var (
	ErrBadCertificate     = errors.New("lease certificate not valid")
	ErrCertificateExpired = errors.New("lease certificate expired")
	// ErrCertificateReturned: the certificate is on the tenant's signed
	// list of returned certificates (returned.go).
	ErrCertificateReturned = errors.New("lease certificate returned early")
)

// ReasonBadCertificate is what Reason returns for a lease the client gave
// up because seatd's answer failed verification (Options.SigningKeys): a
// missing certificate, one signed by a key not in the JWKS, another nonce,
// another deadline or lease. seatd never sends it; the client concludes it.
// errors.Is(err, ErrLeaseLost) and errors.Is(err, ErrBadCertificate) hold.
const ReasonBadCertificate = "LEASE_CERTIFICATE_INVALID"

// certIssuer is the iss claim of every lease certificate.
const certIssuer = "seatd"

// CertificateError says why a lease certificate was refused.
type CertificateError struct {
	// Problem is what failed, e.g. "signed by a key not in the JWKS".
	Problem string
	// Expired: the certificate's exp has passed (ErrCertificateExpired).
	Expired bool
	// Returned: the signed list of returned certificates names it
	// (ErrCertificateReturned).
	Returned bool
	// Chain is the link of the chain from the vendor's key that failed
	// (Options.VendorKeys, LicenseFile.Verify): ErrLicenseFileInvalid,
	// ErrLicenseFileExpired, ErrWrongSiteKey, ErrWrongLicenseFile or
	// ErrLicenseNotInFile; nil for any other refusal.
	Chain error
}

func (e *CertificateError) Error() string { return ErrBadCertificate.Error() + ": " + e.Problem }

// Is makes errors.Is(err, ErrBadCertificate) hold for every refusal,
// errors.Is(err, ErrCertificateExpired) for an expired certificate, and
// errors.Is(err, e.Chain) for a link of the chain from the vendor's key.
func (e *CertificateError) Is(target error) bool {
	return target == ErrBadCertificate || (e.Expired && target == ErrCertificateExpired) ||
		(e.Returned && target == ErrCertificateReturned) || (e.Chain != nil && target == e.Chain)
}

func badCert(format string, args ...any) *CertificateError {
	return &CertificateError{Problem: fmt.Sprintf(format, args...)}
}

// Claims are what a lease certificate says: that seatd (the tenant's key)
// granted lease LeaseID of license LicenseID, opened by the license key
// whose SHA-256 is LicenseKeySHA256, to the client BoundTo names, until
// Expiry. CheckHolder compares them with what a client knows of itself.
type Claims struct {
	Issuer      string // always "seatd"
	LeaseID     string // the sub claim and the lease_id claim
	TenantID    string // the tenant whose key signed it
	LicenseID   string // the license the seat belongs to
	Fingerprint string // the machine the lease was granted to (the first one, for a shared lease)
	User        string // the user it was granted to, "" if none was sent
	Hostname    string // the hostname it was granted to, "" if none was sent
	// BoundTo is whom the lease is for: "fingerprint" (Fingerprint), or,
	// when the license shares one lease per user or per hostname, "user"
	// (User) or "hostname" (Hostname). "" from a seatd that did not bind
	// its certificates (CheckHolder refuses those).
	BoundTo string
	// LicenseKeySHA256 is the SHA-256 of the license key, lowercase hex;
	// "" from a seatd that did not bind its certificates.
	LicenseKeySHA256 string
	IssuedAt         time.Time // when seatd signed it (iat)
	Expiry           time.Time // the lease's deadline, whole seconds rounded down (exp)
	Borrowed         bool      // a seat borrowed for offline use (Client.Borrow)
	Nonce            string    // the nonce of the request it answers
	KeyID            string    // the kid of the key that signed it
	// For a seat of a feature grant (AcquireOptions.Feature): the feature
	// and the version first asked for, the grant's id, the highest version
	// the grant covers ("" every version) and its expiry (zero when it has
	// none); all empty for the license's base seats. CheckHolder compares
	// Feature with the client's own and checks that GrantVersion covers
	// the client's version: a lease handed back (the same machine asking
	// again) may have been first asked for at another version its grant
	// also covers.
	Feature        string
	Version        string
	GrantID        string
	GrantVersion   string
	GrantExpiresAt time.Time
	// For a certificate of a seatd in locked mode, signed by its site key
	// (LicenseFile.Verify): the serial of the license file in force and
	// the file's id of the license (LicenseID is "lic_" and it); 0 and ""
	// otherwise.
	FileSerial    int64
	FileLicenseID string
}

// The values of Claims.BoundTo.
const (
	BoundToFingerprint = "fingerprint"
	BoundToUser        = "user"
	BoundToHostname    = "hostname"
)

// LicenseKeyHash is the license_key_sha256 claim of a license key.
func LicenseKeyHash(licenseKey string) string {
	sum := sha256.Sum256([]byte(licenseKey))
	return hex.EncodeToString(sum[:])
}

// CheckHolder reports whether the certificate is for the client that asks
// with o: o.LicenseKey's hash is LicenseKeySHA256, the identity BoundTo
// names is o's own (o.Fingerprint, or o.User or o.Hostname for a lease
// the license shares per user or hostname), its feature is o.Feature (a
// seat of another module unlocks nothing), and its grant covers
// o.Version (o.Version or GrantVersion "", or o.Version <= GrantVersion
// compared as dotted numbers). It compares only with what
// the client knows of itself, never with what an answer says, so a relay
// that holds one lease cannot serve other clients with its certificates.
// A certificate of a seatd that did not bind its certificates (no
// bound_to or license_key_sha256 claim) is refused. Every error satisfies
// errors.Is(err, ErrBadCertificate).
func (c Claims) CheckHolder(o AcquireOptions) error {
	if err := holderOf(o).check(c); err != nil {
		return err
	}
	return nil
}

// holder is what a client knows of itself, which a certificate must name.
type holder struct {
	keyHash, fingerprint, user, hostname string
	feature, version                     string // what it asked for
}

func holderOf(o AcquireOptions) holder {
	return holder{keyHash: LicenseKeyHash(o.LicenseKey), fingerprint: o.Fingerprint, user: o.User, hostname: o.Hostname,
		feature: o.Feature, version: o.Version}
}

// check refuses a certificate for another license key or another client.
func (h holder) check(c Claims) *CertificateError {
	if c.LicenseKeySHA256 == "" || c.BoundTo == "" {
		return badCert("it names no license key or holder (signed by a seatd that does not bind certificates to their client: upgrade seatd)")
	}
	if c.LicenseKeySHA256 != h.keyHash {
		return badCert("for another license key than the one this client uses")
	}
	var theirs, ours string
	switch c.BoundTo {
	case BoundToFingerprint:
		theirs, ours = c.Fingerprint, h.fingerprint
	case BoundToUser:
		theirs, ours = c.User, h.user
	case BoundToHostname:
		theirs, ours = c.Hostname, h.hostname
	default:
		return badCert("bound to %q, which this client does not know", c.BoundTo)
	}
	if ours == "" || theirs != ours {
		return badCert("for %s %q, not this client's %q", c.BoundTo, theirs, ours)
	}
	if c.Feature != h.feature || !versionCovered(h.version, c.GrantVersion) {
		return badCert("for feature %q up to version %q, not the %q version %q this client asked for", c.Feature, c.GrantVersion, h.feature, h.version)
	}
	return nil
}

// claimsJSON is the certificate's payload.
type claimsJSON struct {
	Issuer      string           `json:"iss"`
	Subject     string           `json:"sub"`
	LeaseID     string           `json:"lease_id"`
	TenantID    string           `json:"tenant_id"`
	LicenseID   string           `json:"license_id"`
	Fingerprint string           `json:"fingerprint"`
	User        string           `json:"user"`
	Hostname    string           `json:"hostname"`
	BoundTo     string           `json:"bound_to"`
	KeySHA256   string           `json:"license_key_sha256"`
	IssuedAt    *jwt.NumericDate `json:"iat"`
	Expiry      *jwt.NumericDate `json:"exp"`
	Borrowed    bool             `json:"borrowed"`
	Nonce       string           `json:"nonce"`
	Feature     string           `json:"feature"`
	Version     string           `json:"version"`
	GrantID     string           `json:"grant_id"`
	GrantVer    string           `json:"grant_version"`
	GrantExpiry *jwt.NumericDate `json:"grant_expires_at"`
	FileSerial  int64            `json:"file_serial"`
	FileLicense string           `json:"file_license_id"`
}

// SigningKeys are a tenant's public keys (a JWKS, as GetSigningKeys and
// GET /v1/tenants/{tenant_id}/jwks.json publish it), to verify lease
// certificates with. Safe for concurrent use.
type SigningKeys struct {
	byKid map[string]ed25519.PublicKey
}

// ParseSigningKeys reads a JWKS ({"keys": [...]}). Only Ed25519 public keys
// (kty OKP, crv Ed25519) with a kid are kept; keys of other types are
// skipped, so that a JWKS may grow other kinds later. It fails when no key
// is left, when a kid appears twice, or when the set holds a private key
// (which must never leave seatd, let alone be embedded in a product).
func ParseSigningKeys(jwks []byte) (*SigningKeys, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		return nil, fmt.Errorf("parse JWKS: %w", err)
	}
	keys := &SigningKeys{byKid: map[string]ed25519.PublicKey{}}
	for i, raw := range set.Keys {
		var head struct {
			Kty, Crv, Kid, Alg, Use, D string
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("parse JWKS: key %d: %w", i, err)
		}
		if head.Kty != "OKP" || head.Crv != "Ed25519" {
			continue
		}
		if head.D != "" {
			return nil, fmt.Errorf("parse JWKS: key %d (kid %q) holds a private key; publish only public keys", i, head.Kid)
		}
		if head.Kid == "" || (head.Alg != "" && head.Alg != string(jose.EdDSA)) || (head.Use != "" && head.Use != "sig") {
			continue // unusable for lease certificates
		}
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("parse JWKS: key %q: %w", head.Kid, err)
		}
		pub, ok := jwk.Key.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("parse JWKS: key %q is not an Ed25519 public key", head.Kid)
		}
		if _, dup := keys.byKid[head.Kid]; dup {
			return nil, fmt.Errorf("parse JWKS: kid %q appears twice", head.Kid)
		}
		keys.byKid[head.Kid] = pub
	}
	if len(keys.byKid) == 0 {
		return nil, errors.New("parse JWKS: no Ed25519 signing key (kty OKP, crv Ed25519, with a kid)")
	}
	return keys, nil
}

// KeyIDs are the kids of the keys, in no order.
func (k *SigningKeys) KeyIDs() []string {
	ids := make([]string, 0, len(k.byKid))
	for id := range k.byKid {
		ids = append(ids, id)
	}
	return ids
}

// Verify checks a stored certificate without a network: a JWS compact
// token, alg EdDSA, signed by the key of the set named by its kid, issued
// by seatd, and not expired at now (now is before exp). It returns the
// certificate's claims; the caller checks what they must say for it
// (Claims.CheckHolder: its own license key and identity; Borrowed).
// Every error satisfies
// errors.Is(err, ErrBadCertificate).
func (k *SigningKeys) Verify(cert string, now time.Time) (Claims, error) {
	c, err := k.verify(cert)
	if err != nil {
		return Claims{}, err
	}
	if !now.Before(c.Expiry) {
		return c, &CertificateError{Expired: true,
			Problem: fmt.Sprintf("expired at %s (now %s)", c.Expiry.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	}
	return c, nil
}

// VerifyOffline is ParseSigningKeys(jwks) then Verify(cert, now): the
// product's start-up check of a stored certificate (a borrowed seat, say)
// with the JWKS it embeds.
func VerifyOffline(cert string, jwks []byte, now time.Time) (Claims, error) {
	keys, err := ParseSigningKeys(jwks)
	if err != nil {
		return Claims{}, err
	}
	return keys.Verify(cert, now)
}

// verify checks everything but the time.
func (k *SigningKeys) verify(cert string) (Claims, error) {
	jws, kid, err := parseCert(cert)
	if err != nil {
		return Claims{}, err
	}
	pub, ok := k.byKid[kid]
	if !ok {
		return Claims{}, badCert("signed by key %q, which the JWKS does not hold (another tenant's key, or a key newer than the JWKS: fetch it again after a rotation)", kid)
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		return Claims{}, badCert("signature does not verify with key %q", kid)
	}
	return claimsOf(payload, kid)
}

// parseCert reads a certificate's JWS and the kid of its one signature,
// verifying nothing.
func parseCert(cert string) (*jose.JSONWebSignature, string, error) {
	if cert == "" {
		return nil, "", badCert("none in seatd's answer")
	}
	jws, err := jose.ParseSignedCompact(cert, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, "", badCert("not a JWS compact token with alg EdDSA: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, "", badCert("%d signatures, want 1", len(jws.Signatures))
	}
	kid := jws.Signatures[0].Header.KeyID
	if kid == "" {
		return nil, "", badCert("no kid in its header")
	}
	return jws, kid, nil
}

// claimsOf reads a verified certificate's payload, signed by key kid.
func claimsOf(payload []byte, kid string) (Claims, error) {
	var raw claimsJSON
	if err := json.Unmarshal(payload, &raw); err != nil {
		return Claims{}, badCert("claims do not decode: %v", err)
	}
	switch {
	case raw.Issuer != certIssuer:
		return Claims{}, badCert("issuer %q, want %q", raw.Issuer, certIssuer)
	case raw.Subject == "" || raw.Subject != raw.LeaseID:
		return Claims{}, badCert("sub %q and lease_id %q must name the same lease", raw.Subject, raw.LeaseID)
	case raw.Expiry == nil:
		return Claims{}, badCert("no exp")
	}
	c := Claims{
		Issuer: raw.Issuer, LeaseID: raw.LeaseID, TenantID: raw.TenantID, LicenseID: raw.LicenseID,
		Fingerprint: raw.Fingerprint, User: raw.User, Hostname: raw.Hostname, BoundTo: raw.BoundTo, LicenseKeySHA256: raw.KeySHA256,
		Expiry: raw.Expiry.Time(), Borrowed: raw.Borrowed, Nonce: raw.Nonce, KeyID: kid,
		Feature: raw.Feature, Version: raw.Version, GrantID: raw.GrantID, GrantVersion: raw.GrantVer,
		FileSerial: raw.FileSerial, FileLicenseID: raw.FileLicense,
	}
	if raw.IssuedAt != nil {
		c.IssuedAt = raw.IssuedAt.Time()
	}
	if raw.GrantExpiry != nil {
		c.GrantExpiresAt = raw.GrantExpiry.Time()
	}
	return c, nil
}

// expectation is what a certificate in an answer must say.
type expectation struct {
	nonce     string
	leaseID   string
	licenseID string    // "" if not known
	holder    holder    // this client's own, not from any answer
	deadline  time.Time // the deadline the same answer told
	borrowed  bool
}

// check verifies a certificate that came with an answer: as Verify, and it
// answers the request we sent (nonce), for this lease, for this client
// (holder: our license key and our identity), with the deadline the
// answer told. exp is that deadline rounded down to whole seconds, so
// the two must be less than a second apart, and the deadline (exp plus at
// most a second) must not have passed by now.
func (k *SigningKeys) check(cert string, want expectation, now time.Time) (Claims, error) {
	c, err := k.verify(cert)
	if err != nil {
		return Claims{}, err
	}
	return c, want.met(c, now)
}

// met checks that c, verified, says what the answer's certificate must.
func (want expectation) met(c Claims, now time.Time) error {
	if err := want.holder.check(c); err != nil {
		return err
	}
	switch d := want.deadline.Sub(c.Expiry); {
	case want.nonce == "" || c.Nonce != want.nonce:
		return badCert("nonce %q is not the one sent (a recorded answer replayed?)", c.Nonce)
	case c.LeaseID != want.leaseID:
		return badCert("for lease %q, not %q", c.LeaseID, want.leaseID)
	case want.licenseID != "" && c.LicenseID != want.licenseID:
		return badCert("for license %q, not %q", c.LicenseID, want.licenseID)
	case c.Borrowed != want.borrowed:
		return badCert("borrowed is %t, want %t", c.Borrowed, want.borrowed)
	case d <= -time.Second || d >= time.Second:
		return badCert("exp %s is not the deadline seatd told (%s)", c.Expiry.UTC().Format(time.RFC3339), want.deadline.UTC().Format(time.RFC3339Nano))
	case !now.Before(c.Expiry.Add(time.Second)):
		return &CertificateError{Expired: true,
			Problem: fmt.Sprintf("expired at %s (now %s; is this machine's clock right?)", c.Expiry.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	}
	return nil
}

// newNonce is 16 random bytes, base64url: what a lease certificate repeats
// to show that it answers this request and is not a recording.
func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// FetchSigningKeys asks seatd for a tenant's JWKS ("" is the default
// tenant) and returns it as JSON, as GET /v1/tenants/{tenant_id}/jwks.json
// would: to embed in a product at build time, then ParseSigningKeys.
// Fetching it at run time from the server the product is meant to check
// proves nothing (a fake server would answer its own keys); do that only
// over TLS to a server you trust.
func (c *Client) FetchSigningKeys(ctx context.Context, tenantID string) ([]byte, error) {
	resp, err := c.seats.GetSigningKeys(ctx, &seatdv1.GetSigningKeysRequest{TenantId: tenantID})
	if err != nil {
		return nil, wrap(err)
	}
	return JWKS(resp)
}

// JWKS is a GetSigningKeys answer as a JWKS document (RFC 7517): the same
// JSON as the REST route, with every key's fields.
func JWKS(resp *seatdv1.GetSigningKeysResponse) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("encode JWKS: %w", err)
	}
	// protojson's spacing is unstable on purpose; give it a fixed form.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("encode JWKS: %w", err)
	}
	return json.MarshalIndent(v, "", "  ")
}
