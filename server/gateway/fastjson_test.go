package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// requireProtojsonBytes: where appendJSON writes msg, it writes
// protojson's bytes; where it does not, protojson fails or msg holds what
// appendJSON leaves to it. It says whether appendJSON wrote it.
func requireProtojsonBytes(t *testing.T, msg proto.Message, name string) bool {
	t.Helper()
	want, werr := gatewayJSON.Marshal(msg)
	got, ok := appendJSON(nil, msg.ProtoReflect())
	if werr != nil {
		require.False(t, ok, "%s: protojson fails (%v), appendJSON wrote %s", name, werr, got)
		return false
	}
	if ok {
		require.Equal(t, string(want), string(got), name)
	}
	return ok
}

// The answers of the seat and heartbeat calls, and the admin answers
// seatd writes, are written by appendJSON with protojson's bytes.
func TestFastJSONIsProtojson(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	lease := heartbeatAnswer().GetLease()
	lease.Metadata = map[string]string{"zeta": "1", "alpha": "two\nlines \"quoted\" \\ \x01 \u2028 é", "": "empty"}
	lease.ReservedFor = &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_GROUP, Name: "builders"}
	lease.EndedAt = timestamppb.New(now.Add(1500 * time.Microsecond))
	lease.State = seatdv1.LeaseState(77) // not in the enum: a number
	for name, msg := range map[string]proto.Message{
		"heartbeat answer": heartbeatAnswer(),
		"acquire answer": &seatdv1.AcquireSeatResponse{
			Lease: lease, LeaseToken: "slt_x", HeartbeatInterval: durationpb.New(-1500 * time.Millisecond), SeatsInUse: 3, SeatLimit: -1,
		},
		"release answer":     &seatdv1.ReleaseSeatResponse{Lease: &seatdv1.Lease{}},
		"empty answer":       &seatdv1.ReleaseSeatResponse{},
		"empty list":         &seatdv1.ListLicensesResponse{},
		"status, no details": status.New(codes.NotFound, "no \"lease\"").Proto(),
		"license":            &seatdv1.License{Id: "lic_1", Seats: 5, LeaseTtl: durationpb.New(10*time.Minute + 3*time.Nanosecond), ExpiresAt: timestamppb.New(now.Add(time.Millisecond))},
		"tenant with quotas": &seatdv1.Tenant{Id: "t", Quotas: &seatdv1.TenantQuotas{MaxLicenses: 1 << 40}},
		"times at the edges": &seatdv1.Lease{AcquiredAt: &timestamppb.Timestamp{Seconds: -62135596800}, ExpiresAt: &timestamppb.Timestamp{Seconds: 253402300799, Nanos: 999999999}},
	} {
		require.True(t, requireProtojsonBytes(t, msg, name), "%s: appendJSON left it to protojson", name)
	}
	for name, msg := range map[string]proto.Message{
		"an error's status (Any details)": withDetail(t),
		"a string that is not UTF-8":      &seatdv1.Lease{Id: "\xff"},
		"a timestamp out of range":        &seatdv1.Lease{AcquiredAt: &timestamppb.Timestamp{Seconds: 253402300800}},
		"nanos out of range":              &seatdv1.Lease{AcquiredAt: &timestamppb.Timestamp{Nanos: -1}},
		"a duration of mixed signs":       &seatdv1.AcquireSeatResponse{HeartbeatInterval: &durationpb.Duration{Seconds: 1, Nanos: -1}},
	} {
		require.False(t, requireProtojsonBytes(t, msg, name), "%s: appendJSON wrote it", name)
	}
}

func withDetail(t *testing.T) proto.Message {
	st, err := status.New(codes.NotFound, "no").WithDetails(&errdetails.ErrorInfo{Reason: "LEASE_NOT_FOUND"})
	require.NoError(t, err)
	return st.Proto()
}

// FuzzFastJSON: whatever a lease holds, appendJSON writes protojson's
// bytes or leaves it to protojson.
func FuzzFastJSON(f *testing.F) {
	f.Add("lse_1", "host\n\"x\"", "k", "v\x00", int64(1764367200), int32(123456789), int64(20), int32(0), int32(1))
	f.Add("\xff", "", "", "", int64(-62135596801), int32(-1), int64(-3), int32(-5), int32(99))
	f.Fuzz(func(t *testing.T, id, host, key, value string, secs int64, nanos int32, dsecs int64, dnanos int32, state int32) {
		msg := &seatdv1.AcquireSeatResponse{
			Lease: &seatdv1.Lease{
				Id: id, Hostname: host, Metadata: map[string]string{key: value, "b": id},
				State: seatdv1.LeaseState(state), AcquiredAt: &timestamppb.Timestamp{Seconds: secs, Nanos: nanos},
			},
			HeartbeatInterval: &durationpb.Duration{Seconds: dsecs, Nanos: dnanos},
			SeatsInUse:        state,
		}
		requireProtojsonBytes(t, msg, "fuzzed")
	})
}
