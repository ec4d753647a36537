package embedded

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

const schemaVersion = 1

// load creates missing buckets and rebuilds the in-memory index from the
// licenses and the active leases. Ended leases stay on disk only, so Open
// costs O(licenses + active leases), not O(history).
func (s *Store) load() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := bytesUint64(meta.Get([]byte("schema"))); v {
		case 0:
			if err := meta.Put([]byte("schema"), uint64Bytes(schemaVersion)); err != nil {
				return err
			}
		case schemaVersion:
		default:
			return fmt.Errorf("data dir has schema version %d; this seatd understands %d", v, schemaVersion)
		}

		err := tx.Bucket(bucketLicenses).ForEach(func(_, v []byte) error {
			rec, err := decode[licenseRecord](v)
			if err != nil {
				return fmt.Errorf("decode license: %w", err)
			}
			l := newLicense(rec.License)
			l.deleted = rec.Deleted
			s.idx.addLicense(l)
			return nil
		})
		if err != nil {
			return err
		}

		leases := tx.Bucket(bucketLeases)
		return tx.Bucket(bucketActive).ForEach(func(id, _ []byte) error {
			rec, err := decode[leaseRecord](leases.Get(id))
			if err != nil {
				return fmt.Errorf("decode lease %s: %w", id, err)
			}
			l := s.idx.licenses[rec.LicenseID]
			if l == nil || l.deleted {
				// Cannot happen: deletion ends the leases in the same
				// transaction. Keep the record, skip the seat.
				s.log.Warn("embedded store: active lease of a missing license", "lease", rec.ID, "license", rec.LicenseID)
				return nil
			}
			s.idx.addLease(&entry{lease: rec.Lease, lic: l, rev: rec.Rev})
			return nil
		})
	})
}
