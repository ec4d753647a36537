package service

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestEachAdminActionIsAudited: every admin action leaves one entry naming
// who did what to which resource.
func TestEachAdminActionIsAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	const actor = "apikey:key_1"
	type want struct {
		tenant, action, resource, id string
		details                      map[string]string
	}
	steps := []struct {
		name string
		do   func(t *testing.T) want
	}{
		{"create license", func(t *testing.T) want {
			l, err := e.svc.CreateLicense(ctx, actor, server.DefaultTenantID, LicenseInput{Seats: 2})
			require.NoError(t, err)
			return want{server.DefaultTenantID, "license.create", "license", l.ID, map[string]string{"seats": "2"}}
		}},
		{"update license", func(t *testing.T) want {
			l := e.license(t, 1)
			_, err := e.svc.UpdateLicense(ctx, actor, server.DefaultTenantID, LicenseInput{ID: l.ID, Seats: 3, Name: "renamed"}, []string{"seats", "name"})
			require.NoError(t, err)
			return want{server.DefaultTenantID, "license.update", "license", l.ID, map[string]string{"field.seats": "changed", "field.name": "changed"}}
		}},
		{"revoke lease", func(t *testing.T) want {
			l := e.license(t, 1)
			g := e.acquire(t, l.Key, "laptop")
			_, err := e.svc.RevokeLease(ctx, actor, server.DefaultTenantID, g.Lease.ID, "left the company")
			require.NoError(t, err)
			return want{server.DefaultTenantID, "lease.revoke", "lease", g.Lease.ID, map[string]string{"license_id": l.ID, "reason": "left the company"}}
		}},
		{"delete license", func(t *testing.T) want {
			l := e.license(t, 1)
			e.acquire(t, l.Key, "laptop")
			n, err := e.svc.DeleteLicense(ctx, actor, server.DefaultTenantID, l.ID)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			return want{server.DefaultTenantID, "license.delete", "license", l.ID, map[string]string{"revoked_leases": "1"}}
		}},
		{"create tenant", func(t *testing.T) want {
			tn, err := e.svc.CreateTenant(ctx, actor, server.Tenant{Name: "Acme"})
			require.NoError(t, err)
			require.NotEmpty(t, tn.ID, "the service names a tenant given none")
			return want{tn.ID, "tenant.create", "tenant", tn.ID, nil}
		}},
		{"create API key", func(t *testing.T) want {
			k, secret, err := e.svc.CreateAPIKey(ctx, actor, server.DefaultTenantID, "ci", server.RoleAdmin)
			require.NoError(t, err)
			require.Equal(t, server.HashSecret(secret), k.SecretHash, "only the secret's hash is kept")
			return want{server.DefaultTenantID, "apikey.create", "api_key", k.ID, map[string]string{"role": "admin"}}
		}},
		{"revoke API key", func(t *testing.T) want {
			k, _, err := e.svc.CreateAPIKey(ctx, actor, server.DefaultTenantID, "ci", server.RoleAdmin)
			require.NoError(t, err)
			_, err = e.svc.RevokeAPIKey(ctx, actor, "", k.ID)
			require.NoError(t, err)
			return want{server.DefaultTenantID, "apikey.revoke", "api_key", k.ID, nil}
		}},
		{"run cleanup", func(t *testing.T) want {
			l := e.license(t, 1)
			e.acquire(t, l.Key, "gone")
			e.clock.Advance(2 * time.Minute) // past the lease's deadline
			run := e.svc.RunCleanup(ctx, actor)
			require.Equal(t, "manual", run.Trigger)
			return want{server.DefaultTenantID, "cleanup.run", "cleanup", "", map[string]string{"expired": "1", "result": run.Result}}
		}},
	}
	for _, step := range steps {
		w := step.do(t)
		entry := e.auditOf(t, w.tenant, w.action, w.id)
		require.Equal(t, actor, entry.Actor, step.name)
		require.Equal(t, w.resource, entry.Resource, step.name)
		require.Equal(t, e.clock.Now(), entry.At, step.name)
		if w.details == nil {
			require.Empty(t, entry.Details, step.name)
		} else {
			require.Equal(t, w.details, entry.Details, step.name)
		}
	}
}
