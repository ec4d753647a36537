package grpcapi

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// placeholder stands in a request for a bad string of the same length, put
// into the marshalled bytes: no marshaller sends invalid UTF-8.
const placeholder = "~^~^"

// badStrings break the text rule, each as long as placeholder.
var badStrings = map[string]string{
	"NUL":          "a\x00bc",
	"C0 control":   "a\x1bbc",
	"newline":      "a\nbc",
	"tab":          "a\tbc",
	"DEL":          "a\x7fbc",
	"C1 control":   "a\u0085b",
	"invalid UTF8": "a\xffbc",
	"lone surrog.": "\xed\xa0\x80a", // UTF-16 surrogate, not UTF-8
}

// stringFieldCase is a request of one method with placeholder in one string
// field, and the path the refusal must name.
type stringFieldCase struct {
	method string
	admin  bool
	req    proto.Message
	field  string
}

func stringFieldCases(lic *seatdv1.License, held *seatdv1.AcquireSeatResponse) []stringFieldCase {
	const p = placeholder
	id, token, key := held.GetLease().GetId(), held.GetLeaseToken(), lic.GetKey()
	acquire := func(mut func(*seatdv1.AcquireSeatRequest)) *seatdv1.AcquireSeatRequest {
		r := &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "fp-new", User: "ann", Hostname: "h1", Metadata: map[string]string{"os": "linux"}}
		mut(r)
		return r
	}
	license := func(mut func(*seatdv1.License)) *seatdv1.License {
		l := &seatdv1.License{Name: "new", Seats: 2, LeaseTtl: durationpb.New(time.Minute), Metadata: map[string]string{"team": "a"}}
		mut(l)
		return l
	}
	const seat, beat, admin = "/seatd.v1.SeatService/", "/seatd.v1.HeartbeatService/", "/seatd.v1.AdminService/"
	return []stringFieldCase{
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.LicenseKey = p }), "license_key"},
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.Fingerprint = p }), "fingerprint"},
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.User = p }), "user"},
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.Hostname = p }), "hostname"},
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.IdempotencyKey = p }), "idempotency_key"},
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.Metadata = map[string]string{p: "v"} }), "metadata"},
		{seat + "AcquireSeat", false, acquire(func(r *seatdv1.AcquireSeatRequest) { r.Metadata["os"] = p }), `metadata["os"]`},
		{seat + "WaitForSeat", false, &seatdv1.WaitForSeatRequest{LicenseKey: key, Fingerprint: p}, "fingerprint"},
		{seat + "WaitForSeat", false, &seatdv1.WaitForSeatRequest{LicenseKey: key, Fingerprint: "fp", QueueTicket: p}, "queue_ticket"},
		{seat + "ReleaseSeat", false, &seatdv1.ReleaseSeatRequest{LeaseId: p, LeaseToken: token}, "lease_id"},
		{beat + "Heartbeat", false, &seatdv1.HeartbeatRequest{LeaseId: p, LeaseToken: token}, "lease_id"},
		{beat + "Heartbeat", false, &seatdv1.HeartbeatRequest{LeaseId: id, LeaseToken: p}, "lease_token"},
		{beat + "HeartbeatStream", false, &seatdv1.HeartbeatStreamRequest{LeaseId: p, LeaseToken: token}, "lease_id"},
		{admin + "CreateLicense", true, &seatdv1.CreateLicenseRequest{License: license(func(l *seatdv1.License) { l.Name = p })}, "license.name"},
		{admin + "CreateLicense", true, &seatdv1.CreateLicenseRequest{License: license(func(l *seatdv1.License) { l.Key = p })}, "license.key"},
		{admin + "CreateLicense", true, &seatdv1.CreateLicenseRequest{License: license(func(l *seatdv1.License) { l.Metadata = map[string]string{p: "v"} })}, "license.metadata"},
		{admin + "CreateLicense", true, &seatdv1.CreateLicenseRequest{License: license(func(l *seatdv1.License) { l.Metadata["team"] = p })}, `license.metadata["team"]`},
		{admin + "CreateLicense", true, &seatdv1.CreateLicenseRequest{License: license(func(*seatdv1.License) {}), TenantId: p}, "tenant_id"},
		{admin + "UpdateLicense", true, &seatdv1.UpdateLicenseRequest{
			License: &seatdv1.License{Id: lic.GetId(), Name: "n"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name", p}},
		}, "update_mask.paths[1]"},
		{admin + "UpdateLicense", true, &seatdv1.UpdateLicenseRequest{
			License: &seatdv1.License{Id: lic.GetId(), Name: p}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}},
		}, "license.name"},
		{admin + "GetLicense", true, &seatdv1.GetLicenseRequest{LicenseId: p}, "license_id"},
		{admin + "DeleteLicense", true, &seatdv1.DeleteLicenseRequest{LicenseId: p}, "license_id"},
		{admin + "ListLicenses", true, &seatdv1.ListLicensesRequest{PageToken: p}, "page_token"},
		{admin + "ListLeases", true, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), PageToken: p}, "page_token"},
		{admin + "RevokeLease", true, &seatdv1.RevokeLeaseRequest{LeaseId: id, Reason: p}, "reason"},
		{admin + "CreateTenant", true, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "t-new", Name: p}}, "tenant.name"},
		{admin + "CreateApiKey", true, &seatdv1.CreateApiKeyRequest{TenantId: server.DefaultTenantID, Name: p}, "name"},
		{admin + "ListTenants", true, &seatdv1.ListTenantsRequest{PageToken: p}, "page_token"},
		{admin + "RevokeApiKey", true, &seatdv1.RevokeApiKeyRequest{ApiKeyId: p}, "api_key_id"},
	}
}

// withBad marshals req and puts bad where placeholder was.
func withBad(t *testing.T, req proto.Message, bad string) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	require.NoError(t, err)
	require.Equal(t, 1, bytes.Count(b, []byte(placeholder)), "one placeholder in %v", req)
	require.Len(t, bad, len(placeholder))
	return bytes.Replace(b, []byte(placeholder), []byte(bad), 1)
}

// snapshot is what the store holds, as the admin API lists it.
func (e *env) snapshot(t *testing.T, lic *seatdv1.License) []proto.Message {
	t.Helper()
	ctx := operator(t)
	licenses, err := e.admin.ListLicenses(ctx, &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	leases, err := e.admin.ListLeases(ctx, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	tenants, err := e.admin.ListTenants(ctx, &seatdv1.ListTenantsRequest{})
	require.NoError(t, err)
	keys, err := e.admin.ListApiKeys(ctx, &seatdv1.ListApiKeysRequest{TenantId: server.DefaultTenantID})
	require.NoError(t, err)
	return []proto.Message{licenses, leases, tenants, keys}
}

func requireSameStore(t *testing.T, before, after []proto.Message) {
	t.Helper()
	for i := range before {
		require.True(t, proto.Equal(before[i], after[i]), "the store changed:\nbefore %v\nafter  %v", before[i], after[i])
	}
}

// TestEveryStringKeepsTheRule: a NUL, any other control character or a
// string that is not UTF-8, in any string field of any call (nested, in a
// list, a map key or value), sent over gRPC as a client would, gets
// INVALID_ARGUMENT naming the field, changes nothing and logs nothing.
func TestEveryStringKeepsTheRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	held := e.acquire(t, lic.GetKey(), "held")
	before := e.snapshot(t, lic)
	logged := len(e.logs.String())

	for _, c := range stringFieldCases(lic, held) {
		for what, bad := range badStrings {
			ctx := t.Context()
			if c.admin {
				ctx = operator(t)
			}
			err := e.callRaw(ctx, t, c.method, withBad(t, c.req, bad))
			requireInvalid(t, err, c.field, "%s %s with %s", c.method, c.field, what)
			require.NotContains(t, status.Convert(err).Message(), bad, "the bad value is not echoed")
		}
	}
	requireSameStore(t, before, e.snapshot(t, lic))
	require.Equal(t, logged, len(e.logs.String()), "refusals log nothing:\n%s", e.logs.String()[logged:])
}

// TestHeartbeatStreamChecksEveryMessage: a bad message later in a stream
// ends the stream with INVALID_ARGUMENT, as a bad first message does.
func TestHeartbeatStreamChecksEveryMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	held := e.acquire(t, lic.GetKey(), "held")
	s, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()}))
	_, err = s.Recv()
	require.NoError(t, err)
	require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseToken: "tok\x00"}))
	_, err = s.Recv()
	requireInvalid(t, err, "lease_token")
}

// TestMalformedRequest: bytes that are not the method's message, unary or
// streaming, get INVALID_ARGUMENT / MALFORMED_REQUEST (not INTERNAL with the
// decoder's words), change nothing and log nothing; a client cannot forge
// the codec's mark to name a field.
func TestMalformedRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	held := e.acquire(t, lic.GetKey(), "held")
	before := e.snapshot(t, lic)
	logged := len(e.logs.String())

	good, err := proto.Marshal(&seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp-new", Metadata: map[string]string{"os": "linux"}})
	require.NoError(t, err)
	bodies := map[string][]byte{
		"garbage":             {0xff, 0xff, 0xff, 0xff, 0xff},
		"truncated":           good[:len(good)-3],
		"field number zero":   append([]byte(malformedMark), "lease_id"...),
		"length past the end": protowire.AppendTag(nil, 2, protowire.BytesType), // then no length
		"wrong wire type":     protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 1),
	}
	methods := map[string]bool{
		"/seatd.v1.SeatService/AcquireSeat": false, "/seatd.v1.SeatService/ReleaseSeat": false,
		"/seatd.v1.SeatService/WaitForSeat": false, "/seatd.v1.HeartbeatService/Heartbeat": false,
		"/seatd.v1.HeartbeatService/HeartbeatStream": false,
		"/seatd.v1.AdminService/CreateLicense":       true, "/seatd.v1.AdminService/RevokeLease": true,
	}
	for method, admin := range methods {
		for what, body := range bodies {
			ctx := t.Context()
			if admin {
				ctx = operator(t)
			}
			err := e.callRaw(ctx, t, method, body)
			st := requireStatus(t, err, codes.InvalidArgument, server.ReasonMalformedRequest, "%s: %s", method, what)
			require.Nil(t, badRequest(st), "%s: %s: no field to name", method, what)
			require.NotContains(t, st.Message(), "proto", "%s: %s: no decoder detail", method, what)
		}
	}
	_ = held
	requireSameStore(t, before, e.snapshot(t, lic))
	require.Equal(t, logged, len(e.logs.String()), "refusals log nothing:\n%s", e.logs.String()[logged:])
}

// TestUnknownFieldsStillAccepted: the mark is not "any unknown field": a
// newer client's extra fields are ignored as before.
func TestUnknownFieldsStillAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	held := e.acquire(t, lic.GetKey(), "held")
	body, err := proto.Marshal(&seatdv1.HeartbeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()})
	require.NoError(t, err)
	body = protowire.AppendVarint(protowire.AppendTag(body, 99, protowire.VarintType), 7)
	require.NoError(t, e.callRaw(t.Context(), t, "/seatd.v1.HeartbeatService/Heartbeat", body))
}

// TestCheckRequestPaths: the paths and rules of checkRequest itself, on
// messages no client could marshal (strings that are not UTF-8) and on
// what must pass (any printable Unicode).
func TestCheckRequestPaths(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxRequestString+1)
	refused := []struct {
		req   proto.Message
		field string
	}{
		{&seatdv1.AcquireSeatRequest{Fingerprint: "\xff"}, "fingerprint"},
		{&seatdv1.AcquireSeatRequest{Fingerprint: "fp", User: long}, "user"},
		{&seatdv1.AcquireSeatRequest{Metadata: map[string]string{"a\"b": "\x00"}}, `metadata["a\"b"]`},
		{&seatdv1.AcquireSeatRequest{Metadata: map[string]string{"\xff": "v"}}, "metadata"},
		{&seatdv1.AcquireSeatRequest{Metadata: map[string]string{long: "v"}}, "metadata"},
		{&seatdv1.CreateLicenseRequest{License: &seatdv1.License{Metadata: map[string]string{"k": "\u009f"}}}, `license.metadata["k"]`},
		{&seatdv1.UpdateLicenseRequest{UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"a", "b", "\x7f"}}}, "update_mask.paths[2]"},
		{&seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Name: "\r"}}, "tenant.name"},
	}
	for _, c := range refused {
		err := checkRequest(c.req)
		require.Equal(t, server.EINVALID, server.ErrorCode(err), "%v", c.req)
		var se *server.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, c.field, se.Field, "%v", c.req)
	}
	for _, ok := range []proto.Message{
		&seatdv1.AcquireSeatRequest{LicenseKey: "k", Fingerprint: "Zürich ☃ 😀 \u00a0 日本", Metadata: map[string]string{"ключ": "значение"}},
		&seatdv1.HeartbeatRequest{},
		&seatdv1.CreateLicenseRequest{License: &seatdv1.License{Name: strings.Repeat("é", maxRequestString/2)}},
	} {
		require.NoError(t, checkRequest(ok), "%v", ok)
	}
}

// TestTextProblemEveryByteEverywhere: the word-at-a-time path agrees with
// the rule for every byte value at every position of a window.
func TestTextProblemEveryByteEverywhere(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		for pos := range 17 {
			s := []byte(strings.Repeat("abcdefgh", 3))[:17]
			s[pos] = byte(b)
			want := ""
			switch {
			case b < 0x20 || b == 0x7f:
				want = hasControlChars
			case b >= 0x80:
				want = notUTF8 // a lone byte >= 0x80 is never UTF-8
			}
			require.Equal(t, want, textProblem(string(s)), "byte %#x at %d", b, pos)
		}
	}
	require.Equal(t, hasControlChars, textProblem("abcdefgh\u0080"), "C1 after a clean word")
	require.Equal(t, "", textProblem("abcdefgh\u00a0ü☃😀"), "printable non-ASCII")
}
