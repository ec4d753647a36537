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
// alike and never the same). A license's leases are its own and its
// grants' (pools), walked as one.
func (s *Store) ListLeases(_ context.Context, tenantID, licenseID string, state server.LeaseState, p server.Page) ([]server.Lease, string, error) {
	switch state {
	case "", server.LeaseActive, server.LeaseReleased, server.LeaseExpired, server.LeaseRevoked:
	default:
		return nil, "", server.Invalid("state", "unknown lease state %q", state)
	}
	s.mu.Lock()
	pool, err := s.pool(tenantID, licenseID)
	if err != nil {
		s.mu.Unlock()
		return nil, "", err
	}
	pools := []*license{pool}
	if pool.parent == nil {
		pools = pool.pools()
	}
	if state == server.LeaseActive {
		defer s.mu.Unlock()
		return s.activePage(licenseID, pools, p)
	}
	ids := poolIDs(pools)
	s.mu.Unlock()

	var out []server.Lease
	var next string
	pfx := prefix(licenseID)
	err = s.view(func(tx *bolt.Tx) error {
		leases := tx.Bucket(bucketLeases)
		c, top := poolsCursor(licenseID, ids, func() cursor {
			var c cursor = tx.Bucket(bucketLeasesLicense).Cursor()
			if state == "" {
				c = union(c, tx.Bucket(bucketActiveLeases).Cursor())
			}
			return c
		})
		var err error
		out, next, err = scanPage(c, pfx, p, true, func(k, v []byte) (server.Lease, bool, error) {
			if len(v) > 0 { // an active lease's record, under its pool's key
				l, err := activeLease(top.key(k, pfx), v, tenantID)
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

// activePage pages through the pools' active leases in memory, in the
// order and with the tokens of the disk index (keys.go timeKey: acquired,
// then id) of scope, the id listed. Call with s.mu held.
func (s *Store) activePage(scope string, pools []*license, p server.Page) ([]server.Lease, string, error) {
	pfx := prefix(scope)
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
	// Keys of one scope compare as (time, id): no key is built.
	desc := func(a, b keyed) int { return cmp.Or(cmp.Compare(b.at, a.at), strings.Compare(b.id, a.id)) }
	var bound keyed
	if after != nil {
		bound = keyed{at: binary.BigEndian.Uint64(after[len(pfx):]), id: string(after[len(pfx)+8:])}
	}
	var all []keyed
	for _, pool := range pools {
		for _, r := range s.idx.entries(pool) {
			k := keyed{nanos(timeOf(s.idx.slots.at(r).acquired)), textID(s.idx.slots.text(r)), r}
			if after == nil || desc(k, bound) > 0 {
				all = append(all, k)
			}
		}
	}
	slices.SortFunc(all, desc)
	size := p.PageSize()
	next := ""
	if len(all) > size {
		all = all[:size]
		last := all[size-1]
		next = encodeToken(timeKey(scope, timeOf(int64(last.at)), last.id))
	}
	out := make([]server.Lease, len(all))
	for i, x := range all {
		out[i] = s.idx.lease(x.r)
	}
	return out, next, nil
}

func poolIDs(pools []*license) []string {
	ids := make([]string, len(pools))
	for i, p := range pools {
		ids[i] = p.lic.ID
	}
	return ids
}

// poolsCursor walks the keys of several pools (ids) in one bucket as
// keys of scope, the id listed: open gives a cursor of the bucket. The
// scope's own keys alone are walked by open's cursor itself.
func poolsCursor(scope string, ids []string, open func() cursor) (cursor, *pooled) {
	if len(ids) == 1 && ids[0] == scope {
		return open(), &pooled{}
	}
	to := prefix(scope)
	cs := make([]cursor, len(ids))
	for i, id := range ids {
		cs[i] = &rescoped{c: open(), from: prefix(id), to: to}
	}
	u := union(cs...)
	return u, &pooled{u: u, ids: ids}
}

// pooled tells which pool the current key of a poolsCursor is of.
type pooled struct {
	u   *unionCursor
	ids []string
}

// key is the current key k (under the scope's prefix pfx) as its pool
// stores it.
func (p *pooled) key(k, pfx []byte) []byte {
	if p.u == nil {
		return k
	}
	return append(prefix(p.ids[p.u.cur]), k[len(pfx):]...)
}
