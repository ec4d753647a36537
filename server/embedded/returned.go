package embedded

import (
	"context"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Early return of a borrowed lease (server.License.AllowEarlyReturn): the
// lease ends as released and, in the same transaction, its certificate is
// recorded as returned (bucketReturned, and index.returned in memory, read
// at Open). A returned certificate counts against its license's borrow cap
// until its deadline (index.returnedCount) and stays listed until
// retention removes it (RecordReturnedCertificates), even if the license is
// deleted meanwhile: the certificate could still be used offline.

// returnEarly ends the live borrowed lease r as released and records its
// certificate as returned; a failed write changes nothing.
func (s *Store) returnEarly(r ref, now time.Time) (server.Lease, error) {
	end := s.releasing(r, now)
	l := end.lease
	rc := server.ReturnedCertificate{
		LeaseID: l.ID, TenantID: l.TenantID, LicenseID: l.LicenseID,
		ExpiresAt: l.ExpiresAt, ReturnedAt: now,
	}
	err := s.writeBusy([]ref{r}, func(tx *bolt.Tx) error {
		if _, err := endLease(tx, end); err != nil {
			return err
		}
		return tx.Bucket(bucketReturned).Put([]byte(l.ID), encode(rc))
	})
	if err != nil {
		return server.Lease{}, s.fail("return borrowed lease", err)
	}
	s.idx.remove(r)
	s.idx.returned[l.ID] = rc
	return l, nil
}

// loadReturned reads the returned certificates into memory (Open).
func (s *Store) loadReturned(tx *bolt.Tx) error {
	return tx.Bucket(bucketReturned).ForEach(func(_, v []byte) error {
		rc, err := decode[server.ReturnedCertificate](v)
		if err != nil {
			return err
		}
		s.idx.returned[rc.LeaseID] = rc
		return nil
	})
}

func (s *Store) ReturnedCertificates(_ context.Context, tenantID string) ([]server.ReturnedCertificate, error) {
	s.mu.Lock()
	var out []server.ReturnedCertificate
	for _, rc := range s.idx.returned {
		if rc.TenantID == tenantID {
			out = append(out, rc)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b server.ReturnedCertificate) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return compareStrings(a.LeaseID, b.LeaseID)
	})
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pruneReturned removes at most limit returned certificates whose
// deadline is before before, on disk and then in memory.
func (s *Store) pruneReturned(before time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, rc := range s.idx.returned {
		if len(ids) == limit {
			break
		}
		if rc.ExpiresAt.Before(before) {
			ids = append(ids, id)
		}
	}
	var err error // a batch of none is written too: a failing store says so
	s.unlocked(func() {
		err = s.commit.write(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketReturned)
			for _, id := range ids {
				if err := b.Delete([]byte(id)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return 0, s.fail("prune "+string(server.RecordReturnedCertificates), err)
	}
	for _, id := range ids {
		delete(s.idx.returned, id)
	}
	return len(ids), nil
}
