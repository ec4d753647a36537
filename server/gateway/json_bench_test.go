package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// heartbeatAnswer is a REST heartbeat's answer as seatd sends it: a lease
// with its times and a signed certificate (a JWS of about 600 bytes).
func heartbeatAnswer() *seatdv1.HeartbeatResponse {
	now := time.Date(2026, 11, 28, 22, 0, 0, 123456789, time.UTC)
	return &seatdv1.HeartbeatResponse{
		ExpiresAt:         timestamppb.New(now.Add(time.Minute)),
		HeartbeatInterval: durationpb.New(20 * time.Second),
		Lease: &seatdv1.Lease{
			Id: "lse_01JDXK8T2M3N4P5Q6R7S8T9V0W", LicenseId: "lic_01JDXK8T2M3N4P5Q6R7S8T9V0X",
			Fingerprint: "host-7f3a9c", State: seatdv1.LeaseState_LEASE_STATE_ACTIVE,
			AcquiredAt: timestamppb.New(now.Add(-time.Hour)), ExpiresAt: timestamppb.New(now.Add(time.Minute)),
			LastHeartbeatAt: timestamppb.New(now), User: "alice", Hostname: "ws-42",
		},
		LeaseCertificate: "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoic2VhdGQtbGVhc2Urand0In0." + strings.Repeat("eyJzdWIiOiJsc2VfMDFKRFhLOFQyTTNONFA1UTZSN1M4VDlWMFcifQ", 8) + ".c2lnbmF0dXJl",
	}
}

// gatewayJSON is the marshaler options the gateway writes answers with.
var gatewayJSON = protojson.MarshalOptions{EmitDefaultValues: true}

// BenchmarkHeartbeatAnswerJSON: what encoding a heartbeat's answer costs
// (issue 32: keep protojson unless something well-kept is faster and
// byte-compatible). encoding/json on the generated struct is the floor of
// a reflection encoder; it is not compatible (TestOnlyProtojsonWritesTheAPI).
func BenchmarkHeartbeatAnswerJSON(b *testing.B) {
	answer := heartbeatAnswer()
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gatewayJSON.Marshal(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(answer); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestOnlyProtojsonWritesTheAPI: a generic JSON encoder does not write
// seatd's REST answers: field names are the proto's (lease_id, not
// leaseId), timestamps are objects, enums numbers.
func TestOnlyProtojsonWritesTheAPI(t *testing.T) {
	t.Parallel()
	answer := heartbeatAnswer()
	want, err := gatewayJSON.Marshal(answer)
	require.NoError(t, err)
	var api map[string]any
	require.NoError(t, json.Unmarshal(want, &api))
	require.Equal(t, "2026-11-28T22:01:00.123456789Z", api["expiresAt"])
	got, err := json.Marshal(answer)
	require.NoError(t, err)
	var generic map[string]any
	require.NoError(t, json.Unmarshal(got, &generic))
	require.NotContains(t, generic, "expiresAt")
	require.IsType(t, map[string]any{}, generic["expires_at"], "a timestamp as an object")
}
