package server

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"
)

// SigningKey is one of a tenant's Ed25519 keys that sign lease
// certificates. The store keeps PrivateKey as it is given (sealed by the
// signing package when an encryption key is configured) and never shows
// it to anyone: it leaves the store only to sign.
//
// A tenant has one key that signs and one next key, published (so that
// the JWKS a product embeds already holds it) but signing nothing until a
// rotation makes it the one that signs; the keys retired by earlier
// rotations stay stored.
type SigningKey struct {
	ID         string    `json:"id"` // the JWS kid
	TenantID   string    `json:"tenant_id"`
	PublicKey  []byte    `json:"public_key"`  // ed25519.PublicKey
	PrivateKey []byte    `json:"private_key"` // sealed ed25519 seed
	CreatedAt  time.Time `json:"created_at"`
	// Next is set while the key waits to sign (published, signing
	// nothing); a rotation clears it. Keys stored before next keys existed
	// have it unset.
	Next      bool      `json:"next,omitempty"`
	RetiredAt time.Time `json:"retired_at,omitzero"` // zero until a rotation retires it
}

// SigningKeyState is what a key does now.
type SigningKeyState string

const (
	KeySigning SigningKeyState = "signing" // signs the tenant's certificates
	KeyNext    SigningKeyState = "next"    // published, signs once a rotation promotes it
	KeyRetired SigningKeyState = "retired" // signs nothing; published until its certificates have expired
)

// State is what k does now.
func (k SigningKey) State() SigningKeyState {
	switch {
	case !k.RetiredAt.IsZero():
		return KeyRetired
	case k.Next:
		return KeyNext
	default:
		return KeySigning
	}
}

// String, GoString and LogValue name the key without its private half, so
// that a key printed or logged by mistake shows no secret.
func (k SigningKey) String() string   { return "signing key " + k.ID + " of tenant " + k.TenantID }
func (k SigningKey) GoString() string { return k.String() }
func (k SigningKey) LogValue() slog.Value {
	return slog.GroupValue(slog.String("kid", k.ID), slog.String("tenant", k.TenantID))
}

// CertificateLifetime bounds how long a lease certificate is valid: a
// lease's deadline is at most a TTL (MaxLeaseTTL) or a borrow
// (MaxBorrowDuration) after the answer that carries it.
const CertificateLifetime = max(MaxLeaseTTL, MaxBorrowDuration)

// PublishUntil is when a retired key may stop being published: every
// certificate it signed has expired by then. slack covers the instances
// that still signed with it before they learned of the rotation.
func (k *SigningKey) PublishUntil(slack time.Duration) time.Time {
	if k.RetiredAt.IsZero() {
		return time.Time{}
	}
	return k.RetiredAt.Add(CertificateLifetime + slack)
}

// SigningKeyStore keeps the tenants' signing keys. Each method is one
// atomic step, so that instances that ensure or rotate one tenant's keys
// at once agree on them.
type SigningKeyStore interface {
	// EnsureSigningKeys gives the tenant the keys it lacks, in one step:
	// signing (its ID set, Next and RetiredAt zero) is stored only if the
	// tenant has no key that signs, next (Next set) only if it has no next
	// key; a key with an empty ID is never stored. It returns the tenant's
	// keys afterwards, as SigningKeys does: two instances that ensure one
	// tenant's keys at once get the same ones. ErrTenantNotFound if the
	// tenant does not exist.
	EnsureSigningKeys(ctx context.Context, tenantID string, signing, next SigningKey) ([]SigningKey, error)
	// RotateSigningKey, in one step, retires the key that signs for
	// next.TenantID (RetiredAt = next.CreatedAt), makes the tenant's next
	// key the one that signs, and stores next (Next set) as its next key.
	// It returns the key that signs now. ErrTenantNotFound if the tenant
	// does not exist; FAILED_PRECONDITION if it has no key that signs or no
	// next key (EnsureSigningKeys first).
	RotateSigningKey(ctx context.Context, next SigningKey) (SigningKey, error)
	// SigningKeys returns the tenant's keys in SortSigningKeys's order,
	// retired ones too (none: an empty list, not an error).
	SigningKeys(ctx context.Context, tenantID string) ([]SigningKey, error)
}

// SortSigningKeys puts a tenant's keys in the order the stores list them:
// the next key, the key that signs, then the retired keys, newest first
// (by CreatedAt, then kid, descending): clocks that disagree do not
// reorder the two keys in use.
func SortSigningKeys(keys []SigningKey) {
	rank := func(k SigningKey) int {
		switch k.State() {
		case KeyNext:
			return 0
		case KeySigning:
			return 1
		default:
			return 2
		}
	}
	slices.SortStableFunc(keys, func(a, b SigningKey) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
}

// ErrSigningKeysMissing: RotateSigningKey found no key that signs or no
// next key for the tenant (the signing package ensures both first, so no
// caller should see it).
var ErrSigningKeysMissing = &Error{Code: EPRECONDITION, Message: "the tenant has no signing key or no next key to rotate to"}
