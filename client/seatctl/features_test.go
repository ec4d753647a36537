package seatctl

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// These tests run seatctl's commands against a fake AdminService: what a
// command asks for (flags to request fields and update masks) and how it
// shows the answer. e2e/seatctl_test.go runs them against a real seatd.

// fakeAdmin answers the calls the feature commands make and keeps the
// last request of each; any other call panics (the embedded nil).
type fakeAdmin struct {
	seatdv1.AdminServiceClient
	licenses []*seatdv1.License
	err      error // answered by every call when set
	leases   []*seatdv1.Lease
	usage    []*seatdv1.UsageEvent
	cleanups []*seatdv1.CleanupEvent

	mu       sync.Mutex // seatctl status reads policies concurrently
	requests map[string]proto.Message
}

func (f *fakeAdmin) keep(name string, req proto.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.requests == nil {
		f.requests = map[string]proto.Message{}
	}
	f.requests[name] = req
	return f.err
}

func (f *fakeAdmin) ListLicenses(_ context.Context, req *seatdv1.ListLicensesRequest, _ ...grpc.CallOption) (*seatdv1.ListLicensesResponse, error) {
	return &seatdv1.ListLicensesResponse{Licenses: f.licenses}, f.keep("ListLicenses", req)
}

func (f *fakeAdmin) GetLicense(_ context.Context, req *seatdv1.GetLicenseRequest, _ ...grpc.CallOption) (*seatdv1.GetLicenseResponse, error) {
	if err := f.keep("GetLicense", req); err != nil {
		return nil, err
	}
	for _, l := range f.licenses {
		if l.GetId() == req.GetLicenseId() {
			return &seatdv1.GetLicenseResponse{License: l}, nil
		}
	}
	return nil, status.Error(codes.NotFound, "no license "+req.GetLicenseId())
}

func (f *fakeAdmin) GetCleanupStatus(_ context.Context, req *seatdv1.GetCleanupStatusRequest, _ ...grpc.CallOption) (*seatdv1.GetCleanupStatusResponse, error) {
	return &seatdv1.GetCleanupStatusResponse{InstanceId: "seatd-1", LeaderId: "seatd-1", IsLeader: true}, f.keep("GetCleanupStatus", req)
}

// GetLicensePolicy answers no policy (policyAdmin answers one).
func (f *fakeAdmin) GetLicensePolicy(_ context.Context, req *seatdv1.GetLicensePolicyRequest, _ ...grpc.CallOption) (*seatdv1.GetLicensePolicyResponse, error) {
	return &seatdv1.GetLicensePolicyResponse{Policy: &seatdv1.LicensePolicy{LicenseId: req.GetLicenseId()}}, f.keep("GetLicensePolicy", req)
}

func (f *fakeAdmin) CreateFeatureGrant(_ context.Context, req *seatdv1.CreateFeatureGrantRequest, _ ...grpc.CallOption) (*seatdv1.CreateFeatureGrantResponse, error) {
	gr := proto.Clone(req.GetGrant()).(*seatdv1.FeatureGrant)
	gr.Id, gr.LicenseId = req.GetLicenseId()+".0a1b2c3d", req.GetLicenseId()
	return &seatdv1.CreateFeatureGrantResponse{Grant: gr}, f.keep("CreateFeatureGrant", req)
}

func (f *fakeAdmin) UpdateFeatureGrant(_ context.Context, req *seatdv1.UpdateFeatureGrantRequest, _ ...grpc.CallOption) (*seatdv1.UpdateFeatureGrantResponse, error) {
	return &seatdv1.UpdateFeatureGrantResponse{Grant: req.GetGrant()}, f.keep("UpdateFeatureGrant", req)
}

func (f *fakeAdmin) DeleteFeatureGrant(_ context.Context, req *seatdv1.DeleteFeatureGrantRequest, _ ...grpc.CallOption) (*seatdv1.DeleteFeatureGrantResponse, error) {
	return &seatdv1.DeleteFeatureGrantResponse{RevokedLeases: 2}, f.keep("DeleteFeatureGrant", req)
}

func (f *fakeAdmin) ListLeases(_ context.Context, req *seatdv1.ListLeasesRequest, _ ...grpc.CallOption) (*seatdv1.ListLeasesResponse, error) {
	return &seatdv1.ListLeasesResponse{Leases: f.leases}, f.keep("ListLeases", req)
}

func (f *fakeAdmin) GetUsageReport(_ context.Context, req *seatdv1.GetUsageReportRequest, _ ...grpc.CallOption) (*seatdv1.GetUsageReportResponse, error) {
	return &seatdv1.GetUsageReportResponse{Rows: []*seatdv1.UsageReportRow{
		{LicenseId: "lic_a", Feature: "render", PeakSeats: 2, BucketStart: timestamppb.Now(), Denials: 5,
			DenialsByReason: map[string]int64{"SEATS_EXHAUSTED": 1, "USER_LIMIT": 1, "EXCLUDED": 3}},
	}}, f.keep("GetUsageReport", req)
}

func (f *fakeAdmin) GetZombieReport(_ context.Context, req *seatdv1.GetZombieReportRequest, _ ...grpc.CallOption) (*seatdv1.GetZombieReportResponse, error) {
	return &seatdv1.GetZombieReportResponse{ZombiesTotal: 1, TopLicenses: []*seatdv1.LicenseZombies{
		{LicenseId: "lic_a", LicenseName: "A", Feature: "sim", ZombieCount: 1, LeaseCount: 4, ZombiePercentage: 25},
	}}, f.keep("GetZombieReport", req)
}

func (f *fakeAdmin) ListUsageEvents(_ context.Context, req *seatdv1.ListUsageEventsRequest, _ ...grpc.CallOption) (*seatdv1.ListUsageEventsResponse, error) {
	return &seatdv1.ListUsageEventsResponse{UsageEvents: f.usage}, f.keep("ListUsageEvents", req)
}

func (f *fakeAdmin) ListCleanupEvents(_ context.Context, req *seatdv1.ListCleanupEventsRequest, _ ...grpc.CallOption) (*seatdv1.ListCleanupEventsResponse, error) {
	return &seatdv1.ListCleanupEventsResponse{CleanupEvents: f.cleanups}, f.keep("ListCleanupEvents", req)
}

type result struct {
	out, err string
	code     int
}

// runFake runs seatctl with args against f.
func runFake(t *testing.T, f *fakeAdmin, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	g := &globals{stdout: &out, adminClient: f}
	code := run(g, append([]string{"--key", "test-key"}, args...), &out, &errb)
	return result{out: out.String(), err: errb.String(), code: code}
}

func runOK(t *testing.T, f *fakeAdmin, args ...string) string {
	t.Helper()
	r := runFake(t, f, args...)
	require.Equal(t, ExitOK, r.code, "seatctl %v: %s", args, r.err)
	return r.out
}

// cadLicense is a license with a base pool and three grants: render 2024
// (expiring soon), render 2025 (starting later) and sim (any version).
func cadLicense(now time.Time) *seatdv1.License {
	return &seatdv1.License{
		Id: "lic_cad", Name: "ACME CAD", Seats: 20, SeatsInUse: 3, Active: proto.Bool(true), LeaseTtl: durationpb.New(6 * time.Minute),
		Grants: []*seatdv1.FeatureGrant{
			{Id: "lic_cad.00000001", LicenseId: "lic_cad", Feature: "render", Version: "2024", Seats: 5, SeatsInUse: 4,
				ExpiresAt: timestamppb.New(now.Add(72 * time.Hour))},
			{Id: "lic_cad.00000002", LicenseId: "lic_cad", Feature: "render", Version: "2025", Seats: 5, Overdraft: 1,
				StartsAt: timestamppb.New(now.Add(48 * time.Hour)), ExpiresAt: timestamppb.New(now.Add(400 * 24 * time.Hour))},
			{Id: "lic_cad.00000003", LicenseId: "lic_cad", Feature: "sim", Seats: 2, SeatsInUse: 1,
				MaxBorrowDuration: durationpb.New(72 * time.Hour), MaxBorrowedSeats: 1},
		},
	}
}

func TestGrantsCreateAsksForTheFlagsGiven(t *testing.T) {
	f := &fakeAdmin{}
	out := runOK(t, f, "grants", "create", "lic_cad", "--feature", "render", "--version", "2024.2", "--seats", "5",
		"--overdraft", "1", "--starts-at", "2026-01-01", "--expires-at", "2026-12-31T12:00:00Z",
		"--max-borrow-duration", "72h", "--max-borrowed-seats", "2", "--tenant", "acme")
	req := f.requests["CreateFeatureGrant"].(*seatdv1.CreateFeatureGrantRequest)
	require.Equal(t, "lic_cad", req.GetLicenseId())
	require.Equal(t, "acme", req.GetTenantId())
	want := &seatdv1.FeatureGrant{Feature: "render", Version: "2024.2", Seats: 5, Overdraft: 1,
		StartsAt:          timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		ExpiresAt:         timestamppb.New(time.Date(2026, 12, 31, 12, 0, 0, 0, time.UTC)),
		MaxBorrowDuration: durationpb.New(72 * time.Hour), MaxBorrowedSeats: 2}
	require.True(t, proto.Equal(want, req.GetGrant()), "got %v", req.GetGrant())
	require.Regexp(t, `id\s+lic_cad\.0a1b2c3d\n`, out)
	require.Regexp(t, `feature\s+render\n`, out)
	require.Regexp(t, `max borrow\s+3d \(2 seats\)\n`, out)

	// --max-borrow, as on licenses, is the same flag.
	runOK(t, f, "grants", "create", "lic_cad", "--feature", "sim", "--seats", "0", "--max-borrow", "1h")
	req = f.requests["CreateFeatureGrant"].(*seatdv1.CreateFeatureGrantRequest)
	require.Equal(t, time.Hour, req.GetGrant().GetMaxBorrowDuration().AsDuration())
	require.Zero(t, req.GetGrant().GetSeats())

	// -o json prints the grant as the API gives it.
	var got seatdv1.FeatureGrant
	require.NoError(t, protojson.Unmarshal([]byte(runOK(t, f, "grants", "create", "lic_cad", "--feature", "sim", "--seats", "2", "-o", "json")), &got))
	require.Equal(t, "lic_cad.0a1b2c3d", got.GetId())
}

func TestGrantsCreateRefusesBadFlagsBeforeAsking(t *testing.T) {
	for _, args := range [][]string{
		{"grants", "create", "lic_cad", "--seats", "5"},             // no --feature
		{"grants", "create", "lic_cad", "--feature", "render"},      // no --seats
		{"grants", "create", "--feature", "render", "--seats", "5"}, // no license
		{"grants", "create", "lic_cad", "--feature", "r", "--seats", "1", "--expires-at", "soon"},
		{"grants", "create", "lic_cad", "--feature", "r", "--seats", "1", "--starts-at", "never"}, // never is for update
		{"grants", "create", "lic_cad", "--feature", "r", "--seats", "x"},
	} {
		f := &fakeAdmin{}
		r := runFake(t, f, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.True(t, strings.HasPrefix(r.err, "seatctl: ") && strings.Count(r.err, "\n") == 1, "%v: %q", args, r.err)
		require.Empty(t, f.requests, "%v asked seatd", args)
	}
}

func TestGrantsUpdateMasksOnlyTheFlagsGiven(t *testing.T) {
	f := &fakeAdmin{}
	runOK(t, f, "grants", "update", "lic_cad", "lic_cad.00000001", "--seats", "8")
	req := f.requests["UpdateFeatureGrant"].(*seatdv1.UpdateFeatureGrantRequest)
	require.Equal(t, []string{"seats"}, req.GetUpdateMask().GetPaths())
	require.Equal(t, "lic_cad.00000001", req.GetGrant().GetId())
	require.EqualValues(t, 8, req.GetGrant().GetSeats())

	// The id's last part is enough; "never" clears an instant; an empty
	// version covers every version.
	runOK(t, f, "grants", "update", "lic_cad", "00000002", "--expires-at", "never", "--starts-at", "2027-01-01",
		"--version", "", "--max-borrow-duration", "0s", "--max-borrowed-seats", "0", "--overdraft", "0")
	req = f.requests["UpdateFeatureGrant"].(*seatdv1.UpdateFeatureGrantRequest)
	require.Equal(t, "lic_cad.00000002", req.GetGrant().GetId())
	require.ElementsMatch(t, []string{"version", "overdraft", "starts_at", "expires_at", "max_borrow_duration", "max_borrowed_seats"},
		req.GetUpdateMask().GetPaths())
	require.Nil(t, req.GetGrant().GetExpiresAt())
	require.Equal(t, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), req.GetGrant().GetStartsAt().AsTime())
	require.Empty(t, req.GetGrant().GetVersion())

	// Nothing to change, or a feature (which cannot change): usage errors.
	for _, args := range [][]string{
		{"grants", "update", "lic_cad", "00000002"},
		{"grants", "update", "lic_cad", "00000002", "--feature", "sim"},
		{"grants", "update", "lic_cad", "--seats", "1"},
	} {
		f := &fakeAdmin{}
		r := runFake(t, f, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
		require.Empty(t, f.requests, "%v asked seatd", args)
	}
}

func TestGrantsDelete(t *testing.T) {
	f := &fakeAdmin{}
	out := runOK(t, f, "grants", "rm", "lic_cad", "00000001")
	req := f.requests["DeleteFeatureGrant"].(*seatdv1.DeleteFeatureGrantRequest)
	require.Equal(t, "lic_cad", req.GetLicenseId())
	require.Equal(t, "lic_cad.00000001", req.GetGrantId())
	require.Equal(t, "deleted lic_cad.00000001 (2 live lease(s) revoked)\n", out)
}

// The API's refusals of grants exit as every other refusal does.
func TestGrantRefusalsExitByTheirClass(t *testing.T) {
	refusal := func(c codes.Code, reason, field string) error {
		details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: "seatd.dev"}}
		if field != "" {
			details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field}}})
		}
		st, err := status.New(c, "refused: "+reason).WithDetails(details...)
		require.NoError(t, err)
		return st.Err()
	}
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{refusal(codes.NotFound, "GRANT_NOT_FOUND", ""), ExitNotFound, "(NotFound GRANT_NOT_FOUND)"},
		{refusal(codes.FailedPrecondition, "FEATURE_NOT_LICENSED", ""), ExitRefused, "FEATURE_NOT_LICENSED"},
		{refusal(codes.InvalidArgument, "INVALID_ARGUMENT", "grant.version"), ExitUsage, "[grant.version]"},
		{refusal(codes.ResourceExhausted, "TOO_MANY_GRANTS", ""), ExitRefused, "TOO_MANY_GRANTS"},
	} {
		r := runFake(t, &fakeAdmin{err: tc.err}, "grants", "update", "lic_cad", "00000001", "--version", "x.y")
		require.Equal(t, tc.code, r.code, r.err)
		require.Contains(t, r.err, tc.want)
	}
}

func TestStatusShowsEachFeatureGrantUnderItsLicense(t *testing.T) {
	now := time.Now()
	expired := &seatdv1.License{Id: "lic_old", Name: "Old", Seats: 1, Active: proto.Bool(true), Grants: []*seatdv1.FeatureGrant{
		{Id: "lic_old.00000009", Feature: "render", Version: "2023", Seats: 3, ExpiresAt: timestamppb.New(now.Add(-time.Hour))},
	}}
	plain := &seatdv1.License{Id: "lic_plain", Name: "Plain", Seats: 4, SeatsInUse: 1, Overdraft: 1, Active: proto.Bool(true)}
	f := &fakeAdmin{licenses: []*seatdv1.License{cadLicense(now), expired, plain}}
	out := runOK(t, f, "status")
	lines := strings.Split(out, "\n")
	require.Regexp(t, `^LICENSE\s+NAME\s+IN USE\s+RESERVED\s+LINGERING\s+SEATS\s+WAITING\s+TTL\s+EXPIRES\s+ACTIVE$`, lines[0])
	require.Regexp(t, `^lic_cad\s+ACME CAD\s+3\s+-\s+0\s+20\s+0\s+6m\s+-\s+yes$`, lines[1], "the base pool")
	require.Regexp(t, `^  lic_cad\.00000001\s+render 2024\s+4\s+-\s+0\s+5\s+-\s+-\s+`+regexpTime(now.Add(72*time.Hour))+`\s+yes$`, lines[2])
	require.Regexp(t, `^  lic_cad\.00000002\s+render 2025\s+0\s+-\s+0\s+5 \+1\s+-\s+-\s+\S+ \S+\s+from `+regexpTime(now.Add(48*time.Hour))+`$`, lines[3])
	require.Regexp(t, `^  lic_cad\.00000003\s+sim \(all versions\)\s+1\s+-\s+0\s+2\s+-\s+-\s+-\s+yes$`, lines[4])
	require.Regexp(t, `^lic_old\s+Old\s`, lines[5])
	require.Regexp(t, `^  lic_old\.00000009\s+render 2023\s+0\s+-\s+0\s+3\s.*\sexpired$`, lines[6])
	require.Regexp(t, `^lic_plain\s+Plain\s+1\s+-\s+0\s+4 \+1\s+0\s`, lines[7])
	require.Contains(t, out, "(indented: a license's feature grants")
	require.Contains(t, out, "cleanup leader")

	// -o json: the licenses as the API gives them, grants included.
	var view StatusView
	require.NoError(t, json.Unmarshal([]byte(runOK(t, f, "status", "-o", "json")), &view))
	require.Len(t, view.Licenses, 3)
	var l seatdv1.License
	require.NoError(t, protojson.Unmarshal(view.Licenses[0], &l))
	require.True(t, proto.Equal(cadLicense(now), &l) || len(l.GetGrants()) == 3)
	require.EqualValues(t, 4, l.GetGrants()[0].GetSeatsInUse())

	require.NotContains(t, out, "RESERVED:", "no reservations, no note")

	// Without features, no note.
	require.NotContains(t, runOK(t, &fakeAdmin{licenses: []*seatdv1.License{plain}}, "status"), "indented")
}

// The expiry of a grant shown is its license's when that comes first; an
// inactive license's grants grant nothing.
func TestStatusGrantExpiryAndStateFollowTheLicense(t *testing.T) {
	now := time.Now()
	l := cadLicense(now)
	l.ExpiresAt = timestamppb.New(now.Add(24 * time.Hour))
	l.Active = proto.Bool(false)
	out := runOK(t, &fakeAdmin{licenses: []*seatdv1.License{l}}, "status")
	require.Regexp(t, `lic_cad\.00000001\s+render 2024\s+4\s+-\s+0\s+5\s+-\s+-\s+`+regexpTime(now.Add(24*time.Hour))+`\s+no\n`, out)
	require.Regexp(t, `lic_cad\.00000003\s+sim \(all versions\)\s+1\s+-\s+0\s+2\s+-\s+-\s+`+regexpTime(now.Add(24*time.Hour))+`\s+no\n`, out)
}

func regexpTime(t time.Time) string {
	return strings.ReplaceAll(fmtTime(timestamppb.New(t)), " ", `\s`)
}

func TestLicensesShowTheirFeatures(t *testing.T) {
	now := time.Now()
	f := &fakeAdmin{licenses: []*seatdv1.License{cadLicense(now), {Id: "lic_plain", Name: "Plain", Seats: 1, Active: proto.Bool(true)}}}
	out := runOK(t, f, "licenses", "ls")
	require.Regexp(t, `ACTIVE\s+FEATURES\n`, out)
	require.Regexp(t, `lic_cad\s+ACME CAD\s.*\syes\s+render, sim\n`, out)
	require.Regexp(t, `lic_plain\s+Plain\s.*\syes\s+-\n`, out)

	out = runOK(t, f, "licenses", "get", "lic_cad")
	require.Contains(t, out, "feature grants (the seats above are the base pool):")
	require.Regexp(t, `GRANT\s+FEATURE\s+VERSION\s+IN USE\s+SEATS\s+STARTS\s+EXPIRES\s+MAX BORROW\s+NOW\n`, out)
	require.Regexp(t, `lic_cad\.00000001\s+render\s+2024\s+4\s+5\s+-\s+\S+ \S+\s+off\s+yes\n`, out)
	require.Regexp(t, `lic_cad\.00000002\s+render\s+2025\s+0\s+5 \+1\s+\S+ \S+\s+\S+ \S+\s+off\s+from `, out)
	require.Regexp(t, `lic_cad\.00000003\s+sim\s+all\s+1\s+2\s+-\s+-\s+3d \(1 seat\)\s+yes\n`, out)
	require.NotContains(t, runOK(t, f, "licenses", "get", "lic_plain"), "feature grants")

	// grants ls: the same table; -o json the grants.
	require.Equal(t, out[strings.Index(out, "GRANT"):], runOK(t, f, "grants", "ls", "lic_cad"))
	var view struct{ Grants []json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(runOK(t, f, "grants", "ls", "lic_cad", "-o", "json")), &view))
	require.Len(t, view.Grants, 3)
	require.Contains(t, runOK(t, f, "grants", "ls", "lic_plain"), "(no feature grants)")
	require.Equal(t, ExitNotFound, runFake(t, f, "grants", "ls", "lic_nope").code)
}

func TestLeasesByFeature(t *testing.T) {
	f := &fakeAdmin{leases: []*seatdv1.Lease{
		{Id: "lse_1", LicenseId: "lic_cad", GrantId: "lic_cad.00000001", Feature: "render", Version: "2024.1",
			State: seatdv1.LeaseState_LEASE_STATE_ACTIVE, User: "ann", Hostname: "ws-ann", Fingerprint: "fp-ann"},
		{Id: "lse_2", LicenseId: "lic_cad", State: seatdv1.LeaseState_LEASE_STATE_ACTIVE, User: "bob", Hostname: "ws-bob", Fingerprint: "fp-bob"},
	}}
	out := runOK(t, f, "leases", "ls", "lic_cad", "--feature", "render")
	require.Equal(t, "render", f.requests["ListLeases"].(*seatdv1.ListLeasesRequest).GetFeature())
	require.Regexp(t, `ID\s+STATE\s+BORROWED\s+USER\s+HOST\s+FINGERPRINT\s+FEATURE\s+VERSION\s+ACQUIRED`, out)
	require.Regexp(t, `lse_1\s+active\s+no\s+ann\s+ws-ann\s+fp-ann\s+render\s+2024\.1\s`, out)
	require.Regexp(t, `lse_2\s+active\s+no\s+bob\s+ws-bob\s+fp-bob\s+-\s+-\s`, out)
}

func TestReportsAndExportsByFeature(t *testing.T) {
	f := &fakeAdmin{}
	out := runOK(t, f, "report", "usage", "--feature", "render")
	require.Equal(t, "render", f.requests["GetUsageReport"].(*seatdv1.GetUsageReportRequest).GetFeature())
	require.Contains(t, out, " of feature render, by day")
	require.Regexp(t, `LICENSE\s+FEATURE\s+FROM \(UTC\)\s+PEAK`, out)
	require.Regexp(t, `lic_a\s+render\s+\S+ \S+\s+2\s`, out)
	require.Regexp(t, `DENIED\s+BY POLICY\s+USERS`, out)
	require.Regexp(t, `\s5\s+EXCLUDED 3, USER_LIMIT 1\s`, out, "the policy's denials, most first; the rest were SEATS_EXHAUSTED")
	out = runOK(t, f, "report", "zombies", "--feature", "sim")
	require.Equal(t, "sim", f.requests["GetZombieReport"].(*seatdv1.GetZombieReportRequest).GetFeature())
	require.Contains(t, out, " of feature sim: 1 cleaned")
	require.Regexp(t, `LICENSE\s+NAME\s+FEATURE\s+ZOMBIES\s+LEASES\s+ZOMBIE %\n`, out)
	require.Regexp(t, `lic_a\s+A\s+sim\s+1\s+4\s+25\.0\n`, out)

	ended := timestamppb.Now()
	f.usage = []*seatdv1.UsageEvent{
		{LeaseId: "lse_1", LicenseId: "lic_cad", GrantId: "lic_cad.00000001", Feature: "render", EndedAt: ended},
		{LeaseId: "lse_2", LicenseId: "lic_cad", EndedAt: ended},
		{LeaseId: "lse_3", LicenseId: "lic_cad", GrantId: "lic_cad.00000003", Feature: "sim", EndedAt: ended},
	}
	rows, err := csv.NewReader(strings.NewReader(runOK(t, f, "export", "usage", "--feature", "render"))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"lease_id", "license_id", "end_state", "started_at", "ended_at", "duration_seconds", "grant_id", "feature"}, rows[0])
	require.Len(t, rows, 2)
	require.Equal(t, []string{"lse_1", "lic_cad", "lic_cad.00000001", "render"}, []string{rows[1][0], rows[1][1], rows[1][6], rows[1][7]})
	rows, err = csv.NewReader(strings.NewReader(runOK(t, f, "export", "usage"))).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 4, "every feature's and the base pool's without --feature")
	lines := strings.Split(strings.TrimSpace(runOK(t, f, "export", "usage", "--feature", "sim", "--format", "jsonl")), "\n")
	require.Len(t, lines, 1)
	require.Contains(t, lines[0], `"lse_3"`)

	f.cleanups = []*seatdv1.CleanupEvent{{LeaseId: "lse_4", LicenseId: "lic_cad", GrantId: "lic_cad.00000003", Feature: "sim", CleanupType: "zombie"}}
	rows, err = csv.NewReader(strings.NewReader(runOK(t, f, "export", "cleanup", "--feature", "sim"))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"lse_4", "lic_cad", "zombie", "", "", "", "lic_cad.00000003", "sim"}, rows[1])
	require.Len(t, runOK(t, f, "export", "cleanup", "--feature", "render"), len("lease_id,license_id,cleanup_type,last_heartbeat_at,expires_at,cleaned_at,grant_id,feature\n"))

	r := runFake(t, f, "export", "audit", "--feature", "render")
	require.Equal(t, ExitUsage, r.code)
	require.Contains(t, r.err, "not kept per feature")
}

func (f *fakeAdmin) GetLicenseFile(_ context.Context, req *seatdv1.GetLicenseFileRequest, _ ...grpc.CallOption) (*seatdv1.GetLicenseFileResponse, error) {
	return &seatdv1.GetLicenseFileResponse{LicenseFile: testLicenseFile(7)}, f.keep("GetLicenseFile", req)
}

func (f *fakeAdmin) ReloadLicenseFile(_ context.Context, req *seatdv1.ReloadLicenseFileRequest, _ ...grpc.CallOption) (*seatdv1.ReloadLicenseFileResponse, error) {
	return &seatdv1.ReloadLicenseFileResponse{LicenseFile: testLicenseFile(8), Changed: true}, f.keep("ReloadLicenseFile", req)
}

func testLicenseFile(serial int64) *seatdv1.LicenseFile {
	return &seatdv1.LicenseFile{
		Serial: serial, Customer: "Acme", SiteKeyId: "site-kid", VendorKeyId: "vendor-kid", LicenseCount: 2,
		IssuedAt: timestamppb.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), Sha256: "ab12",
	}
}

// TestLicenseFileCommands: show and reload call their RPCs and print the
// file in force; a refusal is an error naming its reason.
func TestLicenseFileCommands(t *testing.T) {
	t.Parallel()
	f := &fakeAdmin{}
	r := runFake(t, f, "license-file", "show")
	require.Equal(t, 0, r.code, r.err)
	require.Regexp(t, `serial\s+7\n`, r.out)
	require.Regexp(t, `customer\s+Acme\n`, r.out)
	require.Regexp(t, `site key\s+site-kid\n`, r.out)
	require.Contains(t, f.requests, "GetLicenseFile")

	r = runFake(t, f, "license-file", "reload")
	require.Equal(t, 0, r.code, r.err)
	require.Regexp(t, `serial\s+8\n`, r.out)
	require.Regexp(t, `reload\s+reloaded: in force now\n`, r.out)

	r = runFake(t, f, "license-file", "reload", "-o", "json")
	require.Equal(t, 0, r.code, r.err)
	var reloaded struct{ Changed bool }
	require.NoError(t, json.Unmarshal([]byte(r.out), &reloaded), r.out) // protojson's spacing is not stable
	require.True(t, reloaded.Changed, r.out)

	f.err = status.Error(codes.FailedPrecondition, "license file serial 7: made for another site key")
	r = runFake(t, f, "lf", "reload")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.err, "made for another site key")
}
