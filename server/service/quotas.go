package service

import (
	"context"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"

	"github.com/seatd/seatd/server"
)

// Quotas bound what one tenant may hold, so that one API key cannot fill
// the store. 0: no quota.
type Quotas struct {
	Licenses int64 // licenses not deleted
	Seats    int64 // seats + overdraft, summed over the tenant's licenses
	APIKeys  int64 // API keys not revoked
	// SigningKeys bounds the tenant's published lease-signing keys (its
	// JWKS: the next key, the key that signs and the retired keys still
	// published): RotateSigningKey refuses a rotation that would publish
	// more. A retired key stays published for the certificate lifetime
	// (30 days) and a minute, so the default allows 10 rotations in any
	// 30 days.
	SigningKeys int64
}

// DefaultQuotas are generous but finite (the daemon's flags).
var DefaultQuotas = Quotas{Licenses: 10_000, Seats: 1_000_000, APIKeys: 100, SigningKeys: 12}

func quotaExceeded(name string, limit int64) error {
	return &server.Error{
		Code: server.EEXHAUSTED, Reason: server.ReasonQuotaExceeded,
		Message:  fmt.Sprintf("the tenant's %s quota (%d) would be exceeded", name, limit),
		Metadata: map[string]string{"quota": name, "limit": strconv.FormatInt(limit, 10)},
	}
}

// quotaLocks serialize, per tenant and within this instance, a quota's
// count and the create it allows, so that concurrent creates on one
// instance cannot overshoot. Across instances (distributed mode) they can,
// by at most one create per instance racing on the same tenant: a quota
// bounds runaway growth, not a bill, and the next create after it is
// refused, so that small overshoot is accepted rather than a lock in
// PostgreSQL for every create.
type quotaLocks struct {
	seed  maphash.Seed
	locks [64]sync.Mutex
}

func newQuotaLocks() *quotaLocks { return &quotaLocks{seed: maphash.MakeSeed()} }

func (q *quotaLocks) lock(tenant string) func() {
	m := &q.locks[maphash.String(q.seed, tenant)%uint64(len(q.locks))]
	m.Lock()
	return m.Unlock
}

// seatUsage counts the tenant's licenses and sums their seat limits and
// their grants' (a grant sells seats as a license does), leaving out the
// pool except names: a license's base pool (one being updated; the
// license is then not counted either) or a grant. It reads every license
// of the tenant, at most the licenses quota of them (a page of
// MaxPageSize at a time): admin calls only.
func (s *Service) seatUsage(ctx context.Context, tenant, except string) (count, seats int64, err error) {
	page := server.Page{Size: server.MaxPageSize}
	for {
		ls, next, err := s.store.ListLicenses(ctx, tenant, page)
		if err != nil {
			return 0, 0, err
		}
		for _, l := range ls {
			if l.ID != except {
				count++
				seats += int64(l.SeatLimit())
			}
			for _, g := range l.Grants {
				if g.ID != except {
					seats += int64(g.SeatLimit())
				}
			}
		}
		if next == "" {
			return count, seats, nil
		}
		page.Token = next
	}
}

// checkLicenseQuotas refuses a new license that would take the tenant past
// its licenses or seats quota.
func (s *Service) checkLicenseQuotas(ctx context.Context, l server.License) error {
	q := s.quotas
	if q.Licenses <= 0 && q.Seats <= 0 {
		return nil
	}
	count, seats, err := s.seatUsage(ctx, l.TenantID, l.ID)
	if err != nil {
		return err
	}
	if q.Licenses > 0 && count+1 > q.Licenses {
		return quotaExceeded("licenses", q.Licenses)
	}
	if q.Seats > 0 && seats+int64(l.SeatLimit()) > q.Seats {
		return quotaExceeded("seats", q.Seats)
	}
	return nil
}

// checkAPIKeyQuota refuses another API key for a tenant at its quota.
func (s *Service) checkAPIKeyQuota(ctx context.Context, tenant string) error {
	if s.quotas.APIKeys <= 0 {
		return nil
	}
	var active int64
	page := server.Page{Size: server.MaxPageSize}
	for {
		ks, next, err := s.store.ListAPIKeys(ctx, tenant, page)
		if err != nil {
			return err
		}
		for _, k := range ks {
			if k.RevokedAt.IsZero() {
				active++
			}
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	if active+1 > s.quotas.APIKeys {
		return quotaExceeded("api_keys", s.quotas.APIKeys)
	}
	return nil
}
