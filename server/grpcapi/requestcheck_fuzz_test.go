package grpcapi

import (
	"errors"
	"testing"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protopath"
	"google.golang.org/protobuf/reflect/protorange"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// fuzzRequests are the request types FuzzValidateRequest decodes into,
// chosen by the input's first argument.
var fuzzRequests = []proto.Message{
	&seatdv1.HeartbeatRequest{}, &seatdv1.HeartbeatStreamRequest{}, &seatdv1.AcquireSeatRequest{},
	&seatdv1.WaitForSeatRequest{}, &seatdv1.ReleaseSeatRequest{}, &seatdv1.CreateLicenseRequest{},
	&seatdv1.UpdateLicenseRequest{}, &seatdv1.RevokeLeaseRequest{}, &seatdv1.CreateTenantRequest{},
	&seatdv1.ListLeasesRequest{}, &seatdv1.GetZombieReportRequest{},
}

// FuzzValidateRequest decodes any bytes as the server does (requestCodec)
// and checks checkRequest against a plain oracle: it refuses exactly the
// requests that do not decode or hold a string breaking the rule, with
// INVALID_ARGUMENT and a reason (a field named, or MALFORMED_REQUEST), and
// never panics. Seeds: testdata/fuzz/FuzzValidateRequest.
func FuzzValidateRequest(f *testing.F) {
	codec := requestCodec{encoding.GetCodecV2(grpcproto.Name)}
	f.Fuzz(func(t *testing.T, kind byte, wire []byte) {
		typ := fuzzRequests[int(kind)%len(fuzzRequests)]
		m := typ.ProtoReflect().New().Interface()
		if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, m); err != nil {
			t.Fatalf("requestCodec returned %v: it must mark instead", err)
		}
		err := checkRequest(m)

		plain := typ.ProtoReflect().New().Interface()
		decodes := proto.Unmarshal(wire, plain) == nil
		keepsRule := decodes && stringsKeepRule(plain)
		if keepsRule != (err == nil) {
			t.Fatalf("%T: decodes %v, strings keep the rule %v, but checkRequest: %v", typ, decodes, keepsRule, err)
		}
		if err == nil {
			if _, merr := proto.Marshal(m); merr != nil {
				t.Fatalf("an accepted request does not marshal: %v", merr)
			}
			return
		}
		var se *server.Error
		if !errors.As(err, &se) || se.Code != server.EINVALID {
			t.Fatalf("refusal %v is not EINVALID", err)
		}
		switch se.Reason {
		case server.ReasonMalformedRequest:
			if decodes || se.Field != "" {
				t.Fatalf("MALFORMED_REQUEST for a request that decodes, or naming %q", se.Field)
			}
		case server.ReasonInvalidArgument:
			if se.Field == "" {
				t.Fatalf("INVALID_ARGUMENT names no field: %v", err)
			}
		default:
			t.Fatalf("unexpected reason %q", se.Reason)
		}
	})
}

// stringsKeepRule is the rule stated plainly over every string in m (map
// keys included), as an oracle for checkRequest.
func stringsKeepRule(m proto.Message) bool {
	ok := func(s string) bool {
		if len(s) > maxRequestString || !utf8.ValidString(s) {
			return false
		}
		for _, r := range s {
			if unicode.IsControl(r) { // exactly C0, DEL and C1
				return false
			}
		}
		return true
	}
	err := protorange.Range(m.ProtoReflect(), func(p protopath.Values) error {
		last := p.Index(-1)
		if last.Step.Kind() == protopath.MapIndexStep {
			if k, isString := last.Step.MapIndex().Interface().(string); isString && !ok(k) {
				return errors.New("bad")
			}
		}
		if s, isString := last.Value.Interface().(string); isString && !ok(s) {
			return errors.New("bad")
		}
		return nil
	})
	return err == nil
}
