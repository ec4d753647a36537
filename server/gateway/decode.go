package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
)

// namingMarshaler is the gateway's JSON marshaler, whose decoder says which
// top-level field of a body did not decode. grpc-gateway passes only a
// decoder error's text on (as INVALID_ARGUMENT); shapeErrors reads the
// field back from it (fieldOf) and answers it as a BadRequest field
// violation, without the parser's own words.
type namingMarshaler struct{ *runtime.JSONPb }

func (m namingMarshaler) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		body, err := io.ReadAll(r) // bounded by the gateway's body limit
		if err != nil {
			return err
		}
		if _, field := v.(proto.Message); !field && len(bytes.TrimSpace(body)) == 0 {
			// No body for a call whose body is one field of the request
			// (body: "policy"): the field stays unset, as over gRPC, where
			// JSONPb would make it an empty message, which for a policy
			// means "remove it". The handlers refuse a missing field.
			return io.EOF
		}
		if msg, ok := v.(proto.Message); ok && m.UnmarshalOptions.Unmarshal(body, msg) == nil {
			// The whole body is one message that decodes: what JSONPb's
			// decoder (encoding/json's scan for the first value, then the
			// same protojson) would give, at half the cost. Anything else
			// takes JSONPb's path, for its answer and its error.
			return nil
		}
		err = m.JSONPb.NewDecoder(bytes.NewReader(body)).Decode(v)
		if err == nil {
			return nil
		}
		msg := bodyMessage(v)
		if msg == nil || len(body) > maxNamedBody {
			return err
		}
		if name, why := m.badField(body, msg); name != "" {
			return fieldError{name: name, why: why}
		}
		return err
	})
}

// Marshal writes v as JSONPb.Marshal does, with one buffer less: JSONPb
// lets protojson grow a buffer of its own by appending, then copies it
// into a bytes.Buffer; here protojson appends into a pooled buffer and the
// answer is copied once at its size.
func (m namingMarshaler) Marshal(v any) ([]byte, error) {
	msg, ok := v.(proto.Message)
	if !ok || m.Indent != "" {
		return m.JSONPb.Marshal(v)
	}
	bp := marshalBuffers.Get().(*[]byte)
	b, err := m.MarshalAppend((*bp)[:0], msg)
	var out []byte
	if err == nil {
		out = bytes.Clone(b)
	}
	if cap(b) <= maxPooledAnswer {
		*bp = b[:0]
		marshalBuffers.Put(bp)
	}
	return out, err
}

// marshalBuffers are Marshal's buffers; one that grew past
// maxPooledAnswer (a large admin list) is left to the collector.
var marshalBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledAnswer = 64 << 10

// maxNamedBody bounds the bodies whose bad field is looked for: the look
// decodes each top-level field again, before authentication, so a large
// body gets the plain answer.
const maxNamedBody = 64 << 10

// bodyMessage is the message a body decodes into: v itself, or, for a
// call whose body is one field of the request (body: "license"), the
// message *v points at (grpc-gateway passes a **T), made if nil.
func bodyMessage(v any) proto.Message {
	if msg, ok := v.(proto.Message); ok {
		return msg
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
		return nil
	}
	inner := rv.Elem()
	if inner.IsNil() {
		inner = reflect.New(inner.Type().Elem())
	}
	msg, _ := inner.Interface().(proto.Message)
	return msg
}

// badField finds the first top-level field (in name order, so the answer
// does not depend on map order) that does not decode on its own.
func (m namingMarshaler) badField(body []byte, msg proto.Message) (name, why string) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return "", "" // not a JSON object at all
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		probe := msg.ProtoReflect().New().Interface()
		if err := m.Unmarshal(one, probe); err != nil {
			if !fieldName.MatchString(k) {
				return "", ""
			}
			if unknownField.MatchString(err.Error()) {
				return k, "is not a field of this call's body"
			}
			return k, `does not decode as this field's type (a duration is written like "600s", a time like "2026-01-02T15:04:05Z", a 64-bit number as a string or a number)`
		}
	}
	return "", ""
}

// fieldError is a body field that does not decode; its text is the form
// fieldOf reads.
type fieldError struct{ name, why string }

func (e fieldError) Error() string { return fmt.Sprintf("seatd-bad-field %q: %s", e.name, e.why) }

var (
	fieldName    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
	unknownField = regexp.MustCompile(`unknown field "`)
	fieldErrText = regexp.MustCompile(`^seatd-bad-field "([A-Za-z][A-Za-z0-9_]{0,63})": (.+)$`)
)

// fieldOf reads a fieldError back from a status message.
func fieldOf(message string) (name, why string, ok bool) {
	m := fieldErrText.FindStringSubmatch(message)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}
