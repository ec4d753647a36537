package service

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// requireQuota checks a refusal names the quota, as the error table and
// clients read it.
func requireQuota(t *testing.T, err error, quota string, msg string) {
	t.Helper()
	require.Equal(t, server.EEXHAUSTED, server.ErrorCode(err), msg)
	require.Equal(t, server.ReasonQuotaExceeded, server.ErrorReason(err), msg)
	var e *server.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, quota, e.Metadata["quota"], msg)
	require.Contains(t, e.Message, quota, msg)
}

// licenses returns the default tenant's licenses.
func (e *env) licenses(t *testing.T) []server.License {
	t.Helper()
	vs, _, err := e.svc.ListLicenses(t.Context(), server.DefaultTenantID, server.Page{Size: server.MaxPageSize})
	require.NoError(t, err)
	ls := make([]server.License, len(vs))
	for i, v := range vs {
		ls[i] = v.License
	}
	return ls
}

func TestLicensesQuotaRefusesAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Quotas = Quotas{Licenses: 2} })
	e.license(t, 1)
	e.license(t, 1)
	auditBefore := len(e.audit(t, server.DefaultTenantID))

	_, err := e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{Seats: 1})
	requireQuota(t, err, "licenses", "a third license")
	require.Len(t, e.licenses(t), 2, "no license created")
	require.Len(t, e.audit(t, server.DefaultTenantID), auditBefore, "nothing audited")
}

func TestSeatsQuotaRefusesAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Quotas = Quotas{Seats: 10} })
	l := e.license(t, 6)
	auditBefore := len(e.audit(t, server.DefaultTenantID))

	_, err := e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{Seats: 4, Overdraft: 1})
	requireQuota(t, err, "seats", "6 + 5 > 10: overdraft counts")
	_, err = e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{ID: l.ID, Seats: 11}, []string{"seats"})
	requireQuota(t, err, "seats", "raising one license past it")

	ls := e.licenses(t)
	require.Len(t, ls, 1)
	require.Equal(t, 6, ls[0].Seats, "a refused update changes nothing")
	require.Len(t, e.audit(t, server.DefaultTenantID), auditBefore, "nothing audited")

	_, err = e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{ID: l.ID, Seats: 10}, []string{"seats"})
	require.NoError(t, err, "up to the quota")
}

func TestAPIKeysQuotaRefusesAndChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Quotas = Quotas{APIKeys: 1} })
	first, _, err := e.svc.CreateAPIKey(t.Context(), "operator", server.DefaultTenantID, "one", server.RoleAdmin)
	require.NoError(t, err)

	_, _, err = e.svc.CreateAPIKey(t.Context(), "operator", server.DefaultTenantID, "two", server.RoleAdmin)
	requireQuota(t, err, "api_keys", "a second key")
	ks, _, err := e.svc.ListAPIKeys(t.Context(), server.DefaultTenantID, server.Page{})
	require.NoError(t, err)
	require.Len(t, ks, 1, "no key created")

	_, err = e.svc.RevokeAPIKey(t.Context(), "operator", "", first.ID)
	require.NoError(t, err)
	_, _, err = e.svc.CreateAPIKey(t.Context(), "operator", server.DefaultTenantID, "two", server.RoleAdmin)
	require.NoError(t, err, "a revoked key no longer counts")
}

// Concurrent creates on one instance cannot overshoot a quota.
func TestLicensesQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Quotas = Quotas{Licenses: 3} })
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		refused int
	)
	ttl := time.Minute
	for range 10 {
		wg.Go(func() {
			_, err := e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{Seats: 1, LeaseTTL: &ttl})
			if server.ErrorReason(err) == server.ReasonQuotaExceeded {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, e.licenses(t), 3)
	require.Equal(t, 7, refused)
}
