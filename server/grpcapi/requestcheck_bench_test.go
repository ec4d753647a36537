package grpcapi

import (
	"testing"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// A heartbeat as clients send it: a lease id and token of the real shapes.
var benchHeartbeat = &seatdv1.HeartbeatRequest{LeaseId: server.NewID("lse_"), LeaseToken: server.NewSecret("slt_")}

// BenchmarkLeaseCredentials is the check heartbeats had before
// checkRequest: the baseline for its cost.
func BenchmarkLeaseCredentials(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := leaseCredentials(benchHeartbeat.GetLeaseId(), benchHeartbeat.GetLeaseToken()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckHeartbeat is what checkRequest adds to every heartbeat.
func BenchmarkCheckHeartbeat(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := checkRequest(benchHeartbeat); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckAcquire: a full acquisition, metadata included.
func BenchmarkCheckAcquire(b *testing.B) {
	req := &seatdv1.AcquireSeatRequest{
		LicenseKey: server.NewSecret("slk_"), Fingerprint: "9f2c1e7a-host-fingerprint", User: "ann", Hostname: "build-17.example.com",
		IdempotencyKey: server.NewID("idem_"), Metadata: map[string]string{"os": "linux", "version": "4.2.1"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeHeartbeat compares grpc's codec with requestCodec on a good
// heartbeat: the wrapper costs nothing on the path that decodes.
func BenchmarkDecodeHeartbeat(b *testing.B) {
	wire, err := proto.Marshal(benchHeartbeat)
	if err != nil {
		b.Fatal(err)
	}
	grpcCodec := encoding.GetCodecV2(grpcproto.Name)
	for name, codec := range map[string]encoding.CodecV2{"grpc": grpcCodec, "requestCodec": requestCodec{grpcCodec}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m seatdv1.HeartbeatRequest
				if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
