package embedded

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// ListLeases lists newest first. Active leases come from memory (their
// deadlines may not be flushed yet, and history may be long); an end
// state walks the license's index of ended leases on disk backwards, and
// no filter walks it together with the active records (their keys are
// alike and never the same).
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
		return s.activePage(lic, p)
	}
	s.mu.Unlock()

	var out []server.Lease
	var next string
	pfx := prefix(licenseID)
	err = s.view(func(tx *bolt.Tx) error {
		leases := tx.Bucket(bucketLeases)
		var c cursor = tx.Bucket(bucketLeasesLicense).Cursor()
		if state == "" {
			c = &unionCursor{a: c, b: tx.Bucket(bucketActiveLeases).Cursor()}
		}
		var err error
		out, next, err = scanPage(c, pfx, p, true, func(k, v []byte) (server.Lease, bool, error) {
			if len(v) > 0 { // an active lease's record
				l, err := activeLease(k, v, tenantID)
				return l, err == nil, err
			}
			id := []byte(idFromTimeKey(k, len(pfx)))
			rec, err := decodeHistory(id, leases.Get(id))
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
		if r, ok := s.idx.lookup(l.ID); ok {
			out[i] = s.idx.lease(r)
		}
	}
	return out, next, nil
}

// activePage pages through a license's active leases in memory, in the
// order and with the tokens of the disk index (keys.go timeKey: acquired,
// then id). Call with s.mu held.
func (s *Store) activePage(lic *license, p server.Page) ([]server.Lease, string, error) {
	pfx := prefix(lic.lic.ID)
	after, err := decodeToken(p.Token, pfx)
	if err != nil {
		return nil, "", err
	}
	if after != nil && len(after) < len(pfx)+8 {
		return nil, "", errBadToken
	}
	type keyed struct {
		at uint64 // the key's time: nanos(acquired)
		id string
		r  ref
	}
	// Keys of one license compare as (time, id): no key is built.
	desc := func(a, b keyed) int { return cmp.Or(cmp.Compare(b.at, a.at), strings.Compare(b.id, a.id)) }
	var bound keyed
	if after != nil {
		bound = keyed{at: binary.BigEndian.Uint64(after[len(pfx):]), id: string(after[len(pfx)+8:])}
	}
	var all []keyed
	for _, r := range s.idx.entries(lic) {
		k := keyed{nanos(timeOf(s.idx.slots.at(r).acquired)), textID(s.idx.slots.text(r)), r}
		if after == nil || desc(k, bound) > 0 {
			all = append(all, k)
		}
	}
	slices.SortFunc(all, desc)
	size := p.PageSize()
	next := ""
	if len(all) > size {
		all = all[:size]
		last := all[size-1]
		next = encodeToken(timeKey(lic.lic.ID, timeOf(int64(last.at)), last.id))
	}
	out := make([]server.Lease, len(all))
	for i, x := range all {
		out[i] = s.idx.lease(x.r)
	}
	return out, next, nil
}
