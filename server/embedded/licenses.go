package embedded

import (
	"context"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

func (s *Store) CreateLicense(_ context.Context, l server.License) (server.License, error) {
	l.Grants = nil // CreateGrant adds them
	l.Policy = nil // SetPolicy sets it, against the tenant's groups
	l = normalize(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.idx.keys[l.Key]; taken {
		return server.License{}, &server.Error{
			Code: server.ECONFLICT, Reason: server.ReasonAlreadyExists,
			Field: "license.key", Message: "license key already exists",
		}
	}
	if _, taken := s.idx.licenses[l.ID]; taken {
		return server.License{}, server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "license already exists")
	}
	// Reserve id and key in memory so that a concurrent create of the same
	// key fails at once; acquisitions wait until the write settles.
	lic := s.idx.newLicense(l)
	lic.creating = true
	s.idx.addLicense(lic)

	created := server.EventOfLicense(server.EventLicenseCreated, &l, l.CreatedAt)
	var err error
	s.unlocked(func() {
		err = s.commit.write(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketTenants).Get([]byte(l.TenantID)) == nil {
				return server.ErrTenantNotFound
			}
			if err := putEvent(tx, created); err != nil {
				return err
			}
			return putAll(
				put{tx.Bucket(bucketLicenses), []byte(l.ID), encode(licenseToStore(l, false))},
				put{writable(tx, bucketLicensesTenant), timeKey(l.TenantID, l.CreatedAt, l.ID), nil},
			)
		})
	})
	lic.creating = false
	s.idle.Broadcast()
	if err != nil {
		s.idx.removeLicense(lic)
		return server.License{}, s.fail("create license", err)
	}
	return cloneLicense(l), nil
}

func (s *Store) GetLicense(_ context.Context, tenantID, id string) (server.License, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, err := s.license(tenantID, id)
	if err != nil {
		return server.License{}, err
	}
	return readLicense(lic.lic), nil
}

func (s *Store) LicenseByKey(_ context.Context, key string) (server.License, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic := s.idx.keys[key]
	if lic == nil || lic.creating || lic.deleted {
		return server.License{}, server.ErrLicenseNotFound
	}
	return readLicense(lic.lic), nil
}

func (s *Store) ListLicenses(_ context.Context, tenantID string, p server.Page) ([]server.License, string, error) {
	var out []server.License
	var next string
	pfx := prefix(tenantID)
	err := s.view(func(tx *bolt.Tx) error {
		licenses := tx.Bucket(bucketLicenses)
		var err error
		out, next, err = scanPage(tx.Bucket(bucketLicensesTenant).Cursor(), pfx, p, false, func(k, _ []byte) (server.License, bool, error) {
			rec, err := decode[licenseRecord](licenses.Get([]byte(idFromTimeKey(k, len(pfx)))))
			return rec.License, err == nil && !rec.Deleted, err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail("list licenses", err)
	}
	// Grants: from memory (their records are apart).
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		if lic := s.idx.licenses[out[i].ID]; lic != nil {
			out[i].Grants = slices.Clone(lic.lic.Grants)
		}
	}
	return out, next, nil
}

func (s *Store) UpdateLicense(_ context.Context, tenantID, id string, update func(*server.License) error) (server.License, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, err := s.idleLicense(tenantID, id)
	if err != nil {
		return server.License{}, err
	}
	// Acquisitions on the license wait until the new version is stored, so
	// none is judged against a limit that is about to change.
	lic.busy = true
	defer func() {
		lic.busy = false
		s.idle.Broadcast()
	}()
	cur := lic.lic
	next := cloneLicense(cur)
	s.unlocked(func() {
		// update is the caller's code: never run it under the store's lock.
		if err = update(&next); err != nil {
			return
		}
		next.ID, next.TenantID, next.Key, next.CreatedAt = cur.ID, cur.TenantID, cur.Key, cur.CreatedAt
		next.UpdatedAt = s.now()
		next.Grants = nil        // UpdateGrant changes those
		next.Policy = cur.Policy // SetPolicy and PutGroup change it
		// Its policy must stay valid (seats under the reservations).
		changed := next
		changed.Grants = cur.Grants
		if err = cur.Policy.CheckChange(&cur, &changed); err != nil {
			return
		}
		next = normalize(next)
		updated := server.EventOfLicenseChange(server.ChangeSettings, &next, nil, next.UpdatedAt)
		err = s.commit.write(func(tx *bolt.Tx) error {
			if err := putEvent(tx, updated); err != nil {
				return err
			}
			return tx.Bucket(bucketLicenses).Put([]byte(id), encode(licenseToStore(next, false)))
		})
		if err != nil {
			err = s.fail("update license", err)
		}
	})
	if err != nil {
		return server.License{}, err
	}
	next.Grants = cur.Grants
	lic.lic = next
	lic.repool() // its grants' pools take its settings at once
	return cloneLicense(next), nil
}

func (s *Store) DeleteLicense(_ context.Context, tenantID, id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lic, err := s.idleLicense(tenantID, id)
	if err != nil {
		return 0, err
	}
	defer s.hold(lic)() // no new acquisitions
	rec := licenseToStore(lic.lic, true)
	grants := make([]grantRecord, len(lic.grants))
	for i, p := range lic.grants {
		grants[i] = grantRecord{Grant: p.grant, Deleted: true}
	}
	deleted := server.EventOfLicense(server.EventLicenseDeleted, &lic.lic, s.now())
	revoked, err := s.revokeAll(lic.pools(), "license deleted", func(tx *bolt.Tx) error {
		if err := putEvent(tx, deleted); err != nil {
			return err
		}
		for _, g := range grants {
			if err := tx.Bucket(bucketGrants).Put([]byte(g.ID), encode(g)); err != nil {
				return err
			}
		}
		// History keeps the record; listings and the key index drop it.
		if err := tx.Bucket(bucketLicensesTenant).Delete(timeKey(rec.TenantID, rec.CreatedAt, rec.ID)); err != nil {
			return err
		}
		return tx.Bucket(bucketLicenses).Put([]byte(id), encode(rec))
	})
	if err != nil {
		return 0, s.fail("delete license", err)
	}
	for _, p := range lic.grants {
		p.deleted = true
	}
	lic.former = append(lic.former, lic.grants...)
	lic.grants = nil
	lic.syncGrants(s.idx)
	lic.deleted = true
	delete(s.idx.keys, lic.lic.Key)
	delete(s.idx.policied[lic.lic.TenantID], lic)
	return revoked, nil
}

// license finds a visible license of the tenant. Call with s.mu held.
func (s *Store) license(tenantID, id string) (*license, error) {
	lic := s.idx.licenses[id]
	if lic == nil || lic.parent != nil || lic.deleted || lic.creating || lic.lic.TenantID != tenantID {
		return nil, server.ErrLicenseNotFound
	}
	return lic, nil
}

// idleLicense is license, after waiting out any update or delete in flight.
func (s *Store) idleLicense(tenantID, id string) (*license, error) {
	for {
		lic, err := s.license(tenantID, id)
		if err != nil || !lic.busy {
			return lic, err
		}
		s.wait()
	}
}

func (s *Store) anyBusy(rs []ref) bool {
	for _, r := range rs {
		if s.idx.slots.at(r).busy() {
			return true
		}
	}
	return false
}

// unlocked runs f with s.mu released: for database I/O, which must never
// run under the lock.
func (s *Store) unlocked(f func()) {
	s.mu.Unlock()
	defer s.mu.Lock()
	f()
}
