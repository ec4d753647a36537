package bolttest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestDamageBucketRoot: after the damage, bbolt's own check finds the
// file unsound, and the other bucket still reads.
func TestDamageBucketRoot(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		big, err := tx.CreateBucket([]byte("big"))
		if err != nil {
			return err
		}
		for i := range 500 {
			if err := big.Put(fmt.Appendf(nil, "key-%04d", i), make([]byte, 64)); err != nil {
				return err
			}
		}
		small, err := tx.CreateBucket([]byte("small"))
		if err != nil {
			return err
		}
		return small.Put([]byte("k"), []byte("v"))
	}))
	require.NoError(t, db.Close())

	DamageBucketRoot(t, path, "big", 7)

	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	var v []byte
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		v = tx.Bucket([]byte("small")).Get([]byte("k"))
		return nil
	}))
	require.Equal(t, "v", string(v), "damage only behind the bucket's root")
	var problems int
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		for range tx.Check() {
			problems++
		}
		return nil
	}))
	require.Positive(t, problems, "bbolt's check finds the damage")
}
