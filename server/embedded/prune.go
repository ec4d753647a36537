package embedded

import (
	"bytes"
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// PruneRecords removes at most limit records of kind older than before, in
// one group-committed transaction. Every history bucket is keyed by a scope
// (a license or a tenant) and then a time, so each scope is read from its
// start up to before: the cost is the records removed plus one seek per
// scope.
func (s *Store) PruneRecords(_ context.Context, kind server.RecordKind, before time.Time, limit int) (int, error) {
	var prune func(tx *bolt.Tx, before time.Time, limit int) (int, error)
	switch kind {
	case server.RecordLeases:
		prune = pruneLeases
	case server.RecordCleanupEvents:
		prune = pruneCleanupEvents
	case server.RecordSeatEvents:
		prune = func(tx *bolt.Tx, before time.Time, limit int) (int, error) {
			return pruneByTime(tx, poolScopes(tx), writable(tx, bucketSeatEvents), before, limit)
		}
	case server.RecordAudit:
		prune = func(tx *bolt.Tx, before time.Time, limit int) (int, error) {
			return pruneByTime(tx, scopesOf(tx, bucketTenants), writable(tx, bucketAudit), before, limit)
		}
	case server.RecordWebhookDeliveries:
		prune = pruneDeliveries
	case server.RecordWebhookEvents:
		prune = pruneEvents
	case server.RecordReturnedCertificates:
		if limit <= 0 {
			return 0, nil
		}
		return s.pruneReturned(before, limit)
	default:
		return 0, server.ErrUnknownRecordKind(kind)
	}
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.commit.write(func(tx *bolt.Tx) (err error) {
		n, err = prune(tx, before, limit) // n is reset: a group's retry runs this again
		return err
	})
	if err != nil {
		return 0, s.fail("prune "+string(kind), err)
	}
	return n, nil
}

// scopesOf lists the keys of a bucket of records by id (licenses, tenants):
// the scopes the history buckets are keyed by.
func scopesOf(tx *bolt.Tx, bucket []byte) [][]byte {
	var ids [][]byte
	_ = tx.Bucket(bucket).ForEach(func(k, _ []byte) error {
		ids = append(ids, bytes.Clone(k))
		return nil
	})
	return ids
}

// olderKeys returns up to limit keys of b in scope whose time is before
// before, oldest first.
func olderKeys(b *bolt.Bucket, scope []byte, before time.Time, limit int) [][]byte {
	pfx := prefix(string(scope))
	end := timeKey(string(scope), before, "")
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(pfx); k != nil && len(keys) < limit && bytes.Compare(k, end) < 0; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	return keys
}

// poolScopes lists the pools the history buckets of leases are keyed
// by: the licenses and their grants.
func poolScopes(tx *bolt.Tx) [][]byte {
	return append(scopesOf(tx, bucketLicenses), scopesOf(tx, bucketGrants)...)
}

// pruneByTime removes records of b (keyed scope 0 time id) older than
// before, scope by scope.
func pruneByTime(tx *bolt.Tx, scopes [][]byte, b *bolt.Bucket, before time.Time, limit int) (int, error) {
	n := 0
	for _, scope := range scopes {
		for _, k := range olderKeys(b, scope, before, limit-n) {
			if err := b.Delete(k); err != nil {
				return 0, err
			}
			n++
		}
		if n == limit {
			break
		}
	}
	return n, nil
}

// pruneCleanupEvents removes cleanup events cleaned before before from
// both of their buckets (by tenant and by license).
func pruneCleanupEvents(tx *bolt.Tx, before time.Time, limit int) (int, error) {
	byTenant, byLicense := writable(tx, bucketCleanupTenant), writable(tx, bucketCleanupLicense)
	n := 0
	for _, tenant := range scopesOf(tx, bucketTenants) {
		for _, k := range olderKeys(byTenant, tenant, before, limit-n) {
			c, err := decode[server.CleanupEvent](byTenant.Get(k))
			if err != nil {
				return 0, err
			}
			if err := deleteAll(
				del{byTenant, k},
				del{byLicense, timeKey(c.LicenseID, c.CleanedAt, c.LeaseID)},
			); err != nil {
				return 0, err
			}
			n++
		}
		if n == limit {
			break
		}
	}
	return n, nil
}

// pruneLeases removes ended leases that ended before before, with their
// usage events. leases_license orders a license's ended leases by when
// they were acquired, and a lease ends after it is acquired, so only
// those acquired before before are read; one still running then (a long
// borrow) is read again by each pass until it is old enough.
func pruneLeases(tx *bolt.Tx, before time.Time, limit int) (int, error) {
	records, byLicense := tx.Bucket(bucketLeases), tx.Bucket(bucketLeasesLicense)
	usage, usageTenant := writable(tx, bucketUsage), writable(tx, bucketUsageTenant)
	n := 0
	for _, lic := range poolScopes(tx) {
		pfx := prefix(string(lic))
		end := timeKey(string(lic), before, "")
		var doomed []leaseRecord
		var keys [][]byte
		c := byLicense.Cursor()
		for k, _ := c.Seek(pfx); k != nil && n+len(doomed) < limit && bytes.Compare(k, end) < 0; k, _ = c.Next() {
			id := k[len(pfx)+8:]
			v := records.Get(id)
			if v == nil {
				continue // schema 1 kept active leases here too: not an ended one
			}
			rec, err := decodeHistory(id, v)
			if err != nil {
				return 0, err
			}
			if rec.State == server.LeaseActive || !rec.EndedAt.Before(before) {
				continue
			}
			doomed = append(doomed, rec)
			keys = append(keys, bytes.Clone(k))
		}
		for i, rec := range doomed {
			l := rec.Lease
			// The usage event is keyed by where it ends: at the end, or at
			// the deadline if that came first (server.UsageEventOf, since
			// issue 25); events written before then ended at the end
			// (released, revoked) or at the last heartbeat (expired).
			dels := []del{{byLicense, keys[i]}, {records, []byte(l.ID)}}
			for _, t := range []time.Time{server.UsageEventOf(&l).EndedAt, l.EndedAt, l.LastHeartbeatAt} {
				dels = append(dels,
					del{usage, timeKey(l.LicenseID, t, l.ID)},
					del{usageTenant, timeKey(l.TenantID, t, l.ID)})
			}
			if err := deleteAll(dels...); err != nil {
				return 0, err
			}
		}
		n += len(doomed)
		if n == limit {
			break
		}
	}
	return n, nil
}

type del struct {
	b *bolt.Bucket
	k []byte
}

func deleteAll(ds ...del) error {
	for _, d := range ds {
		if err := d.b.Delete(d.k); err != nil {
			return err
		}
	}
	return nil
}
