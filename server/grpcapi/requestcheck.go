package grpcapi

import (
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatd/seatd/server"
)

// checkRequest is the validation every request of every method passes before
// its handler runs, in both storage modes and for REST too (the gateway calls
// the gRPC port): the request decoded (see requestCodec), and every string in
// it, at any depth, keeps the text rule and maxRequestString. Handlers then
// check what is particular to their fields (required, shorter bounds,
// patterns). A timestamp of 0001-01-01T00:00:00Z is cleared: unset.
// The refusal names the field path (license.name,
// metadata["os"], update_mask.paths[0]) and never echoes the bad value.
//
// It allocates nothing for a good request without maps, which matters:
// every heartbeat passes here.
func checkRequest(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	r := m.ProtoReflect()
	if err := malformed(r); err != nil {
		return err
	}
	if v := checkMessage(r); v != nil {
		return server.Invalid(v.path, "%s", v.problem)
	}
	return nil
}

// violation is a broken field. Its path is relative to the value checked
// and grows outwards as the checks return, so that good requests build none.
type violation struct {
	path    string
	problem string
}

// under prefixes the path with seg, the field or index that holds it.
func (v *violation) under(seg string) *violation {
	switch {
	case v.path == "":
		v.path = seg
	case v.path[0] == '[':
		v.path = seg + v.path
	default:
		v.path = seg + "." + v.path
	}
	return v
}

func checkMessage(m protoreflect.Message) *violation {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var v *violation
		switch {
		case fd.Kind() == protoreflect.StringKind && !fd.IsList():
			v = checkString(m.Get(fd).String()) // "" when unset: no need to ask Has first
		case !m.Has(fd):
			continue
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() && zeroTimestamp(m.Get(fd).Message()):
			// 0001-01-01T00:00:00Z, the zero time of most languages: what
			// a generated REST client sends for a timestamp it never set
			// (every timestamp of a request is optional). It means unset.
			m.Clear(fd)
			continue
		case fd.IsMap():
			v = checkMap(fd, m.Get(fd).Map())
		case fd.IsList():
			v = checkList(fd, m.Get(fd).List())
		default:
			v = checkValue(fd, m.Get(fd))
		}
		if v != nil {
			return v.under(string(fd.Name()))
		}
	}
	return nil
}

// checkValue checks one singular value: a field, a list element, a map value.
func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) *violation {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return checkString(v.String())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkMessage(v.Message())
	}
	return nil
}

// zeroTimestamp is whether m is a google.protobuf.Timestamp of
// 0001-01-01T00:00:00Z.
func zeroTimestamp(m protoreflect.Message) bool {
	t, ok := m.Interface().(*timestamppb.Timestamp)
	return ok && t.GetSeconds() == zeroTimeSeconds && t.GetNanos() == 0
}

// zeroTimeSeconds is 0001-01-01T00:00:00Z in seconds since the Unix epoch.
const zeroTimeSeconds = -62135596800

func checkString(s string) *violation {
	if len(s) > maxRequestString {
		return &violation{problem: tooLong}
	}
	if p := textProblem(s); p != "" {
		return &violation{problem: p}
	}
	return nil
}

var tooLong = "must be at most " + strconv.Itoa(maxRequestString) + " bytes"

func checkList(fd protoreflect.FieldDescriptor, l protoreflect.List) *violation {
	for i := range l.Len() {
		if v := checkValue(fd, l.Get(i)); v != nil {
			return v.under("[" + strconv.Itoa(i) + "]")
		}
	}
	return nil
}

// checkMap checks keys and values. A bad key is named by its map only
// (naming it would echo it); a bad value by its key, which passed.
func checkMap(fd protoreflect.FieldDescriptor, m protoreflect.Map) *violation {
	var found *violation
	m.Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
		key := k.String()
		if fd.MapKey().Kind() == protoreflect.StringKind {
			if v := checkString(key); v != nil {
				found = &violation{problem: "keys " + v.problem}
				return false
			}
		}
		if v := checkValue(fd.MapValue(), val); v != nil {
			found = v.under(mapEntryPath("", key))
		}
		return found == nil
	})
	return found
}
