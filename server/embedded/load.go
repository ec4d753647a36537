package embedded

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

const schemaVersion = 1

// addedBucket is a bucket newer than schema 1, and how to fill it from the
// buckets an older data dir already has (nil: it starts empty).
type addedBucket struct {
	name []byte
	fill func(tx *bolt.Tx, b *bolt.Bucket) error
}

// fillUsageTenant indexes the usage events by tenant.
func fillUsageTenant(tx *bolt.Tx, b *bolt.Bucket) error {
	return tx.Bucket(bucketUsage).ForEach(func(_, v []byte) error {
		u, err := decode[server.UsageEvent](v)
		if err != nil {
			return err
		}
		return b.Put(timeKey(u.TenantID, u.EndedAt, u.LeaseID), v)
	})
}

// keyOpen marks the data dir as open by a process (meta bucket).
var keyOpen = []byte("open")

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
		for _, a := range addedBuckets {
			if tx.Bucket(a.name) != nil {
				continue
			}
			b, err := tx.CreateBucket(a.name)
			if err != nil {
				return fmt.Errorf("create bucket %s: %w", a.name, err)
			}
			if a.fill == nil {
				continue
			}
			if err := a.fill(tx, b); err != nil {
				return fmt.Errorf("fill bucket %s: %w", a.name, err)
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

		// "open" stays set while a process has the data dir open; Close
		// clears it after its last flush. Set at load: the last process
		// died without flushing its heartbeats (kill -9, power loss).
		crashed := len(meta.Get(keyOpen)) > 0 && meta.Get(keyOpen)[0] == 1
		if err := meta.Put(keyOpen, []byte{1}); err != nil {
			return err
		}
		// Heartbeats acknowledged in the last flush interval before a
		// crash are not on disk: give every lease its license's
		// server.WriteBehindSlack, so that no client that heartbeat on
		// time loses its lease, or more than a flush interval of its
		// deadline, to the crash. Leases anyone was told had ended are
		// recorded ended, so they are not among these.
		extended := 0
		defer func() {
			if extended > 0 {
				s.log.Warn("embedded store: the last process did not shut down cleanly; active leases got the write-behind interval back",
					"leases", extended)
			}
		}()

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
			// The license's own strings, not a million decoded copies.
			rec.LicenseID, rec.TenantID = l.lic.ID, l.lic.TenantID
			if rec.State == server.LeaseActive {
				rec.State = server.LeaseActive // the constant's bytes, not the decoded copy
			}
			e := &entry{lease: rec.Lease, lic: l, rev: rec.Rev}
			if crashed && !e.lease.Borrowed { // a borrowed lease has no heartbeats to lose
				e.lease.ExpiresAt = e.lease.ExpiresAt.Add(server.WriteBehindSlack(s.flushEvery, &l.lic))
				e.rev++
				s.idx.dirty[e] = struct{}{} // the flusher stores the new deadline
				extended++
			}
			s.idx.addLease(e)
			return nil
		})
	})
}
