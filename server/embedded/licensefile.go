package embedded

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// The site key and the license file in force are two keys of the meta
// bucket, which every schema has: a data dir from before locked mode
// opens unchanged, and a backup carries both (a restore of an older
// backup brings back its older record: docs/concepts/license-files.md
// says what that does and does not allow).
var (
	keySiteKey     = []byte("site_key")     // SigningKey (its private half as sealed)
	keyFileInForce = []byte("license_file") // LicenseFileRecord
)

func (s *Store) EnsureSiteKey(_ context.Context, k server.SigningKey) (server.SigningKey, error) {
	var out server.SigningKey
	read := func(meta *bolt.Bucket) (bool, error) {
		v := meta.Get(keySiteKey)
		if v == nil {
			return false, nil
		}
		var err error
		out, err = decode[server.SigningKey](v)
		return true, err
	}
	if k.ID == "" {
		err := s.view(func(tx *bolt.Tx) error {
			_, err := read(tx.Bucket(bucketMeta))
			return err
		})
		if err != nil {
			return server.SigningKey{}, s.fail("read site key", err)
		}
		return out, nil
	}
	// One write transaction at a time: the look and the put are one step.
	err := s.commit.write(func(tx *bolt.Tx) error {
		out = server.SigningKey{}
		meta := tx.Bucket(bucketMeta)
		if found, err := read(meta); found || err != nil {
			return err
		}
		k.CreatedAt = k.CreatedAt.UTC().Round(0)
		out = k
		return meta.Put(keySiteKey, encode(k))
	})
	if err != nil {
		return server.SigningKey{}, s.fail("ensure site key", err)
	}
	return out, nil
}

func (s *Store) FileInForce(context.Context) (server.LicenseFileRecord, error) {
	var out server.LicenseFileRecord
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		out, err = fileInForce(tx.Bucket(bucketMeta))
		return err
	})
	if err != nil {
		return server.LicenseFileRecord{}, s.fail("read license file in force", err)
	}
	return out, nil
}

func (s *Store) SetFileInForce(_ context.Context, f server.LicenseFileRecord) (server.LicenseFileRecord, error) {
	var out server.LicenseFileRecord
	err := s.commit.write(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		cur, err := fileInForce(meta)
		if err != nil {
			return err
		}
		changed, err := server.NextFileInForce(cur, f)
		if err != nil || !changed {
			out = cur
			return err
		}
		out = server.LicenseFileRecord{Serial: f.Serial, Hash: f.Hash, SetAt: s.now()}
		return meta.Put(keyFileInForce, encode(out))
	})
	if err != nil {
		return server.LicenseFileRecord{}, s.fail("set license file in force", err)
	}
	return out, nil
}

func fileInForce(meta *bolt.Bucket) (server.LicenseFileRecord, error) {
	v := meta.Get(keyFileInForce)
	if v == nil {
		return server.LicenseFileRecord{}, nil
	}
	return decode[server.LicenseFileRecord](v)
}
