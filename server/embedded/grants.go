package embedded

import (
	"context"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Feature grants (server.Grant). Each grant is a pool of its own
// (invariant 12), kept in memory as a license entry of its own (its
// parent is the license): its leases are slots of that entry, counted,
// filed by deadline, cleaned up, written behind and reloaded exactly as a
// license's, under the grant's id. The entry's lic is
// grant.Pool(&parent.lic), made again whenever the grant or its license
// changes (repool). No key opens a grant: acquisitions of a feature come
// through the license (feature.go).
//
// On disk a grant is a JSON record in bucketGrants, keyed by its id (an
// added bucket: an older data dir opens with none). A deleted grant's
// record stays, marked deleted, so that its history keeps its context.
//
// Every write of a grant marks its license busy, as UpdateLicense does:
// acquisitions on the license, of any pool, wait until it is stored, so
// none is judged against grants about to change.

// grantRecord is a grant as stored.
type grantRecord struct {
	server.Grant
	Deleted bool `json:"deleted,omitempty"`
}

func (s *Store) CreateGrant(_ context.Context, g server.Grant) (server.Grant, error) {
	if !server.IsGrantID(g.ID) || server.PoolLicense(g.ID) != g.LicenseID {
		return server.Grant{}, server.Invalid("grant.id", "must be the license's id, a dot and 8 hex digits (got %q)", g.ID)
	}
	g = normalizeGrant(g)
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, err := s.idleLicense(g.TenantID, g.LicenseID)
	if err != nil {
		return server.Grant{}, err
	}
	if _, taken := s.idx.licenses[g.ID]; taken {
		return server.Grant{}, server.AlreadyExists("grant.id", "feature grant")
	}
	defer s.hold(lic)()
	created := server.EventOfLicenseChange(server.ChangeGrantCreated, &lic.lic, &g, g.UpdatedAt)
	if err := s.writeGrant("create grant", grantRecord{Grant: g}, created); err != nil {
		return server.Grant{}, err
	}
	p := s.idx.newPool(lic, g)
	s.idx.addLicense(p)
	lic.grants = append(lic.grants, p)
	lic.syncGrants(s.idx)
	return g, nil
}

func (s *Store) UpdateGrant(_ context.Context, tenantID, licenseID, grantID string, update func(*server.Grant) error) (server.Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, p, err := s.idleGrant(tenantID, licenseID, grantID)
	if err != nil {
		return server.Grant{}, err
	}
	defer s.hold(lic)()
	cur, next := p.grant, p.grant
	s.unlocked(func() {
		// update is the caller's code: never run it under the store's lock.
		if err = update(&next); err != nil {
			return
		}
		next.ID, next.LicenseID, next.TenantID, next.Feature, next.CreatedAt = cur.ID, cur.LicenseID, cur.TenantID, cur.Feature, cur.CreatedAt
		next.UpdatedAt = s.now()
		next = normalizeGrant(next)
	})
	if err != nil {
		return server.Grant{}, err
	}
	// Its license's policy must stay valid (seats under the reservations).
	if err := lic.lic.Policy.CheckChange(&lic.lic, withGrant(&lic.lic, cur.ID, &next)); err != nil {
		return server.Grant{}, err
	}
	updated := server.EventOfLicenseChange(server.ChangeGrantUpdated, &lic.lic, &next, next.UpdatedAt)
	if err := s.writeGrant("update grant", grantRecord{Grant: next}, updated); err != nil {
		return server.Grant{}, err
	}
	p.grant = next
	p.lic = next.Pool(&lic.lic)
	lic.syncGrants(s.idx)
	return next, nil
}

func (s *Store) DeleteGrant(_ context.Context, tenantID, licenseID, grantID string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, p, err := s.idleGrant(tenantID, licenseID, grantID)
	if err != nil {
		return 0, err
	}
	defer s.hold(lic)()
	// Its license's policy must stay valid (no rule of a feature it no
	// longer holds).
	if err := lic.lic.Policy.CheckChange(&lic.lic, withGrant(&lic.lic, grantID, nil)); err != nil {
		return 0, err
	}
	rec := grantRecord{Grant: p.grant, Deleted: true}
	// After its leases' lease.revoked events (revokeAll writes those first).
	deleted := server.EventOfLicenseChange(server.ChangeGrantDeleted, &lic.lic, &rec.Grant, s.now())
	revoked, err := s.revokeAll([]*license{p}, "grant deleted", func(tx *bolt.Tx) error {
		if err := putEvent(tx, deleted); err != nil {
			return err
		}
		return tx.Bucket(bucketGrants).Put([]byte(rec.ID), encode(rec))
	})
	if err != nil {
		return 0, s.fail("delete grant", err)
	}
	p.deleted = true
	lic.grants = slices.DeleteFunc(lic.grants, func(g *license) bool { return g == p })
	lic.former = append(lic.former, p)
	lic.syncGrants(s.idx)
	return revoked, nil
}

// withGrant is a copy of l with its grant id replaced by g, or removed
// (g nil): the license a grant change would leave, for its policy's check.
func withGrant(l *server.License, id string, g *server.Grant) *server.License {
	c := *l
	c.Grants = make([]server.Grant, 0, len(l.Grants))
	for _, old := range l.Grants {
		switch {
		case old.ID != id:
			c.Grants = append(c.Grants, old)
		case g != nil:
			c.Grants = append(c.Grants, *g)
		}
	}
	return &c
}

// writeGrant stores a grant's record and its license.updated event e in
// one transaction, with s.mu released.
func (s *Store) writeGrant(op string, rec grantRecord, e server.Event) error {
	var err error
	s.unlocked(func() {
		err = s.commit.write(func(tx *bolt.Tx) error {
			if err := putEvent(tx, e); err != nil {
				return err
			}
			return tx.Bucket(bucketGrants).Put([]byte(rec.ID), encode(rec))
		})
	})
	if err != nil {
		return s.fail(op, err)
	}
	return nil
}

// hold marks a license busy (acquisitions on it wait) and returns what
// clears the mark. Call with s.mu held, on an idle license.
func (s *Store) hold(lic *license) func() {
	lic.busy = true
	return func() {
		lic.busy = false
		s.idle.Broadcast()
	}
}

// idleGrant finds an undeleted grant of a visible license of the tenant,
// after waiting out any write of the license or its grants in flight.
func (s *Store) idleGrant(tenantID, licenseID, grantID string) (lic, p *license, err error) {
	if lic, err = s.idleLicense(tenantID, licenseID); err != nil {
		return nil, nil, err
	}
	p = s.idx.licenses[grantID]
	if p == nil || p.parent != lic || p.deleted {
		return nil, nil, server.ErrGrantNotFound
	}
	return lic, p, nil
}

// pool finds what a lease list or seat count may name: a visible license
// of the tenant, or an undeleted grant of one. Call with s.mu held.
func (s *Store) pool(tenantID, id string) (*license, error) {
	p := s.idx.licenses[id]
	if p == nil || p.deleted || p.creating {
		return nil, server.ErrLicenseNotFound
	}
	if lic := p.licenseOf(); lic.deleted || lic.creating || lic.lic.TenantID != tenantID {
		return nil, server.ErrLicenseNotFound
	}
	return p, nil
}

// revokeAll revokes every active lease of the pools, each with its usage
// event and an audit entry saying why, and runs also in the same
// transaction. It first lets writes already in flight on those leases
// settle. It returns the number of leases revoked; on an error nothing
// has changed. Call with s.mu held and the pools' license held busy.
func (s *Store) revokeAll(pools []*license, why string, also func(tx *bolt.Tx) error) (int, error) {
	entries := func() []ref {
		var rs []ref
		for _, p := range pools {
			rs = append(rs, s.idx.entries(p)...)
		}
		return rs
	}
	for s.anyBusy(entries()) {
		s.wait()
	}
	now := s.now()
	rs := entries()
	ends := make([]ending, len(rs))
	for i, r := range rs {
		ends[i] = s.revoking(r, now)
		ends[i].audit = systemAudit(ends[i].lease, "lease.revoke", now, map[string]string{"reason": why})
	}
	revoked := 0
	err := s.writeBusy(rs, func(tx *bolt.Tx) error {
		revoked = 0
		for _, end := range ends {
			ok, err := endLease(tx, end)
			if err != nil {
				return err
			}
			if ok {
				revoked++
			}
		}
		return also(tx)
	})
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		s.idx.remove(r)
	}
	return revoked, nil
}

// newPool makes the entry of a grant of parent.
func (x *index) newPool(parent *license, g server.Grant) *license {
	p := x.newLicense(g.Pool(&parent.lic))
	p.parent, p.grant = parent, g
	return p
}

// licenseOf is the license of an entry: itself, or a grant's license.
func (l *license) licenseOf() *license {
	if l.parent != nil {
		return l.parent
	}
	return l
}

// syncGrants puts a license's grants in server.SortGrants order and
// lists them in lic.Grants: a new slice each time, so that answers may
// share it (memory never changes one in place).
func (l *license) syncGrants(x *index) {
	var gs []server.Grant
	for _, p := range l.grants {
		gs = append(gs, p.grant)
	}
	server.SortGrants(gs)
	for i := range gs {
		l.grants[i] = x.licenses[gs[i].ID]
	}
	l.lic.Grants = gs
	clear(l.covered) // the grants or their order changed
}

// repool gives a license's grants its settings (after UpdateLicense).
func (l *license) repool() {
	for _, p := range l.grants {
		p.lic = p.grant.Pool(&l.lic)
	}
	for _, p := range l.former {
		p.lic = p.grant.Pool(&l.lic)
	}
}

// pools lists the pools whose history a list of id shows: a license's
// own, then every grant it has had (deleted ones too); a grant's own.
func (l *license) pools() []*license {
	ps := make([]*license, 0, 1+len(l.grants)+len(l.former))
	ps = append(ps, l)
	ps = append(ps, l.grants...)
	return append(ps, l.former...)
}

// loadGrants indexes the grants after the licenses (Open).
func (s *Store) loadGrants(tx *bolt.Tx) error {
	var parents []*license
	err := tx.Bucket(bucketGrants).ForEach(func(_, v []byte) error {
		rec, err := decode[grantRecord](v)
		if err != nil {
			return fmt.Errorf("decode feature grant: %w", err)
		}
		lic := s.idx.licenses[rec.LicenseID]
		if lic == nil || lic.parent != nil {
			// Cannot happen: a grant is created on a license, which stays.
			s.log.Warn("embedded store: feature grant of a missing license", "grant", rec.ID, "license", rec.LicenseID)
			return nil
		}
		p := s.idx.newPool(lic, rec.Grant)
		p.deleted = rec.Deleted || lic.deleted
		s.idx.addLicense(p)
		if p.deleted {
			lic.former = append(lic.former, p)
			return nil
		}
		if len(lic.grants) == 0 {
			parents = append(parents, lic)
		}
		lic.grants = append(lic.grants, p)
		return nil
	})
	for _, lic := range parents {
		lic.syncGrants(s.idx)
	}
	return err
}

// normalizeGrant gives a grant the shape it has after a round trip
// through the database (as normalize does a license).
func normalizeGrant(g server.Grant) server.Grant {
	n, err := decode[server.Grant](encode(g))
	if err != nil {
		panic("embedded: normalize grant: " + err.Error())
	}
	return n
}
