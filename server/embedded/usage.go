package embedded

import (
	"bytes"
	"context"
	"maps"
	"slices"

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
	features, err := s.reportPools(q)
	if err != nil {
		return server.UsageReport{}, err
	}
	ids := slices.Collect(maps.Keys(features))

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
	// Only the pools' leases and events were read: the sweep takes them all.
	all := q
	all.LicenseID, all.Feature = "", ""
	rep, err := server.BuildUsageReport(all, leases, events, now)
	for i := range rep.Rows {
		rep.Rows[i].Feature = features[rep.Rows[i].LicenseID]
	}
	return rep, err
}

// reportPools returns the pools a usage report counts, each with its
// feature ("" for a license's base pool): the tenant's, or q.LicenseID's
// (a license's own and its grants', or one grant's), only the grants of
// q.Feature when set. Deleted ones count: their history stays.
func (s *Store) reportPools(q server.UsageQuery) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pools []*license
	if q.LicenseID != "" {
		p := s.idx.licenses[q.LicenseID]
		if p == nil || p.creating || p.lic.TenantID != q.TenantID {
			return nil, server.ErrLicenseNotFound
		}
		pools = []*license{p}
		if p.parent == nil {
			pools = p.pools()
		}
	} else {
		for _, p := range s.idx.licenses {
			if !p.creating && p.lic.TenantID == q.TenantID {
				pools = append(pools, p)
			}
		}
	}
	features := make(map[string]string, len(pools))
	for _, p := range pools {
		if q.Feature == "" || p.parent != nil && p.grant.Feature == q.Feature {
			features[p.lic.ID] = p.grant.Feature
		}
	}
	return features, nil
}
