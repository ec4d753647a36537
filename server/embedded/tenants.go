package embedded

import (
	"bytes"
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Tenants and API keys are few and rarely written: they live on disk only.

func (s *Store) CreateTenant(_ context.Context, t server.Tenant) (server.Tenant, error) {
	err := s.commit.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketTenants)
		if b.Get([]byte(t.ID)) != nil {
			return server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "tenant already exists")
		}
		return b.Put([]byte(t.ID), encode(t))
	})
	if err != nil {
		return server.Tenant{}, s.fail("create tenant", err)
	}
	return s.GetTenant(context.Background(), t.ID)
}

func (s *Store) GetTenant(_ context.Context, id string) (server.Tenant, error) {
	return readOne[server.Tenant](s, "get tenant", bucketTenants, id, server.ErrTenantNotFound)
}

func (s *Store) ListTenants(_ context.Context, p server.Page) ([]server.Tenant, string, error) {
	var out []server.Tenant
	var next string
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, next, err = scanPage(tx.Bucket(bucketTenants).Cursor(), nil, p, false, func(_, v []byte) (server.Tenant, bool, error) {
			t, err := decode[server.Tenant](v)
			return t, true, err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail("list tenants", err)
	}
	return out, next, nil
}

func (s *Store) CreateAPIKey(_ context.Context, k server.APIKey) (server.APIKey, error) {
	err := s.commit.write(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTenants).Get([]byte(k.TenantID)) == nil {
			return server.ErrTenantNotFound
		}
		keys, byHash := tx.Bucket(bucketAPIKeys), tx.Bucket(bucketAPIKeysHash)
		if keys.Get([]byte(k.ID)) != nil || byHash.Get([]byte(k.SecretHash)) != nil {
			return server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "api key already exists")
		}
		return putAll(
			put{keys, []byte(k.ID), encode(k)},
			put{byHash, []byte(k.SecretHash), []byte(k.ID)},
			put{writable(tx, bucketAPIKeysTenant), timeKey(k.TenantID, k.CreatedAt, k.ID), nil},
		)
	})
	if err != nil {
		return server.APIKey{}, s.fail("create api key", err)
	}
	return s.apiKey(k.ID)
}

func (s *Store) ListAPIKeys(_ context.Context, tenantID string, p server.Page) ([]server.APIKey, string, error) {
	var out []server.APIKey
	var next string
	pfx := prefix(tenantID)
	err := s.view(func(tx *bolt.Tx) error {
		keys := tx.Bucket(bucketAPIKeys)
		var err error
		out, next, err = scanPage(tx.Bucket(bucketAPIKeysTenant).Cursor(), pfx, p, false, func(k, _ []byte) (server.APIKey, bool, error) {
			key, err := decode[server.APIKey](keys.Get([]byte(idFromTimeKey(k, len(pfx)))))
			return key, true, err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail("list api keys", err)
	}
	return out, next, nil
}

func (s *Store) RevokeAPIKey(_ context.Context, id string) (server.APIKey, error) {
	var k server.APIKey
	err := s.commit.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAPIKeys)
		v := b.Get([]byte(id))
		if v == nil {
			return server.ErrAPIKeyNotFound
		}
		var err error
		if k, err = decode[server.APIKey](v); err != nil || !k.RevokedAt.IsZero() {
			return err
		}
		k.RevokedAt = s.now()
		if err := putEvent(tx, server.EventOfAPIKey(&k)); err != nil {
			return err
		}
		return b.Put([]byte(id), encode(k))
	})
	if err != nil {
		return server.APIKey{}, s.fail("revoke api key", err)
	}
	return k, nil
}

func (s *Store) APIKeyBySecretHash(_ context.Context, hash string) (server.APIKey, error) {
	var id []byte
	err := s.view(func(tx *bolt.Tx) error {
		id = bytes.Clone(tx.Bucket(bucketAPIKeysHash).Get([]byte(hash)))
		return nil
	})
	if err != nil {
		return server.APIKey{}, s.fail("find api key", err)
	}
	if id == nil {
		return server.APIKey{}, server.ErrAPIKeyNotFound
	}
	return s.apiKey(string(id))
}

func (s *Store) apiKey(id string) (server.APIKey, error) {
	return readOne[server.APIKey](s, "get api key", bucketAPIKeys, id, server.ErrAPIKeyNotFound)
}
