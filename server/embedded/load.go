package embedded

import (
	"bytes"
	"fmt"
	"unsafe"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// schemaVersion 2 keeps each active lease whole in bucketActiveLeases, in
// a binary record (record.go), so that Open reads one bucket in order;
// schema 1 kept JSON records of every lease in bucketLeases and the ids
// of the active ones apart (migrate.go).
const schemaVersion = 2

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

func isAdded(name []byte) bool {
	for _, a := range addedBuckets {
		if bytes.Equal(a.name, name) {
			return true
		}
	}
	return false
}

// keyOpen marks the data dir as open by a process (meta bucket).
var keyOpen = []byte("open")

// load migrates an older data dir, creates missing buckets and rebuilds
// the in-memory index from the licenses and the active leases. Ended
// leases stay on disk only, so Open costs O(licenses + active leases), not
// O(history).
func (s *Store) load() error {
	if err := s.migrate(); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if isAdded(name) {
				continue
			}
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
		switch v := bytesUint64(meta.Get(keySchema)); v {
		case 0:
			if err := meta.Put(keySchema, uint64Bytes(schemaVersion)); err != nil {
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
			rec.Grants = nil // grants have records of their own
			l := s.idx.newLicense(rec.License)
			l.deleted = rec.Deleted
			s.idx.addLicense(l)
			return nil
		})
		if err != nil {
			return err
		}
		if err := s.loadGrants(tx); err != nil {
			return err
		}
		if err := s.loadReturned(tx); err != nil {
			return fmt.Errorf("decode returned certificate: %w", err)
		}

		// "open" stays set while a process has the data dir open; Close
		// clears it after its last flush. Set at load: the last process
		// died without flushing its heartbeats (kill -9, power loss).
		crashed := len(meta.Get(keyOpen)) > 0 && meta.Get(keyOpen)[0] == 1
		if err := meta.Put(keyOpen, []byte{1}); err != nil {
			return err
		}
		extended, err := s.loadActive(tx, crashed)
		if extended > 0 {
			s.log.Warn("embedded store: the last process did not shut down cleanly; active leases got the write-behind interval back",
				"leases", extended)
		}
		if err != nil {
			return err
		}
		// Site policies last: each files its license's active leases.
		for _, lic := range s.idx.lics {
			if lic != nil && lic.parent == nil && !lic.deleted && lic.lic.Policy != nil {
				s.applyPolicy(lic, lic.lic.Policy, lic.lic.UpdatedAt)
			}
		}
		return nil
	})
}

// loadActive indexes the active leases, in one pass over their bucket
// (by license, then acquisition). After a crash, heartbeats acknowledged
// in the last flush interval are not on disk: every lease gets its
// license's server.WriteBehindSlack, so that no client that heartbeat on
// time loses its lease, or more than a flush interval of its deadline, to
// the crash. Leases anyone was told had ended are recorded ended, so they
// are not among these. It returns how many leases it extended.
func (s *Store) loadActive(tx *bolt.Tx, crashed bool) (extended int, err error) {
	var (
		lic    *license
		licID  []byte
		buf    []byte // each text in turn: index.store copies it into an arena
		stored []ref
	)
	c := tx.Bucket(bucketActiveLeases).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		l, id, sl, textBytes, err := decodeActive(k, v, buf[:0])
		if err != nil {
			return extended, err
		}
		buf = textBytes
		text := unsafe.String(unsafe.SliceData(buf), len(buf))
		if lic == nil || !bytes.Equal(l, licID) {
			lic, licID = s.idx.licenses[string(l)], l
		}
		if lic == nil || lic.deleted {
			// Cannot happen: deletion ends the leases in the same
			// transaction. Keep the record, skip the seat.
			s.log.Warn("embedded store: active lease of a missing license", "lease", string(id), "license", string(licID))
			continue
		}
		// A borrowed lease has no heartbeats to lose, and a lingering one's
		// deadline was written with its release.
		slack := crashed && sl.flags&(flagBorrowed|flagLingering) == 0
		if slack {
			sl.deadline += int64(server.WriteBehindSlack(s.flushEvery, &lic.lic))
			sl.rev++
		}
		r := s.idx.store(lic, sl, text)
		if slack {
			extended++
			s.idx.markDirty(r) // the flusher stores the new deadline
		}
		stored = append(stored, r)
	}
	if dup, ok := s.idx.indexAll(stored); !ok {
		return extended, fmt.Errorf("active lease %s: recorded twice", textID(s.idx.slots.text(dup)))
	}
	return extended, nil
}
