package server

import (
	"context"
	"log/slog"
	"time"
)

// SigningKey is one of a tenant's Ed25519 keys that sign lease
// certificates. The store keeps PrivateKey as it is given (sealed by the
// signing package when an encryption key is configured) and never shows
// it to anyone: it leaves the store only to sign.
type SigningKey struct {
	ID         string    `json:"id"` // the JWS kid
	TenantID   string    `json:"tenant_id"`
	PublicKey  []byte    `json:"public_key"`  // ed25519.PublicKey
	PrivateKey []byte    `json:"private_key"` // sealed ed25519 seed
	CreatedAt  time.Time `json:"created_at"`
	RetiredAt  time.Time `json:"retired_at,omitzero"` // zero while it signs
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

// SigningKeyStore keeps the tenants' signing keys.
type SigningKeyStore interface {
	// AddSigningKey stores k (every field set by the caller, RetiredAt
	// zero) as the key that signs for k.TenantID. With replace, the key
	// that signed until now is retired (RetiredAt = k.CreatedAt) in the
	// same step. Without it, when the tenant already has a key that signs,
	// nothing is stored and that key is returned: two instances that
	// create a tenant's first key at once agree on one.
	// ErrTenantNotFound if the tenant does not exist.
	AddSigningKey(ctx context.Context, k SigningKey, replace bool) (SigningKey, error)
	// SigningKeys returns the tenant's keys, newest first, retired ones
	// too (none: an empty list, not an error).
	SigningKeys(ctx context.Context, tenantID string) ([]SigningKey, error)
}
