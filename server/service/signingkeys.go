package service

import (
	"context"
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
// nobody asked for one (certify).
func (s *Service) Certificate(ctx context.Context, l server.Lease, nonce string) (string, error) {
	if err := CheckNonce(nonce); err != nil {
		return "", err
	}
	return s.certify(ctx, l, nonce)
}

// certify signs a certificate when the request carried a nonce, and always
// for a borrowed lease (its certificate is what the product keeps). A
// client that verifies certificates always sends a nonce (the clients in
// this repository do), and treats an answer without a certificate as a
// lost lease, so a fake server gains nothing from the rule. A signature
// costs about 50 µs of CPU here: signing every heartbeat cut the embedded
// heartbeat rate by a third (make bench), a price a client that does not
// verify should not pay.
func (s *Service) certify(ctx context.Context, l server.Lease, nonce string) (string, error) {
	if nonce == "" && !l.Borrowed {
		return "", nil
	}
	return s.issuer.Certificate(ctx, l, nonce)
}

// GetSigningKeys returns the tenant's public keys a verifier needs now:
// the next key (published ahead of use), the key that signs and the
// retired keys whose certificates may still be valid. A tenant without a
// key that signs or a next key gets it. ErrTenantNotFound for an unknown
// tenant.
func (s *Service) GetSigningKeys(ctx context.Context, tenant string) ([]server.SigningKey, error) {
	return s.issuer.Published(ctx, tenant)
}

// ListSigningKeys lists all the tenant's keys: the next key, the one that
// signs, the retired ones (SigningKey.State).
func (s *Service) ListSigningKeys(ctx context.Context, tenant string) ([]server.SigningKey, error) {
	return s.issuer.Keys(ctx, tenant)
}

// RotateSigningKey retires the key that signs for the tenant, makes its
// next key (published since the rotation before) sign and makes a new next
// key, in one step; it returns the key that signs now and audits it. The
// retired key stays published until its certificates have expired.
func (s *Service) RotateSigningKey(ctx context.Context, actor, tenant string) (server.SigningKey, error) {
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
