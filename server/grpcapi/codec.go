package grpcapi

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seatd/seatd/server"
)

// CodecOption is the grpc.Server option the seatd services need besides
// their interceptors: requestCodec, so that checkRequest sees the requests
// that do not decode.
func (s *Server) CodecOption() grpc.ServerOption {
	return grpc.ForceServerCodecV2(requestCodec{encoding.GetCodecV2(grpcproto.Name)})
}

// requestCodec is grpc's proto codec, except that a request that does not
// decode is not an error here. grpc-go turns any codec error into INTERNAL
// (with the decoder's words in the message) before an interceptor or handler
// can see it, and offers no hook; so the codec resets the message, marks it,
// and lets checkRequest refuse it with INVALID_ARGUMENT.
//
// The mark is the message's unknown fields set to bytes that start with a
// zero tag. A decoded message never holds those (field number 0 is invalid
// on the wire, so decoding would have failed), so a client cannot forge the
// mark, and it travels with the message: no table to clean up, no locking,
// nothing to find again. Only the server uses this codec (a server option,
// not encoding.RegisterCodecV2): clients in this process, such as the
// gateway's, still fail on bad replies.
type requestCodec struct{ encoding.CodecV2 }

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	// data is ours until we return; this is the error path only.
	path := invalidUTF8Field(data.Materialize(), m.ProtoReflect().Descriptor(), 0)
	proto.Reset(m) // nothing half-decoded reaches anyone
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(malformedMark + path))
	return nil
}

// malformedMark starts the unknown fields of a request that did not decode;
// the rest is the path of a string that was not UTF-8, if that was why.
const malformedMark = "\x00seatd-malformed:"

// malformed refuses a request the codec marked: INVALID_ARGUMENT naming the
// field whose string was not UTF-8 (the one rule, as for any string), or
// MALFORMED_REQUEST when the bytes are not this method's message at all.
func malformed(r protoreflect.Message) error {
	raw := r.GetUnknown()
	if len(raw) == 0 || raw[0] != 0 {
		return nil // the fast path: one length check
	}
	path, ok := strings.CutPrefix(string(raw), malformedMark)
	if !ok {
		return nil
	}
	if path != "" {
		return server.Invalid(path, notUTF8)
	}
	return server.Errorf(server.EINVALID, server.ReasonMalformedRequest,
		"the request is not a valid %s message", r.Descriptor().FullName())
}

// invalidUTF8Field finds the first string in b, a message of type md on the
// wire, that is not UTF-8 (what proto3 decoding refuses), and returns its
// path as checkRequest names paths; "" if there is none or b does not parse.
func invalidUTF8Field(b []byte, md protoreflect.MessageDescriptor, depth int) string {
	const maxDepth = 64
	seen := map[protowire.Number]int{} // list elements so far, per field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return ""
			}
			b = b[n:]
			continue
		}
		val, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		seg := string(fd.Name())
		if fd.IsList() {
			seg += "[" + strconv.Itoa(seen[num]) + "]"
			seen[num]++
		}
		var v *violation
		switch {
		case fd.IsMap():
			v = invalidUTF8InEntry(val, fd)
		case fd.Kind() == protoreflect.StringKind && !utf8.Valid(val):
			v = &violation{}
		case fd.Kind() == protoreflect.MessageKind && depth < maxDepth:
			if p := invalidUTF8Field(val, fd.Message(), depth+1); p != "" {
				v = &violation{path: p}
			}
		}
		if v != nil {
			return v.under(seg).path
		}
	}
	return ""
}

// invalidUTF8InEntry checks one map entry on the wire (key = 1, value = 2).
func invalidUTF8InEntry(b []byte, fd protoreflect.FieldDescriptor) *violation {
	var key []byte
	var keyOK bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		val, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		switch {
		case num == 1 && fd.MapKey().Kind() == protoreflect.StringKind:
			if !utf8.Valid(val) {
				return &violation{problem: "keys " + notUTF8}
			}
			key, keyOK = val, textProblem(string(val)) == ""
		case num == 2 && fd.MapValue().Kind() == protoreflect.StringKind && !utf8.Valid(val):
			if !keyOK {
				return &violation{} // name the map only: the key is bad too
			}
			return (&violation{}).under(mapEntryPath("", string(key)))
		}
	}
	return nil
}
