package storetest

import (
	"context"

	"github.com/seatd/seatd/server"
)

// The site key and the license file in force of the memStore: two fields.

func (s *memStore) EnsureSiteKey(_ context.Context, k server.SigningKey) (server.SigningKey, error) {
	if _, err := s.lock(); err != nil {
		return server.SigningKey{}, err
	}
	defer s.mu.Unlock()
	if s.d.SiteKey == nil && k.ID != "" {
		s.d.SiteKey = &k
	}
	if s.d.SiteKey == nil {
		return server.SigningKey{}, nil
	}
	return *s.d.SiteKey, nil
}

func (s *memStore) FileInForce(context.Context) (server.LicenseFileRecord, error) {
	if _, err := s.lock(); err != nil {
		return server.LicenseFileRecord{}, err
	}
	defer s.mu.Unlock()
	return s.d.File, nil
}

func (s *memStore) SetFileInForce(_ context.Context, f server.LicenseFileRecord) (server.LicenseFileRecord, error) {
	now, err := s.lock()
	if err != nil {
		return server.LicenseFileRecord{}, err
	}
	defer s.mu.Unlock()
	changed, err := server.NextFileInForce(s.d.File, f)
	if err != nil {
		return server.LicenseFileRecord{}, err
	}
	if !changed {
		return s.d.File, nil
	}
	s.d.File = server.LicenseFileRecord{Serial: f.Serial, Hash: f.Hash, SetAt: now}
	return s.d.File, nil
}
