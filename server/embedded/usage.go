package embedded

import (
	"bytes"
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// RecordSeatEvent stores a denial or a wait, group-committed like every
// other write: durable when it returns.
func (s *Store) RecordSeatEvent(_ context.Context, e server.SeatEvent) error {
	err := s.commit.write(func(tx *bolt.Tx) error {
		return writable(tx, bucketSeatEvents).Put(timeKey(e.LicenseID, e.At, e.ID), encode(e))
	})
	if err != nil {
		return s.fail("record seat event", err)
	}
	return nil
}

// UsageReport reads the leases of the tenant's licenses (deleted ones too)
// acquired before the range ends, from disk, with the active ones from
// memory (their deadlines may not be flushed yet), and the seat events in
// the range; server.BuildUsageReport sweeps them.
func (s *Store) UsageReport(_ context.Context, q server.UsageQuery) (server.UsageReport, error) {
	var ids []string
	s.mu.Lock()
	if q.LicenseID != "" {
		lic := s.idx.licenses[q.LicenseID]
		if lic == nil || lic.creating || lic.lic.TenantID != q.TenantID {
			s.mu.Unlock()
			return server.UsageReport{}, server.ErrLicenseNotFound
		}
		ids = []string{q.LicenseID}
	} else {
		for id, lic := range s.idx.licenses {
			if !lic.creating && lic.lic.TenantID == q.TenantID {
				ids = append(ids, id)
			}
		}
	}
	s.mu.Unlock()

	var (
		leases []server.Lease
		events []server.SeatEvent
	)
	err := s.view(func(tx *bolt.Tx) error {
		records := tx.Bucket(bucketLeases)
		for _, id := range ids {
			pfx := prefix(id)
			end := timeKey(id, q.End, "")
			leasesOf := &unionCursor{a: tx.Bucket(bucketLeasesLicense).Cursor(), b: tx.Bucket(bucketActiveLeases).Cursor()}
			for k, v := leasesOf.Seek(pfx); k != nil && bytes.Compare(k, end) < 0; k, v = leasesOf.Next() {
				if len(v) > 0 { // an active lease's record
					l, err := activeLease(k, v, q.TenantID)
					if err != nil {
						return err
					}
					leases = append(leases, l)
					continue
				}
				id := []byte(idFromTimeKey(k, len(pfx)))
				v := records.Get(id)
				if v == nil {
					continue
				}
				rec, err := decodeHistory(id, v)
				if err != nil {
					return err
				}
				leases = append(leases, rec.Lease)
			}
			c := tx.Bucket(bucketSeatEvents).Cursor()
			end = timeKey(id, q.End, "")
			for k, v := c.Seek(timeKey(id, q.Start, "")); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
				e, err := decode[server.SeatEvent](v)
				if err != nil {
					return err
				}
				events = append(events, e)
			}
		}
		return nil
	})
	if err != nil {
		return server.UsageReport{}, s.fail("usage report", err)
	}
	s.mu.Lock()
	now := s.now()
	for i, l := range leases {
		if r, ok := s.idx.lookup(l.ID); ok {
			leases[i] = s.idx.lease(r)
		}
	}
	s.mu.Unlock()
	return server.BuildUsageReport(q, leases, events, now)
}
