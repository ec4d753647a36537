package embedded

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// ZombieReport reads only the tenant's cleanup events inside the window:
// they are keyed by tenant and cleanup time. A zero End means no end.
// A license's base pool and each of its features (all its grants of it)
// are ranked apart.
func (s *Store) ZombieReport(_ context.Context, q server.ZombieQuery) (server.ZombieReport, error) {
	q, err := q.WithDefaults()
	if err != nil {
		return server.ZombieReport{}, err
	}
	type day struct {
		zombies  int64
		licenses map[string]struct{}
	}
	var (
		rep      server.ZombieReport
		days     = map[string]*day{}
		perLic   = map[zombiePool]int64{}
		waitMins float64 // sum of minutes from last heartbeat to cleanup
	)
	pfx := prefix(q.TenantID)
	err = s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketCleanupTenant).Cursor()
		for k, v := c.Seek(timeKey(q.TenantID, q.Start, "")); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
			if !q.End.IsZero() && !timeFromTimeKey(k, len(pfx)).Before(q.End) {
				break
			}
			ev, err := decode[server.CleanupEvent](v)
			if err != nil {
				return err
			}
			if q.Feature != "" && ev.Feature != q.Feature {
				continue
			}
			date := ev.CleanedAt.UTC().Format(time.DateOnly)
			d := days[date]
			if d == nil {
				d = &day{licenses: map[string]struct{}{}}
				days[date] = d
			}
			d.zombies++
			lic := server.PoolLicense(ev.LicenseID)
			d.licenses[lic] = struct{}{}
			perLic[zombiePool{lic, ev.Feature}]++
			waitMins += ev.CleanedAt.Sub(ev.LastHeartbeatAt).Minutes()
			rep.Total++
		}

		for p, n := range perLic {
			rep.TopLicenses = append(rep.TopLicenses, server.LicenseZombies{LicenseID: p.license, Feature: p.feature, ZombieCount: n})
		}
		slices.SortFunc(rep.TopLicenses, func(a, b server.LicenseZombies) int {
			return cmp.Or(cmp.Compare(b.ZombieCount, a.ZombieCount), cmp.Compare(a.LicenseID, b.LicenseID), cmp.Compare(a.Feature, b.Feature))
		})
		rep.TopLicenses = rep.TopLicenses[:min(q.TopLimit, len(rep.TopLicenses))]
		for i := range rep.TopLicenses {
			t := &rep.TopLicenses[i]
			n, err := leaseCount(tx, zombiePool{t.LicenseID, t.Feature})
			if err != nil {
				return err
			}
			t.LeaseCount = n
			if t.LeaseCount > 0 {
				t.Percentage = float64(t.ZombieCount) / float64(t.LeaseCount) * 100
			}
			if v := tx.Bucket(bucketLicenses).Get([]byte(t.LicenseID)); v != nil {
				rec, err := decode[licenseRecord](v)
				if err != nil {
					return err
				}
				t.LicenseName = rec.Name
			}
		}
		return nil
	})
	if err != nil {
		return server.ZombieReport{}, s.fail("zombie report", err)
	}

	for date, d := range days {
		rep.Days = append(rep.Days, server.ZombieDay{Date: date, ZombiesCleaned: d.zombies, AffectedLicenses: int64(len(d.licenses))})
	}
	slices.SortFunc(rep.Days, func(a, b server.ZombieDay) int { return cmp.Compare(a.Date, b.Date) })
	if rep.Total > 0 {
		rep.MeanMinutesToCleanup = waitMins / float64(rep.Total)
	}
	return rep, nil
}

// zombiePool is what the zombie report ranks: a license's base pool
// (feature ""), or one of its features.
type zombiePool struct{ license, feature string }

// leaseCount is the number of leases ever acquired of p: of the base
// pool, or of every grant of the feature the license has had.
func leaseCount(tx *bolt.Tx, p zombiePool) (int64, error) {
	counts := tx.Bucket(bucketLeaseCounts)
	if p.feature == "" {
		return int64(bytesUint64(counts.Get([]byte(p.license)))), nil
	}
	var n int64
	pfx := []byte(p.license + ".")
	c := tx.Bucket(bucketGrants).Cursor()
	for k, v := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, v = c.Next() {
		g, err := decode[grantRecord](v)
		if err != nil {
			return 0, err
		}
		if g.Feature == p.feature {
			n += int64(bytesUint64(counts.Get(k)))
		}
	}
	return n, nil
}
