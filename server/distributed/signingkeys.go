package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
)

// Signing keys live in the record only.

func (s *Store) EnsureSigningKeys(ctx context.Context, tenantID string, signing, next server.SigningKey) ([]server.SigningKey, error) {
	return s.rec.EnsureSigningKeys(ctx, tenantID, signing, next)
}

func (s *Store) RotateSigningKey(ctx context.Context, next server.SigningKey) (server.SigningKey, error) {
	return s.rec.RotateSigningKey(ctx, next)
}

func (s *Store) SigningKeys(ctx context.Context, tenantID string) ([]server.SigningKey, error) {
	return s.rec.SigningKeys(ctx, tenantID)
}

// The site key and the license file in force live in the record only.

func (s *Store) EnsureSiteKey(ctx context.Context, k server.SigningKey) (server.SigningKey, error) {
	return s.rec.EnsureSiteKey(ctx, k)
}

func (s *Store) FileInForce(ctx context.Context) (server.LicenseFileRecord, error) {
	return s.rec.FileInForce(ctx)
}

func (s *Store) SetFileInForce(ctx context.Context, f server.LicenseFileRecord) (server.LicenseFileRecord, error) {
	return s.rec.SetFileInForce(ctx, f)
}
