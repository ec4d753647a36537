package embedded

import (
	"bytes"
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// ListLeases lists newest first. Active leases come from memory (their
// deadlines may not be flushed yet, and history may be long); any other
// filter walks the license's lease index on disk backwards.
func (s *Store) ListLeases(_ context.Context, tenantID, licenseID string, state server.LeaseState, p server.Page) ([]server.Lease, string, error) {
	switch state {
	case "", server.LeaseActive, server.LeaseReleased, server.LeaseExpired, server.LeaseRevoked:
	default:
		return nil, "", server.Invalid("state", "unknown lease state %q", state)
	}
	s.mu.Lock()
	lic, err := s.license(tenantID, licenseID)
	if err != nil {
		s.mu.Unlock()
		return nil, "", err
	}
	if state == server.LeaseActive {
		defer s.mu.Unlock()
		return activePage(lic, p)
	}
	s.mu.Unlock()

	var out []server.Lease
	var next string
	pfx := prefix(licenseID)
	err = s.db.View(func(tx *bolt.Tx) error {
		leases := tx.Bucket(bucketLeases)
		var err error
		out, next, err = scanPage(tx.Bucket(bucketLeasesLicense), pfx, p, true, func(k, _ []byte) (server.Lease, bool, error) {
			rec, err := decode[leaseRecord](leases.Get([]byte(idFromTimeKey(k, len(pfx)))))
			return rec.Lease, err == nil && (state == "" || rec.State == state), err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail("list leases", err)
	}
	// Active ones: memory has the latest heartbeat.
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range out {
		if e := s.idx.leases[l.ID]; e != nil {
			out[i] = cloneLease(e.lease)
		}
	}
	return out, next, nil
}

// activePage pages through a license's active leases in memory, with the
// same keys and tokens as the disk index. Call with s.mu held.
func activePage(lic *license, p server.Page) ([]server.Lease, string, error) {
	pfx := prefix(lic.lic.ID)
	after, err := decodeToken(p.Token, pfx)
	if err != nil {
		return nil, "", err
	}
	type keyed struct {
		k []byte
		e *entry
	}
	var all []keyed
	for _, e := range lic.entries() {
		k := timeKey(lic.lic.ID, e.lease.AcquiredAt, e.lease.ID)
		if after == nil || bytes.Compare(k, after) < 0 {
			all = append(all, keyed{k, e})
		}
	}
	slices.SortFunc(all, func(a, b keyed) int { return bytes.Compare(b.k, a.k) })
	size := p.PageSize()
	next := ""
	if len(all) > size {
		all = all[:size]
		next = encodeToken(all[size-1].k)
	}
	out := make([]server.Lease, len(all))
	for i, x := range all {
		out[i] = cloneLease(x.e.lease)
	}
	return out, next, nil
}
