package service

import (
	"context"

	"github.com/seatd/seatd/server"
)

// CreateTenant creates a tenant (with a new id when t.ID is empty) and
// audits it.
func (s *Service) CreateTenant(ctx context.Context, actor string, t server.Tenant) (server.Tenant, error) {
	if t.ID == "" {
		t.ID = server.NewID("t-")
	}
	t.CreatedAt = s.now()
	t, err := s.store.CreateTenant(ctx, t)
	if err != nil {
		return server.Tenant{}, err
	}
	s.audit(ctx, actor, t.ID, "tenant.create", "tenant", t.ID, nil)
	// The tenant's signing key. Should this fail, its first certificate
	// or JWKS request makes one: the tenant exists either way.
	if _, err := s.issuer.Ensure(ctx, t.ID); err != nil {
		s.log.WarnContext(ctx, "signing key of a new tenant not created yet; its first use creates it", "tenant", t.ID, "err", err)
	}
	return t, nil
}

// ListTenants lists tenants by id.
func (s *Service) ListTenants(ctx context.Context, p server.Page) ([]server.Tenant, string, error) {
	return s.store.ListTenants(ctx, p)
}

// CreateAPIKey makes a key for the tenant with the role (a tenant role,
// checked by the caller), within its quota, and audits it. The secret is
// returned once and only its hash is kept.
func (s *Service) CreateAPIKey(ctx context.Context, actor, tenant, name string, role server.Role) (server.APIKey, string, error) {
	defer s.quotaLocks.lock(tenant)()
	if err := s.checkAPIKeyQuota(ctx, tenant); err != nil {
		return server.APIKey{}, "", err
	}
	secret := server.NewSecret(server.PrefixAPISecret)
	k, err := s.store.CreateAPIKey(ctx, server.APIKey{
		ID: server.NewID(server.PrefixAPIKeyID), TenantID: tenant, Name: name,
		SecretHash: server.HashSecret(secret), CreatedAt: s.now(), Role: role,
	})
	if err != nil {
		return server.APIKey{}, "", err
	}
	s.audit(ctx, actor, k.TenantID, "apikey.create", "api_key", k.ID, map[string]string{"role": string(k.KeyRole())})
	return k, secret, nil
}

// ListAPIKeys lists a tenant's keys, revoked ones too.
func (s *Service) ListAPIKeys(ctx context.Context, tenant string, p server.Page) ([]server.APIKey, string, error) {
	return s.store.ListAPIKeys(ctx, tenant, p)
}

// RevokeAPIKey revokes a key and audits it. With tenant != "" (a
// tenant's admin) the key must be that tenant's: another's is
// ErrAPIKeyNotFound, as if it did not exist.
func (s *Service) RevokeAPIKey(ctx context.Context, actor, tenant, id string) (server.APIKey, error) {
	if tenant != "" {
		if err := s.tenantHasKey(ctx, tenant, id); err != nil {
			return server.APIKey{}, err
		}
	}
	k, err := s.store.RevokeAPIKey(ctx, id)
	if err != nil {
		return server.APIKey{}, err
	}
	s.audit(ctx, actor, k.TenantID, "apikey.revoke", "api_key", k.ID, nil)
	return k, nil
}

// tenantHasKey returns ErrAPIKeyNotFound unless id is one of the tenant's
// keys (a walk of its keys, as the quota's: a tenant has few).
func (s *Service) tenantHasKey(ctx context.Context, tenant, id string) error {
	page := server.Page{Size: server.MaxPageSize}
	for {
		ks, next, err := s.store.ListAPIKeys(ctx, tenant, page)
		if err != nil {
			return err
		}
		for _, k := range ks {
			if k.ID == id {
				return nil
			}
		}
		if next == "" {
			return server.ErrAPIKeyNotFound
		}
		page.Token = next
	}
}
