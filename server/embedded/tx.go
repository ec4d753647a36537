package embedded

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Writes shared by the methods. Each runs inside a caller's transaction.

// activeWrite is an active lease's record as a write stores it, taken
// from memory under the lock and written outside it.
type activeWrite struct {
	id, licenseID string
	key, value    []byte // activeKey, appendActive
	rev           uint64
}

// activeWrite snapshots an active lease's record.
func (x *index) activeWrite(r ref) activeWrite {
	s, text := x.slots.at(r), x.slots.text(r)
	l := x.licenseOf(r)
	id := textID(text)
	return activeWrite{
		id: id, licenseID: l.lic.ID, rev: s.rev,
		key:   activeKey(l.lic.ID, s.acquired, id),
		value: appendActive(nil, s, text),
	}
}

// insertLease stores a new active lease and counts it for the license's
// lifetime lease count.
func insertLease(tx *bolt.Tx, w activeWrite) error {
	active := writable(tx, bucketActiveLeases)
	if tx.Bucket(bucketLeases).Get([]byte(w.id)) != nil || active.Get(w.key) != nil {
		return server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "lease id already exists")
	}
	counts := tx.Bucket(bucketLeaseCounts)
	n := bytesUint64(counts.Get([]byte(w.licenseID))) + 1
	return putAll(
		put{active, w.key, w.value},
		put{counts, []byte(w.licenseID), uint64Bytes(n)},
	)
}

// updateLease stores w unless the stored version is as new or newer, or
// the lease is no longer active on disk (ended, or its insert is still to
// come and carries the latest version). It reports whether it wrote.
func updateLease(tx *bolt.Tx, w activeWrite) (bool, error) {
	active, newer, err := storedNewer(tx, w.key, w.rev)
	if err != nil || newer {
		return false, err
	}
	return true, active.Put(w.key, w.value)
}

// storedNewer reports whether the active record at key is missing (the
// lease ended, or its insert is still to come) or as new as rev or newer:
// then a write of rev must not replace it.
func storedNewer(tx *bolt.Tx, key []byte, rev uint64) (active *bolt.Bucket, newer bool, err error) {
	active = writable(tx, bucketActiveLeases)
	cur := active.Get(key)
	if cur == nil {
		return active, true, nil
	}
	stored, err := recordRev(cur)
	if err != nil {
		_, _, id, _ := splitActiveKey(key)
		return active, false, fmt.Errorf("lease %s: %w", id, err)
	}
	return active, stored >= rev, nil
}

// ending is everything one lease's end writes.
type ending struct {
	lease   server.Lease // as it ended: the answer
	key     []byte       // its activeKey
	rev     uint64
	record  []byte // its record in bucketLeases
	usage   server.UsageEvent
	cleanup *server.CleanupEvent // expiries only
	audit   *server.AuditEntry
	event   *server.Event // lease.revoked, lease.expired: the outbox's (invariant 14)
}

// endLease moves a lease from the active records to the history with its
// events, once: a lease no longer active on disk is left alone and false
// is returned, so two cleaners racing record it once (invariant 5).
func endLease(tx *bolt.Tx, end ending) (bool, error) {
	active, newer, err := storedNewer(tx, end.key, end.rev)
	if err != nil || newer {
		return false, err
	}
	u := end.usage
	uv := encode(u)
	puts := []put{
		{tx.Bucket(bucketLeases), []byte(end.lease.ID), end.record},
		{tx.Bucket(bucketLeasesLicense), end.key, nil},
		{writable(tx, bucketUsage), timeKey(u.LicenseID, u.EndedAt, u.LeaseID), uv},
		{writable(tx, bucketUsageTenant), timeKey(u.TenantID, u.EndedAt, u.LeaseID), uv},
	}
	if c := end.cleanup; c != nil {
		v := encode(c)
		puts = append(puts,
			put{writable(tx, bucketCleanupLicense), timeKey(c.LicenseID, c.CleanedAt, c.LeaseID), v},
			put{writable(tx, bucketCleanupTenant), timeKey(c.TenantID, c.CleanedAt, c.LeaseID), v},
		)
	}
	if a := end.audit; a != nil {
		puts = append(puts, auditPut(tx, *a))
	}
	if err := putAll(puts...); err != nil {
		return false, err
	}
	if e := end.event; e != nil {
		if err := putEvent(tx, *e); err != nil {
			return false, err
		}
	}
	return true, active.Delete(end.key)
}

func auditPut(tx *bolt.Tx, e server.AuditEntry) put {
	return put{writable(tx, bucketAudit), timeKey(e.TenantID, e.At, e.ID), encode(e)}
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
