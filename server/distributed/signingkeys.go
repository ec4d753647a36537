package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
)

// Signing keys live in the record only.

func (s *Store) AddSigningKey(ctx context.Context, k server.SigningKey, replace bool) (server.SigningKey, error) {
	return s.rec.AddSigningKey(ctx, k, replace)
}

func (s *Store) SigningKeys(ctx context.Context, tenantID string) ([]server.SigningKey, error) {
	return s.rec.SigningKeys(ctx, tenantID)
}
