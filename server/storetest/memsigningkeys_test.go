package storetest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/seatd/seatd/server"
)

// Signing keys of the memStore: one slice, newest first.

func (s *memStore) EnsureSigningKeys(_ context.Context, tenantID string, signing, next server.SigningKey) ([]server.SigningKey, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[tenantID]; !ok {
		return nil, server.ErrTenantNotFound
	}
	signingAt, nextAt := s.currentSigningKeys(tenantID)
	if signing.ID != "" && signingAt < 0 {
		if err := s.addSigningKey(signing, false); err != nil {
			return nil, err
		}
	}
	if next.ID != "" && nextAt < 0 {
		if err := s.addSigningKey(next, true); err != nil {
			return nil, err
		}
	}
	return s.signingKeysOf(tenantID), nil
}

func (s *memStore) RotateSigningKey(_ context.Context, next server.SigningKey) (server.SigningKey, error) {
	if _, err := s.lock(); err != nil {
		return server.SigningKey{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[next.TenantID]; !ok {
		return server.SigningKey{}, server.ErrTenantNotFound
	}
	signingAt, nextAt := s.currentSigningKeys(next.TenantID)
	if signingAt < 0 || nextAt < 0 {
		return server.SigningKey{}, server.ErrSigningKeysMissing
	}
	s.d.Signing[signingAt].RetiredAt = next.CreatedAt
	s.d.Signing[nextAt].Next = false
	promoted := s.d.Signing[nextAt]
	if err := s.addSigningKey(next, true); err != nil {
		return server.SigningKey{}, err
	}
	return promoted, nil
}

// currentSigningKeys returns the indexes of the tenant's key that signs
// and of its next key (-1: none).
func (s *memStore) currentSigningKeys(tenantID string) (signing, next int) {
	signing, next = -1, -1
	for i, k := range s.d.Signing {
		if k.TenantID != tenantID {
			continue
		}
		switch k.State() {
		case server.KeySigning:
			signing = i
		case server.KeyNext:
			next = i
		}
	}
	return signing, next
}

func (s *memStore) addSigningKey(k server.SigningKey, next bool) error {
	for _, old := range s.d.Signing {
		if old.ID == k.ID {
			return server.AlreadyExists("signing_key.kid", "signing key")
		}
	}
	k.Next, k.RetiredAt = next, time.Time{}
	s.d.Signing = append(s.d.Signing, k)
	slices.SortStableFunc(s.d.Signing, func(a, b server.SigningKey) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return nil
}

func (s *memStore) SigningKeys(_ context.Context, tenantID string) ([]server.SigningKey, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.signingKeysOf(tenantID), nil
}

func (s *memStore) signingKeysOf(tenantID string) []server.SigningKey {
	out := []server.SigningKey{}
	for _, k := range s.d.Signing {
		if k.TenantID == tenantID {
			out = append(out, k)
		}
	}
	server.SortSigningKeys(out)
	return out
}
