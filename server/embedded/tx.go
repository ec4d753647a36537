package embedded

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Writes shared by the methods. Each runs inside a caller's transaction.

// insertLease stores a new lease with its indexes and counts it for the
// license's lifetime lease count.
func insertLease(tx *bolt.Tx, rec leaseRecord) error {
	leases := tx.Bucket(bucketLeases)
	if leases.Get([]byte(rec.ID)) != nil {
		return server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "lease id already exists")
	}
	counts := tx.Bucket(bucketLeaseCounts)
	n := bytesUint64(counts.Get([]byte(rec.LicenseID))) + 1
	return putAll(
		put{leases, []byte(rec.ID), encode(rec)},
		put{tx.Bucket(bucketLeasesLicense), timeKey(rec.LicenseID, rec.AcquiredAt, rec.ID), nil},
		put{tx.Bucket(bucketActive), []byte(rec.ID), nil},
		put{counts, []byte(rec.LicenseID), uint64Bytes(n)},
	)
}

// updateLease stores rec unless the stored version is newer or already
// ended. It reports whether it wrote.
func updateLease(tx *bolt.Tx, rec leaseRecord) (bool, error) {
	leases := tx.Bucket(bucketLeases)
	old := leases.Get([]byte(rec.ID))
	if old == nil {
		return false, nil // not stored yet: its insert carries the latest version
	}
	cur, err := decode[leaseRecord](old)
	if err != nil {
		return false, fmt.Errorf("decode lease %s: %w", rec.ID, err)
	}
	if cur.State.Terminal() || cur.Rev >= rec.Rev {
		return false, nil
	}
	return true, leases.Put([]byte(rec.ID), encode(rec))
}

// ending is everything one lease's end writes.
type ending struct {
	rec     leaseRecord
	usage   server.UsageEvent
	cleanup *server.CleanupEvent // expiries only
	audit   *server.AuditEntry
}

// endLease stores the end of a lease with its records, once: a lease that
// is already ended on disk is left alone and false is returned, so two
// cleaners racing record it once (invariant 5).
func endLease(tx *bolt.Tx, end ending) (bool, error) {
	ok, err := updateLease(tx, end.rec)
	if err != nil || !ok {
		return false, err
	}
	u := end.usage
	uv := encode(u)
	puts := []put{
		{tx.Bucket(bucketUsage), timeKey(u.LicenseID, u.EndedAt, u.LeaseID), uv},
		{tx.Bucket(bucketUsageTenant), timeKey(u.TenantID, u.EndedAt, u.LeaseID), uv},
	}
	if c := end.cleanup; c != nil {
		v := encode(c)
		puts = append(puts,
			put{tx.Bucket(bucketCleanupLicense), timeKey(c.LicenseID, c.CleanedAt, c.LeaseID), v},
			put{tx.Bucket(bucketCleanupTenant), timeKey(c.TenantID, c.CleanedAt, c.LeaseID), v},
		)
	}
	if a := end.audit; a != nil {
		puts = append(puts, auditPut(tx, *a))
	}
	if err := putAll(puts...); err != nil {
		return false, err
	}
	return true, tx.Bucket(bucketActive).Delete([]byte(end.rec.ID))
}

func auditPut(tx *bolt.Tx, e server.AuditEntry) put {
	return put{tx.Bucket(bucketAudit), timeKey(e.TenantID, e.At, e.ID), encode(e)}
}

type put struct {
	b    *bolt.Bucket
	k, v []byte
}

func putAll(ps ...put) error {
	for _, p := range ps {
		v := p.v
		if v == nil {
			v = []byte{} // bbolt stores an empty value for index keys
		}
		if err := p.b.Put(p.k, v); err != nil {
			return err
		}
	}
	return nil
}
