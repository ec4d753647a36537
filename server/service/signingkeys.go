package service

import (
	"context"
	"sync"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/signing"
)

// MaxNonceLength bounds a request's nonce (AcquireSeatRequest.nonce).
const MaxNonceLength = 128

// CheckNonce refuses a nonce that is too long or not printable ASCII
// (space to tilde). An empty nonce is allowed: the certificate then
// carries "".
func CheckNonce(nonce string) error {
	if len(nonce) > MaxNonceLength {
		return server.Invalid("nonce", "must be at most %d characters", MaxNonceLength)
	}
	for i := range len(nonce) {
		if c := nonce[i]; c < 0x20 || c > 0x7e {
			return server.Invalid("nonce", "must be printable ASCII (e.g. 16 random bytes, base64url)")
		}
	}
	return nil
}

// Certificate signs l's lease certificate with its tenant's key, for a
// request that carried nonce (checked: CheckNonce), or returns "" when
// nobody asked for one (certify): a heartbeat's, whose request names the
// lease, not the license key the certificate names (licenseKeyHash).
func (s *Service) Certificate(ctx context.Context, l server.Lease, nonce string) (string, error) {
	if err := CheckNonce(nonce); err != nil {
		return "", err
	}
	if nonce == "" && !l.Borrowed {
		return "", nil
	}
	facts, err := s.licenseFacts(ctx, l)
	if err != nil {
		return "", err
	}
	g := facts.grants[l.LicenseID]
	return s.certify(ctx, l, signing.Binding{KeyHash: facts.keyHash, Nonce: nonce, GrantExpiresAt: g.expiresAt, GrantVersion: g.version})
}

// licenseFacts are what the certificates of l's license name: the
// license_key_sha256 claim (a license's key never changes, so it is read
// once per license and process, not at every heartbeat) and, for a lease
// of a grant, the grant's expiry and version, which an admin may change:
// read again when older than grantFactsTTL.
func (s *Service) licenseFacts(ctx context.Context, l server.Lease) (licenseFacts, error) {
	id := l.LicenseOf()
	f, ok := s.keyHash.get(id)
	if ok && (l.GrantID() == "" || f.fresh(l.GrantID(), s.now())) {
		return f, nil
	}
	lic, err := s.store.GetLicense(ctx, l.TenantID, id)
	if err != nil {
		return licenseFacts{}, err
	}
	f = licenseFacts{keyHash: signing.LicenseKeyHash(lic.Key), readAt: s.now(), grants: map[string]grantFacts{}}
	for _, g := range lic.Grants {
		f.grants[g.ID] = grantFacts{expiresAt: g.ExpiresAt, version: g.Version}
	}
	s.keyHash.put(id, f)
	return f, nil
}

// grantFactsTTL bounds how long a heartbeat's certificate may name a
// grant's expiry or version from before the grant was changed.
const grantFactsTTL = 5 * time.Second

// forgetLicenseFacts drops what licenseFacts keeps of a license (its
// grants changed here).
func (s *Service) forgetLicenseFacts(licenseID string) { s.keyHash.drop(licenseID) }

// maxKeyHashes bounds keyHashes. Licenses are made by administrators (and
// their number per tenant by the quotas), not by clients; past this many
// the map starts again empty, which costs one license read per license.
const maxKeyHashes = 1 << 16

type licenseFacts struct {
	keyHash string
	grants  map[string]grantFacts // by grant id
	readAt  time.Time
}

// grantFacts are what a certificate of a grant's lease says of the grant.
type grantFacts struct {
	expiresAt time.Time // zero: none
	version   string    // "": every version
}

// fresh reports whether f knows grant id, read within grantFactsTTL.
func (f licenseFacts) fresh(grantID string, now time.Time) bool {
	_, known := f.grants[grantID]
	return known && now.Sub(f.readAt) < grantFactsTTL
}

// keyHashes maps license ids to their licenseFacts.
type keyHashes struct {
	mu sync.Mutex
	m  map[string]licenseFacts
}

func (k *keyHashes) get(licenseID string) (licenseFacts, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f, ok := k.m[licenseID]
	return f, ok
}

func (k *keyHashes) put(licenseID string, f licenseFacts) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxKeyHashes {
		k.m = map[string]licenseFacts{}
	}
	k.m[licenseID] = f
}

func (k *keyHashes) drop(licenseID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, licenseID)
}

// certify signs a certificate when the request carried a nonce, and always
// for a borrowed lease (its certificate is what the product keeps). A
// client that verifies certificates always sends a nonce (the clients in
// this repository do), and treats an answer without a certificate as a
// lost lease, so a fake server gains nothing from the rule. A signature
// costs about 50 µs of CPU here: signing every heartbeat cut the embedded
// heartbeat rate by a third (make bench), a price a client that does not
// verify should not pay.
func (s *Service) certify(ctx context.Context, l server.Lease, b signing.Binding) (string, error) {
	if b.Nonce == "" && !l.Borrowed {
		return "", nil
	}
	return s.issuer.Certificate(ctx, l, b)
}

// GetSigningKeys returns the tenant's public keys a verifier needs now:
// the next key (published ahead of use), the key that signs and the
// retired keys whose certificates may still be valid; in locked mode,
// for the tenant of the license file's licenses, the site key first,
// which signs their certificates. A tenant without a key that signs or a
// next key gets it. ErrTenantNotFound for an unknown tenant.
func (s *Service) GetSigningKeys(ctx context.Context, tenant string) ([]server.SigningKey, error) {
	keys, err := s.issuer.Published(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if site, ok := s.issuer.SiteKey(tenant); ok {
		keys = append([]server.SigningKey{site}, keys...)
	}
	return keys, nil
}

// ReturnedCertificates is the tenant's signed list of returned borrowed
// certificates (signing.ReturnedList), signed now with the key that signs
// certificates. ErrTenantNotFound for an unknown tenant.
func (s *Service) ReturnedCertificates(ctx context.Context, tenant string) (string, error) {
	if _, err := s.issuer.Published(ctx, tenant); err != nil {
		return "", err
	}
	rcs, err := s.store.ReturnedCertificates(ctx, tenant)
	if err != nil {
		return "", err
	}
	return s.issuer.ReturnedList(ctx, tenant, rcs)
}

// ListSigningKeys lists all the tenant's keys: the next key, the one that
// signs, the retired ones (SigningKey.State).
func (s *Service) ListSigningKeys(ctx context.Context, tenant string) ([]server.SigningKey, error) {
	return s.issuer.Keys(ctx, tenant)
}

// RotateSigningKey retires the key that signs for the tenant, makes its
// next key (published since the rotation before) sign and makes a new next
// key, in one step; it returns the key that signs now and audits it. The
// retired key stays published until its certificates have expired, so a
// rotation adds a published key: beyond the tenant's signing keys quota
// (Quotas.SigningKeys) it is refused with QUOTA_EXCEEDED and changes
// nothing.
func (s *Service) RotateSigningKey(ctx context.Context, actor, tenant string) (server.SigningKey, error) {
	if limit := s.quotas.SigningKeys; limit > 0 {
		defer s.quotaLocks.lock(tenant)()
		published, err := s.issuer.Published(ctx, tenant)
		if err != nil {
			return server.SigningKey{}, err
		}
		if int64(len(published))+1 > limit {
			return server.SigningKey{}, quotaExceeded("signing_keys", limit)
		}
	}
	k, err := s.issuer.Rotate(ctx, tenant)
	if err != nil {
		return server.SigningKey{}, err
	}
	s.audit(ctx, actor, tenant, "signingkey.rotate", "signing_key", k.ID, nil)
	return k, nil
}

// EnsureSigningKey gives the tenant its first key and its next key if it
// lacks them (a tenant from before next keys keeps the key that signs) and
// checks that the key that signs for it opens (the daemon, at start).
func (s *Service) EnsureSigningKey(ctx context.Context, tenant string) (server.SigningKey, error) {
	return s.issuer.Ensure(ctx, tenant)
}

// PublishUntil is when a retired key stops being published (zero while it
// signs or is next).
func PublishUntil(k server.SigningKey) time.Time { return k.PublishUntil(signing.PublishSlack) }
