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

// UsageReport reads the leases of the tenant's pools (licenses and their
// grants, deleted ones too) acquired before the range ends, from disk,
// with the active ones from memory (their deadlines may not be flushed
// yet), and the seat events in the range; server.BuildUsageReport sweeps
// them, a row per pool.
func (s *Store) UsageReport(_ context.Context, q server.UsageQuery) (server.UsageReport, error) {
	ids, err := s.reportPools(q)
	if err != nil {
		return server.UsageReport{}, err
	}

	var (
		leases []server.Lease
		events []server.SeatEvent
	)
	err = s.view(func(tx *bolt.Tx) error {
		records := tx.Bucket(bucketLeases)
		for _, id := range ids {
			pfx := prefix(id)
			end := timeKey(id, q.End, "")
			leasesOf := union(tx.Bucket(bucketLeasesLicense).Cursor(), tx.Bucket(bucketActiveLeases).Cursor())
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

// reportPools returns the ids a usage report reads the leases and seat
// events of: the tenant's pools, or q.LicenseID's (the license's own and
// its grants'). Deleted ones count: their history stays.
func (s *Store) reportPools(q server.UsageQuery) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.LicenseID != "" {
		lic := s.idx.licenses[q.LicenseID]
		if lic == nil || lic.parent != nil || lic.creating || lic.lic.TenantID != q.TenantID {
			return nil, server.ErrLicenseNotFound
		}
		return poolIDs(lic.pools()), nil
	}
	var ids []string
	for id, p := range s.idx.licenses {
		if !p.creating && p.lic.TenantID == q.TenantID {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
