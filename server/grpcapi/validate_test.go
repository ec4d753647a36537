package grpcapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestBadInputNamesTheField: every bad field of every call gets
// INVALID_ARGUMENT naming it (in the message and a BadRequest violation),
// and changes nothing.
func TestBadInputNamesTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	held := e.acquire(t, lic.GetKey(), "held")
	long := func(n int) string { return strings.Repeat("x", n) }
	tooMany := map[string]string{}
	for i := range server.MaxMetadataEntries + 1 {
		tooMany[fmt.Sprint("k", i)] = "v"
	}
	acquire := func(mut func(r *seatdv1.AcquireSeatRequest)) func(context.Context) error {
		return func(ctx context.Context) error {
			r := &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp"}
			mut(r)
			_, err := e.seats.AcquireSeat(ctx, r)
			return err
		}
	}
	heartbeat := func(id, token string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := e.beats.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: id, LeaseToken: token})
			return err
		}
	}
	release := func(id, token string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := e.seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: id, LeaseToken: token})
			return err
		}
	}
	validLicense := func() *seatdv1.License { return &seatdv1.License{Seats: 2, LeaseTtl: durationpb.New(time.Minute)} }
	create := func(mut func(l *seatdv1.License)) func(context.Context) error {
		return func(ctx context.Context) error {
			l := validLicense()
			mut(l)
			_, err := e.admin.CreateLicense(ctx, &seatdv1.CreateLicenseRequest{License: l})
			return err
		}
	}
	update := func(in *seatdv1.License, paths ...string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := e.admin.UpdateLicense(ctx, &seatdv1.UpdateLicenseRequest{License: in, UpdateMask: &fieldmaskpb.FieldMask{Paths: paths}})
			return err
		}
	}
	withID := func(l *seatdv1.License) *seatdv1.License { l.Id = lic.GetId(); return l }
	zombies := func(r *seatdv1.GetZombieReportRequest) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := e.admin.GetZombieReport(ctx, r)
			return err
		}
	}
	now := time.Now()
	badDuration := &durationpb.Duration{Seconds: 5, Nanos: -1} // signs differ
	badTimestamp := &timestamppb.Timestamp{Seconds: 1, Nanos: 2_000_000_000}

	tests := []struct {
		name  string
		call  func(context.Context) error
		field string
	}{
		// AcquireSeat (and WaitForSeat share the client fields)
		{"no license key", acquire(func(r *seatdv1.AcquireSeatRequest) { r.LicenseKey = "" }), "license_key"},
		{"long license key", acquire(func(r *seatdv1.AcquireSeatRequest) { r.LicenseKey = long(257) }), "license_key"},
		{"no fingerprint", acquire(func(r *seatdv1.AcquireSeatRequest) { r.Fingerprint = "" }), "fingerprint"},
		{"long fingerprint", acquire(func(r *seatdv1.AcquireSeatRequest) { r.Fingerprint = long(server.MaxFingerprintLength + 1) }), "fingerprint"},
		{"long user", acquire(func(r *seatdv1.AcquireSeatRequest) { r.User = long(server.MaxLabelLength + 1) }), "user"},
		{"long hostname", acquire(func(r *seatdv1.AcquireSeatRequest) { r.Hostname = long(server.MaxLabelLength + 1) }), "hostname"},
		{"long idempotency key", acquire(func(r *seatdv1.AcquireSeatRequest) { r.IdempotencyKey = long(server.MaxLabelLength + 1) }), "idempotency_key"},
		{"too much metadata", acquire(func(r *seatdv1.AcquireSeatRequest) { r.Metadata = tooMany }), "metadata"},
		{"empty metadata key", acquire(func(r *seatdv1.AcquireSeatRequest) { r.Metadata = map[string]string{"": "v"} }), "metadata"},
		{"long metadata key", acquire(func(r *seatdv1.AcquireSeatRequest) { r.Metadata = map[string]string{long(65): "v"} }), "metadata"},
		{"long metadata value", acquire(func(r *seatdv1.AcquireSeatRequest) {
			r.Metadata = map[string]string{"os": long(server.MaxMetadataValue + 1)}
		}), `metadata["os"]`},
		{"wait: no fingerprint", func(ctx context.Context) error {
			s, err := e.seats.WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey()})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}, "fingerprint"},
		{"wait: forged queue ticket", func(ctx context.Context) error {
			s, err := e.seats.WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", QueueTicket: "w_../../etc"})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		}, "queue_ticket"},

		// Heartbeat, ReleaseSeat, HeartbeatStream
		{"heartbeat: no lease id", heartbeat("", held.GetLeaseToken()), "lease_id"},
		{"heartbeat: long lease id", heartbeat(long(129), held.GetLeaseToken()), "lease_id"},
		{"heartbeat: no token", heartbeat(held.GetLease().GetId(), ""), "lease_token"},
		{"heartbeat: long token", heartbeat(held.GetLease().GetId(), long(257)), "lease_token"},
		{"release: no lease id", release("", held.GetLeaseToken()), "lease_id"},
		{"release: no token", release(held.GetLease().GetId(), ""), "lease_token"},
		{"stream: no lease id", func(ctx context.Context) error {
			s, err := e.beats.HeartbeatStream(ctx)
			require.NoError(t, err)
			require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseToken: held.GetLeaseToken()}))
			_, err = s.Recv()
			return err
		}, "lease_id"},
		{"stream: another lease", func(ctx context.Context) error {
			s, err := e.beats.HeartbeatStream(ctx)
			require.NoError(t, err)
			require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()}))
			_, err = s.Recv()
			require.NoError(t, err)
			require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: "lse_other"}))
			_, err = s.Recv()
			return err
		}, "lease_id"},

		// CreateLicense
		{"create: no license", func(ctx context.Context) error {
			_, err := e.admin.CreateLicense(ctx, &seatdv1.CreateLicenseRequest{})
			return err
		}, "license"},
		{"create: id given", create(func(l *seatdv1.License) { l.Id = "lic_mine" }), "license.id"},
		{"create: no seats", create(func(l *seatdv1.License) { l.Seats = 0 }), "license.seats"},
		{"create: negative seats", create(func(l *seatdv1.License) { l.Seats = -1 }), "license.seats"},
		{"create: too many seats", create(func(l *seatdv1.License) { l.Seats = server.MaxSeats + 1 }), "license.seats"},
		{"create: negative overdraft", create(func(l *seatdv1.License) { l.Overdraft = -1 }), "license.overdraft"},
		{"create: short TTL", create(func(l *seatdv1.License) { l.LeaseTtl = durationpb.New(999 * time.Millisecond) }), "license.lease_ttl"},
		{"create: long TTL", create(func(l *seatdv1.License) { l.LeaseTtl = durationpb.New(server.MaxLeaseTTL + time.Second) }), "license.lease_ttl"},
		{"create: malformed TTL", create(func(l *seatdv1.License) { l.LeaseTtl = badDuration }), "license.lease_ttl"},
		{"create: negative revival window", create(func(l *seatdv1.License) { l.RevivalWindow = durationpb.New(-time.Second) }), "license.revival_window"},
		{"create: long revival window", create(func(l *seatdv1.License) { l.RevivalWindow = durationpb.New(25 * time.Hour) }), "license.revival_window"},
		{"create: unknown strategy", create(func(l *seatdv1.License) { l.LeasingStrategy = 99 }), "license.leasing_strategy"},
		{"create: expiry in the past", create(func(l *seatdv1.License) { l.ExpiresAt = timestamppb.New(now.Add(-time.Hour)) }), "license.expires_at"},
		{"create: malformed expiry", create(func(l *seatdv1.License) { l.ExpiresAt = badTimestamp }), "license.expires_at"},
		{"create: long name", create(func(l *seatdv1.License) { l.Name = long(server.MaxLabelLength + 1) }), "license.name"},
		{"create: too much metadata", create(func(l *seatdv1.License) { l.Metadata = tooMany }), "license.metadata"},
		{"create: short key", create(func(l *seatdv1.License) { l.Key = "short" }), "license.key"},
		{"create: key with a space", create(func(l *seatdv1.License) { l.Key = "a key with spaces in it" }), "license.key"},
		{"create: bad tenant id", func(ctx context.Context) error {
			_, err := e.admin.CreateLicense(ctx, &seatdv1.CreateLicenseRequest{License: validLicense(), TenantId: "Not_A_Tenant"})
			return err
		}, "tenant_id"},

		// UpdateLicense
		{"update: no license", func(ctx context.Context) error {
			_, err := e.admin.UpdateLicense(ctx, &seatdv1.UpdateLicenseRequest{UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}}})
			return err
		}, "license"},
		{"update: no id", update(&seatdv1.License{Seats: 5}, "seats"), "license.id"},
		{"update: no mask", update(withID(&seatdv1.License{Seats: 5})), "update_mask"},
		{"update: unknown field", update(withID(&seatdv1.License{}), "colour"), "update_mask"},
		{"update: read-only field", update(withID(&seatdv1.License{}), "create_time"), "update_mask"},
		{"update: the key", update(withID(&seatdv1.License{Key: "0123456789abcdefXYZ"}), "key"), "update_mask"},
		{"update: no seats", update(withID(&seatdv1.License{Seats: 0}), "seats"), "license.seats"},
		{"update: one bad field of two", update(withID(&seatdv1.License{Name: "ok", LeaseTtl: durationpb.New(time.Millisecond)}), "name", "lease_ttl"), "license.lease_ttl"},

		// Other admin calls
		{"get: no license id", func(ctx context.Context) error {
			_, err := e.admin.GetLicense(ctx, &seatdv1.GetLicenseRequest{})
			return err
		}, "license_id"},
		{"delete: no license id", func(ctx context.Context) error {
			_, err := e.admin.DeleteLicense(ctx, &seatdv1.DeleteLicenseRequest{})
			return err
		}, "license_id"},
		{"list licenses: negative page size", func(ctx context.Context) error {
			_, err := e.admin.ListLicenses(ctx, &seatdv1.ListLicensesRequest{PageSize: -1})
			return err
		}, "page_size"},
		{"list licenses: huge page size", func(ctx context.Context) error {
			_, err := e.admin.ListLicenses(ctx, &seatdv1.ListLicensesRequest{PageSize: server.MaxPageSize + 1})
			return err
		}, "page_size"},
		{"list leases: no license id", func(ctx context.Context) error {
			_, err := e.admin.ListLeases(ctx, &seatdv1.ListLeasesRequest{})
			return err
		}, "license_id"},
		{"list leases: unknown state", func(ctx context.Context) error {
			_, err := e.admin.ListLeases(ctx, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), State: 99})
			return err
		}, "state"},
		{"revoke: no lease id", func(ctx context.Context) error {
			_, err := e.admin.RevokeLease(ctx, &seatdv1.RevokeLeaseRequest{})
			return err
		}, "lease_id"},
		{"revoke: long reason", func(ctx context.Context) error {
			_, err := e.admin.RevokeLease(ctx, &seatdv1.RevokeLeaseRequest{LeaseId: held.GetLease().GetId(), Reason: long(1025)})
			return err
		}, "reason"},
		{"zombies: start after end", zombies(&seatdv1.GetZombieReportRequest{
			StartTime: timestamppb.New(now), EndTime: timestamppb.New(now.Add(-time.Hour)),
		}), "start_time"},
		{"zombies: malformed start", zombies(&seatdv1.GetZombieReportRequest{StartTime: badTimestamp}), "start_time"},
		{"zombies: malformed end", zombies(&seatdv1.GetZombieReportRequest{EndTime: badTimestamp}), "end_time"},
		{"zombies: top limit", zombies(&seatdv1.GetZombieReportRequest{TopLimit: 101}), "top_limit"},
		{"tenant: bad id", func(ctx context.Context) error {
			_, err := e.admin.CreateTenant(ctx, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "-starts-with-dash"}})
			return err
		}, "tenant.id"},
		{"tenant: long name", func(ctx context.Context) error {
			_, err := e.admin.CreateTenant(ctx, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "acme", Name: long(server.MaxLabelLength + 1)}})
			return err
		}, "tenant.name"},
		{"api key: bad tenant", func(ctx context.Context) error {
			_, err := e.admin.CreateApiKey(ctx, &seatdv1.CreateApiKeyRequest{TenantId: "UPPER"})
			return err
		}, "tenant_id"},
		{"api key: long name", func(ctx context.Context) error {
			_, err := e.admin.CreateApiKey(ctx, &seatdv1.CreateApiKeyRequest{TenantId: server.DefaultTenantID, Name: long(server.MaxLabelLength + 1)})
			return err
		}, "name"},
		{"list api keys: bad tenant", func(ctx context.Context) error {
			_, err := e.admin.ListApiKeys(ctx, &seatdv1.ListApiKeysRequest{TenantId: ""})
			return err
		}, "tenant_id"},
		{"revoke api key: no id", func(ctx context.Context) error {
			_, err := e.admin.RevokeApiKey(ctx, &seatdv1.RevokeApiKeyRequest{})
			return err
		}, "api_key_id"},
	}
	before := snapshot(t, e, lic.GetId())
	for _, tt := range tests {
		requireInvalid(t, tt.call(operator(t)), tt.field, tt.name)
	}
	require.Equal(t, before, snapshot(t, e, lic.GetId()), "bad input changed nothing")
}

// state is what bad input must leave as it was.
type state struct {
	licenses, tenants []string // JSON of each
	leases, keys      int
	held              string
}

func snapshot(t *testing.T, e *env, licenseID string) state {
	t.Helper()
	ctx := operator(t)
	var st state
	ls, err := e.admin.ListLicenses(ctx, &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	for _, l := range ls.GetLicenses() {
		st.licenses = append(st.licenses, mustText(t, l))
	}
	ts, err := e.admin.ListTenants(ctx, &seatdv1.ListTenantsRequest{})
	require.NoError(t, err)
	for _, tn := range ts.GetTenants() {
		st.tenants = append(st.tenants, mustText(t, tn))
	}
	leases, err := e.admin.ListLeases(ctx, &seatdv1.ListLeasesRequest{LicenseId: licenseID})
	require.NoError(t, err)
	st.leases = len(leases.GetLeases())
	for _, l := range leases.GetLeases() {
		st.held += l.GetId() + " " + l.GetState().String() + ";"
	}
	keys, err := e.admin.ListApiKeys(ctx, &seatdv1.ListApiKeysRequest{TenantId: server.DefaultTenantID})
	require.NoError(t, err)
	st.keys = len(keys.GetApiKeys())
	return st
}

func mustText(t *testing.T, m proto.Message) string {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// TestMaxLenRefusesInvalidUTF8: proto3 clients cannot send it, but the
// check does not rely on that.
func TestMaxLenRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	err := maxLen("user", "caf\xe9", 10)
	require.Equal(t, server.EINVALID, server.ErrorCode(err))
	var e *server.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "user", e.Field)
	require.NoError(t, maxLen("user", "café", 10))
	require.Error(t, maxLen("user", strings.Repeat("é", 6), 10), "the bound is in bytes")
}

// TestTenantIDs: the ids an operator may name.
func TestTenantIDs(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"default", "acme", "a", "0", "acme-2", strings.Repeat("a", 63)} {
		require.NoError(t, validTenantID("tenant_id", ok), ok)
	}
	for _, bad := range []string{"", "-acme", "Acme", "acme_2", "acme 2", "acme/..", strings.Repeat("a", 64), "ä"} {
		require.Error(t, validTenantID("tenant_id", bad), bad)
	}
}
