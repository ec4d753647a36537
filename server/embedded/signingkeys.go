package embedded

import (
	"bytes"
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Signing keys live on disk only, in bucketSigningKeys under
// timeKey(tenant, created, kid): a reverse walk of a tenant's prefix lists
// them newest first. The private half is stored as the signing package
// sealed it; the data file itself is mode 0600 in a 0700 directory.

func (s *Store) AddSigningKey(_ context.Context, k server.SigningKey, replace bool) (server.SigningKey, error) {
	k.CreatedAt = k.CreatedAt.UTC().Round(0)
	var out server.SigningKey
	// bbolt runs one write transaction at a time: the check for a signing
	// key and the insert are one step, whatever else is in its group.
	err := s.commit.write(func(tx *bolt.Tx) error {
		out = server.SigningKey{}
		if tx.Bucket(bucketTenants).Get([]byte(k.TenantID)) == nil {
			return server.ErrTenantNotFound
		}
		b := tx.Bucket(bucketSigningKeys)
		var current server.SigningKey
		var currentKey []byte
		taken := false
		err := walkSigningKeys(b, k.TenantID, func(key []byte, sk server.SigningKey) bool {
			taken = taken || sk.ID == k.ID
			if sk.RetiredAt.IsZero() && currentKey == nil {
				current, currentKey = sk, bytes.Clone(key)
			}
			return true
		})
		if err != nil {
			return err
		}
		if taken {
			return server.AlreadyExists("signing_key.kid", "signing key")
		}
		if currentKey != nil {
			if !replace {
				out = current
				return nil
			}
			current.RetiredAt = k.CreatedAt
			if err := b.Put(currentKey, encode(current)); err != nil {
				return err
			}
		}
		k.RetiredAt = time.Time{}
		out = k
		return b.Put(timeKey(k.TenantID, k.CreatedAt, k.ID), encode(k))
	})
	if err != nil {
		return server.SigningKey{}, s.fail("add signing key", err)
	}
	return out, nil
}

func (s *Store) SigningKeys(_ context.Context, tenantID string) ([]server.SigningKey, error) {
	out := []server.SigningKey{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return walkSigningKeys(tx.Bucket(bucketSigningKeys), tenantID, func(_ []byte, k server.SigningKey) bool {
			out = append(out, k)
			return true
		})
	})
	if err != nil {
		return nil, s.fail("list signing keys", err)
	}
	return out, nil
}

// walkSigningKeys calls f on the tenant's keys, newest first, until f
// returns false.
func walkSigningKeys(b *bolt.Bucket, tenantID string, f func(key []byte, k server.SigningKey) bool) error {
	pfx := prefix(tenantID)
	c := b.Cursor()
	// The last key of the prefix: seek past it, then step back.
	end := append(bytes.Clone(pfx), 0xff)
	var k, v []byte
	if k, _ = c.Seek(end); k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, pfx); k, v = c.Prev() {
		sk, err := decode[server.SigningKey](v)
		if err != nil {
			return err
		}
		if !f(k, sk) {
			return nil
		}
	}
	return nil
}
