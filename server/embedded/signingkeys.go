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
// them newest first (then server.SortSigningKeys: the two keys in use
// first). The private half is stored as the signing package
// sealed it; the data file itself is mode 0600 in a 0700 directory.

func (s *Store) EnsureSigningKeys(_ context.Context, tenantID string, signing, next server.SigningKey) ([]server.SigningKey, error) {
	var out []server.SigningKey
	// bbolt runs one write transaction at a time: the look at the
	// tenant's keys and the inserts are one step, whatever else is in its
	// group.
	err := s.commit.write(func(tx *bolt.Tx) error {
		out = nil
		if tx.Bucket(bucketTenants).Get([]byte(tenantID)) == nil {
			return server.ErrTenantNotFound
		}
		b := writable(tx, bucketSigningKeys)
		cur, err := currentSigningKeys(b, tenantID)
		if err != nil {
			return err
		}
		for _, add := range []struct {
			k    server.SigningKey
			has  bool
			next bool
		}{{signing, cur.signing != nil, false}, {next, cur.next != nil, true}} {
			if add.k.ID == "" || add.has {
				continue
			}
			if err := putNewSigningKey(b, tenantID, add.k, add.next); err != nil {
				return err
			}
		}
		out = []server.SigningKey{}
		err = walkSigningKeys(b, tenantID, func(_ []byte, k server.SigningKey) bool {
			out = append(out, k)
			return true
		})
		server.SortSigningKeys(out)
		return err
	})
	if err != nil {
		return nil, s.fail("ensure signing keys", err)
	}
	return out, nil
}

func (s *Store) RotateSigningKey(_ context.Context, next server.SigningKey) (server.SigningKey, error) {
	var out server.SigningKey
	err := s.commit.write(func(tx *bolt.Tx) error {
		out = server.SigningKey{}
		if tx.Bucket(bucketTenants).Get([]byte(next.TenantID)) == nil {
			return server.ErrTenantNotFound
		}
		b := writable(tx, bucketSigningKeys)
		cur, err := currentSigningKeys(b, next.TenantID)
		if err != nil {
			return err
		}
		if cur.signing == nil || cur.next == nil {
			return server.ErrSigningKeysMissing
		}
		retired := cur.signing.k
		retired.RetiredAt = next.CreatedAt.UTC().Round(0)
		if err := b.Put(cur.signing.key, encode(retired)); err != nil {
			return err
		}
		promoted := cur.next.k
		promoted.Next = false
		if err := b.Put(cur.next.key, encode(promoted)); err != nil {
			return err
		}
		out = promoted
		return putNewSigningKey(b, next.TenantID, next, true)
	})
	if err != nil {
		return server.SigningKey{}, s.fail("rotate signing key", err)
	}
	return out, nil
}

// storedSigningKey is a key with its bbolt key.
type storedSigningKey struct {
	key []byte
	k   server.SigningKey
}

// tenantSigningKeys are the tenant's key that signs and its next key (nil
// when it has none).
type tenantSigningKeys struct{ signing, next *storedSigningKey }

func currentSigningKeys(b *bolt.Bucket, tenantID string) (tenantSigningKeys, error) {
	var cur tenantSigningKeys
	err := walkSigningKeys(b, tenantID, func(key []byte, k server.SigningKey) bool {
		switch k.State() {
		case server.KeySigning:
			if cur.signing == nil {
				cur.signing = &storedSigningKey{bytes.Clone(key), k}
			}
		case server.KeyNext:
			if cur.next == nil {
				cur.next = &storedSigningKey{bytes.Clone(key), k}
			}
		}
		return true
	})
	return cur, err
}

// putNewSigningKey stores a new key of the tenant, next or signing; a kid
// the tenant has already is refused.
func putNewSigningKey(b *bolt.Bucket, tenantID string, k server.SigningKey, next bool) error {
	if k.TenantID != tenantID {
		return server.Invalid("signing_key.tenant_id", "not the tenant's key")
	}
	k.CreatedAt = k.CreatedAt.UTC().Round(0)
	k.Next = next
	k.RetiredAt = time.Time{}
	taken := false
	err := walkSigningKeys(b, tenantID, func(_ []byte, sk server.SigningKey) bool {
		taken = sk.ID == k.ID
		return !taken
	})
	if err != nil {
		return err
	}
	if taken {
		return server.AlreadyExists("signing_key.kid", "signing key")
	}
	return b.Put(timeKey(k.TenantID, k.CreatedAt, k.ID), encode(k))
}

func (s *Store) SigningKeys(_ context.Context, tenantID string) ([]server.SigningKey, error) {
	out := []server.SigningKey{}
	err := s.view(func(tx *bolt.Tx) error {
		return walkSigningKeys(tx.Bucket(bucketSigningKeys), tenantID, func(_ []byte, k server.SigningKey) bool {
			out = append(out, k)
			return true
		})
	})
	if err != nil {
		return nil, s.fail("list signing keys", err)
	}
	server.SortSigningKeys(out)
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
