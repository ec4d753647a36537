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
