package grpcapi

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

func requireQuota(t *testing.T, err error, quota string, msg ...any) {
	t.Helper()
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonQuotaExceeded, msg...)
	require.Equal(t, quota, errorInfo(st).GetMetadata()["quota"], "the refusal names the quota")
	require.Contains(t, st.Message(), quota)
}

func createLicense(ctx context.Context, e *env, tenant string, seats, overdraft int32) (*seatdv1.License, error) {
	resp, err := e.admin.CreateLicense(ctx, &seatdv1.CreateLicenseRequest{TenantId: tenant, License: &seatdv1.License{
		Name: "quota", Seats: seats, Overdraft: overdraft, LeaseTtl: durationpb.New(time.Minute),
	}})
	return resp.GetLicense(), err
}

func TestLicensesQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.Quotas = Quotas{Licenses: 3} })
	key := e.apiKey(t, "acme")
	ctx := as(t, key)
	var first *seatdv1.License
	for i := range 3 {
		l, err := createLicense(ctx, e, "", 1, 0)
		require.NoError(t, err, "license %d of 3", i)
		first = l
	}
	_, err := createLicense(ctx, e, "", 1, 0)
	requireQuota(t, err, "licenses")

	// Another tenant has its own quota.
	_, err = createLicense(operator(t), e, "", 1, 0)
	require.NoError(t, err, "the default tenant")
	// A deleted license no longer counts.
	_, err = e.admin.DeleteLicense(ctx, &seatdv1.DeleteLicenseRequest{LicenseId: first.GetId()})
	require.NoError(t, err)
	_, err = createLicense(ctx, e, "", 1, 0)
	require.NoError(t, err, "room again after a delete")
}

func TestSeatsQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.Quotas = Quotas{Seats: 10} })
	ctx := operator(t)
	big, err := createLicense(ctx, e, "", 5, 1) // seats and overdraft count
	require.NoError(t, err)
	_, err = createLicense(ctx, e, "", 4, 1)
	requireQuota(t, err, "seats", "6 + 5 > 10")
	small, err := createLicense(ctx, e, "", 3, 1)
	require.NoError(t, err, "6 + 4 = 10")

	update := func(l *seatdv1.License, path string) error {
		_, err := e.admin.UpdateLicense(ctx, &seatdv1.UpdateLicenseRequest{License: l, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{path}}})
		return err
	}
	requireQuota(t, update(&seatdv1.License{Id: small.GetId(), Seats: 4}, "seats"), "seats", "raising seats")
	requireQuota(t, update(&seatdv1.License{Id: small.GetId(), Overdraft: 2}, "overdraft"), "seats", "raising overdraft")
	got, err := e.admin.GetLicense(ctx, &seatdv1.GetLicenseRequest{LicenseId: small.GetId()})
	require.NoError(t, err)
	require.Equal(t, int32(3), got.GetLicense().GetSeats(), "a refused update changes nothing")
	require.NoError(t, update(&seatdv1.License{Id: big.GetId(), Seats: 2}, "seats"), "lowering")
	require.NoError(t, update(&seatdv1.License{Id: small.GetId(), Seats: 6}, "seats"), "3 + 7 = 10")
	require.NoError(t, update(&seatdv1.License{Id: small.GetId(), Name: "renamed"}, "name"), "other fields are not the quota's")
}

func TestSeatsQuotaAllowsLoweringAboveIt(t *testing.T) {
	t.Parallel()
	st := newEnv(t, nil) // no quota yet: fill past 10
	l, err := createLicense(operator(t), st, "", 20, 0)
	require.NoError(t, err)
	e := newEnv(t, func(server.Store) server.Store { return st.store }, func(c *Config) { c.Quotas = Quotas{Seats: 10} })
	_, err = e.admin.UpdateLicense(operator(t), &seatdv1.UpdateLicenseRequest{
		License: &seatdv1.License{Id: l.GetId(), Seats: 15}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
	})
	require.NoError(t, err, "a tenant above its quota (lowered since) may still lower its seats")
}

func TestAPIKeysQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.Quotas = Quotas{APIKeys: 2} })
	e.apiKey(t, "acme")
	create := func() (*seatdv1.CreateApiKeyResponse, error) {
		return e.admin.CreateApiKey(operator(t), &seatdv1.CreateApiKeyRequest{TenantId: "acme", Name: "k"})
	}
	second, err := create()
	require.NoError(t, err)
	_, err = create()
	requireQuota(t, err, "api_keys")
	_, err = e.admin.RevokeApiKey(operator(t), &seatdv1.RevokeApiKeyRequest{ApiKeyId: second.GetApiKey().GetId()})
	require.NoError(t, err)
	_, err = create()
	require.NoError(t, err, "a revoked key no longer counts")
}

// Concurrent creates on one instance cannot overshoot a quota.
func TestQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.Quotas = Quotas{Licenses: 5} })
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ok, over int
	)
	for range 20 {
		wg.Go(func() {
			_, err := createLicense(operator(t), e, "", 1, 0)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
			} else if errorInfo(status.Convert(err)).GetReason() == server.ReasonQuotaExceeded {
				over++
			}
		})
	}
	wg.Wait()
	require.Equal(t, 5, ok)
	require.Equal(t, 15, over)
}

func TestTenantsShowTheirQuotas(t *testing.T) {
	t.Parallel()
	q := Quotas{Licenses: 7, Seats: 70, APIKeys: 3}
	e := newEnv(t, nil, func(c *Config) { c.Quotas = q })
	created, err := e.admin.CreateTenant(operator(t), &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "acme"}})
	require.NoError(t, err)
	want := &seatdv1.TenantQuotas{MaxLicenses: 7, MaxSeats: 70, MaxApiKeys: 3}
	require.Equal(t, want.String(), created.GetTenant().GetQuotas().String())
	list, err := e.admin.ListTenants(operator(t), &seatdv1.ListTenantsRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, list.GetTenants())
	for _, tn := range list.GetTenants() {
		require.Equal(t, want.String(), tn.GetQuotas().String(), tn.GetId())
	}
}

// A client-chosen license key is refused, whether or not it exists in
// another tenant, with the same answer: nothing tells whether a key is
// taken somewhere.
func TestCreateLicenseRefusesClientChosenKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	taken := e.license(t, 1, time.Minute).GetKey() // the default tenant's
	ctx := as(t, e.apiKey(t, "acme"))
	var messages []string
	for _, key := range []string{taken, "slk_never-used-0123456789abcdef", "short"} {
		_, err := e.admin.CreateLicense(ctx, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Seats: 1, Key: key}})
		requireInvalid(t, err, "license.key", key)
		messages = append(messages, status.Convert(err).Message())
	}
	require.Equal(t, messages[0], messages[1], "a taken key and a free one get the same answer")
	require.Equal(t, messages[0], messages[2])

	created, err := createLicense(ctx, e, "", 1, 0)
	require.NoError(t, err)
	require.Regexp(t, `^slk_`, created.GetKey(), "the server makes the key")
	require.NotEqual(t, taken, created.GetKey())
}
