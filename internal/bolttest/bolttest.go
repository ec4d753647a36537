// Package bolttest damages bbolt data files for tests of what seatd does
// with a file it cannot trust.
package bolttest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DamageBucketRoot writes random bytes (from seed: the same damage every
// run) over the root page of bucket in the closed bbolt file at path:
// damage behind a sound header, which a start that reads only other
// buckets does not meet, like the attack's random pages in the middle of
// the file. The bucket must fill pages of its own (a small one lives
// inline in its parent's page: add records first).
func DamageBucketRoot(t testing.TB, path, bucket string, seed uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open %s to find the page to damage: %v", path, err)
	}
	var root, pageSize int64
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %q", bucket)
		}
		root, pageSize = int64(b.Root()), int64(db.Info().PageSize)
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if root == 0 {
		t.Fatalf("bucket %q of %s has no page of its own to damage (inline): fill it first", bucket, path)
	}
	junk := RandomBytes(int(pageSize), seed)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open %s to damage it: %v", path, err)
	}
	_, err = f.WriteAt(junk, root*pageSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("damage %s: %v", path, err)
	}
}

// RandomBytes is n bytes of junk, the same for the same seed (each call
// has its own source, so parallel tests may share a seed).
func RandomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
