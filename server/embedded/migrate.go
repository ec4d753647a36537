package embedded

import (
	"bytes"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// keySchema holds the data dir's schema version (meta bucket).
var keySchema = []byte("schema")

// migrateBatch is how many active leases one migration transaction moves:
// a large data dir migrates without one transaction holding it all.
const migrateBatch = 20_000

// migrate brings a schema-1 data dir to schema 2, in place, once: each
// active lease's JSON record moves from bucketLeases (and its key from
// bucketLeasesLicense) to a binary record in bucketActiveLeases; ended
// leases keep their JSON records, which readers still take. The first
// transaction sets schema 2, so that an older seatd refuses the dir from
// then on; each moves up to migrateBatch leases and drops their ids from
// bucketActiveIDs, which the last one deletes. A start interrupted half
// way resumes where it stopped.
func (s *Store) migrate() error {
	var from uint64
	pending := false
	err := s.view(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			from = bytesUint64(meta.Get(keySchema))
		}
		pending = tx.Bucket(bucketActiveIDs) != nil
		return nil
	})
	if err != nil || !pending || from > schemaVersion {
		return err // a newer schema is refused by load
	}
	began := time.Now()
	s.log.Info("embedded store: migrating the data dir to schema 2 (once)", "from_schema", from)
	moved := 0
	for done := false; !done; {
		err := s.db.Update(func(tx *bolt.Tx) error {
			n, last, err := migrateSome(tx, migrateBatch)
			moved += n
			done = last
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to schema 2: %w", err)
		}
	}
	s.log.Info("embedded store: migrated the data dir to schema 2", "active_leases", moved, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// migrateSome moves up to batch active leases; last is true once none
// are left.
func migrateSome(tx *bolt.Tx, batch int) (n int, last bool, err error) {
	if err := tx.Bucket(bucketMeta).Put(keySchema, uint64Bytes(2)); err != nil {
		return 0, false, err
	}
	active, err := tx.CreateBucketIfNotExists(bucketActiveLeases)
	if err != nil {
		return 0, false, err
	}
	active.FillPercent = appendedFill
	ids := tx.Bucket(bucketActiveIDs)
	var moving [][]byte
	c := ids.Cursor()
	for k, _ := c.First(); k != nil && len(moving) < batch; k, _ = c.Next() {
		moving = append(moving, bytes.Clone(k))
	}
	if len(moving) == 0 {
		return 0, true, tx.DeleteBucket(bucketActiveIDs)
	}
	for _, id := range moving {
		if err := migrateLease(tx, active, id); err != nil {
			return 0, false, err
		}
		if err := ids.Delete(id); err != nil {
			return 0, false, err
		}
	}
	return len(moving), false, nil
}

// migrateLease moves one active lease of a schema-1 dir.
func migrateLease(tx *bolt.Tx, active *bolt.Bucket, id []byte) error {
	leases := tx.Bucket(bucketLeases)
	v := leases.Get(id)
	if v == nil {
		return fmt.Errorf("active lease %s has no record", id)
	}
	rec, err := decode[leaseRecord](v)
	if err != nil {
		return fmt.Errorf("decode lease %s: %w", id, err)
	}
	if rec.State != server.LeaseActive {
		return nil // ended: its record stays where it is
	}
	if err := checkTimes(rec.AcquiredAt, rec.LastHeartbeatAt, rec.ExpiresAt); err != nil {
		return fmt.Errorf("lease %s: %w", id, err)
	}
	s, text := compact(&rec.Lease, rec.Rev)
	key := activeKey(rec.LicenseID, s.acquired, rec.ID)
	if err := tx.Bucket(bucketLeasesLicense).Delete(key); err != nil {
		return err
	}
	if err := leases.Delete(id); err != nil {
		return err
	}
	return active.Put(key, appendActive(nil, &s, text))
}
