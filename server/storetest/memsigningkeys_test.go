package storetest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/seatd/seatd/server"
)

// Signing keys of the memStore: one slice, newest first.

func (s *memStore) AddSigningKey(_ context.Context, k server.SigningKey, replace bool) (server.SigningKey, error) {
	if _, err := s.lock(); err != nil {
		return server.SigningKey{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[k.TenantID]; !ok {
		return server.SigningKey{}, server.ErrTenantNotFound
	}
	for i, old := range s.d.Signing {
		if old.ID == k.ID {
			return server.SigningKey{}, server.AlreadyExists("signing_key.kid", "signing key")
		}
		if old.TenantID != k.TenantID || !old.RetiredAt.IsZero() {
			continue
		}
		if !replace {
			return old, nil
		}
		s.d.Signing[i].RetiredAt = k.CreatedAt
	}
	k.RetiredAt = time.Time{}
	s.d.Signing = append(s.d.Signing, k)
	slices.SortStableFunc(s.d.Signing, func(a, b server.SigningKey) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return k, nil
}

func (s *memStore) SigningKeys(_ context.Context, tenantID string) ([]server.SigningKey, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []server.SigningKey{}
	for _, k := range s.d.Signing {
		if k.TenantID == tenantID {
			out = append(out, k)
		}
	}
	return out, nil
}
