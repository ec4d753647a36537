package gateway

import (
	"bytes"
	"encoding/base64"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// appendJSON appends m as protojson with EmitDefaultValues writes it,
// byte for byte, and says true; or says false (and b is to be dropped)
// where m holds what it does not write: then protojson writes the answer
// (and gives its error). protojson spends a third of an in-process REST
// heartbeat on the answer, most of it collecting and sorting each
// message's fields (order.RangeFields, per message and per call); here the
// fields are walked in declaration order, which is the order protojson
// sorts them into (order.IndexNameFieldOrder, seatd's messages having no
// extensions). What it writes: messages, strings, bools, 32- and 64-bit
// integers (64-bit quoted), enums (by name; a number not in the enum as a
// number), bytes (base64), repeated fields, maps with string keys (sorted),
// google.protobuf.Timestamp and Duration (0, 3, 6 or 9 fractional digits).
// What it leaves to protojson: floats, other well-known types (Any,
// Struct, wrappers...), maps with other keys, strings that are not UTF-8,
// timestamps and durations out of range.
// TestFastJSONIsProtojson and FuzzFastJSON hold it to protojson's bytes.
func appendJSON(b []byte, m protoreflect.Message) ([]byte, bool) {
	e := jsonEncoder{out: b}
	ok := e.message(m)
	return e.out, ok
}

// commaSpace is whether protojson writes ", " (not ",") between values in
// this binary: it picks one per build, so that nobody relies on its bytes
// (internal/detrand); appendJSON writes what it writes.
var commaSpace = detectCommaSpace()

type jsonEncoder struct {
	out []byte
}

func (e *jsonEncoder) comma() {
	e.out = append(e.out, ',')
	if commaSpace {
		e.out = append(e.out, ' ')
	}
}

func (e *jsonEncoder) message(m protoreflect.Message) bool {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return e.timestamp(m)
	case "google.protobuf.Duration":
		return e.duration(m)
	}
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return false
	}
	e.out = append(e.out, '{')
	fds := md.Fields()
	first := true
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.HasPresence() && !m.Has(fd) {
			continue // unset message, optional or oneof member: left out
		}
		if !first {
			e.comma()
		}
		first = false
		if !e.str(fd.JSONName()) {
			return false
		}
		e.out = append(e.out, ':')
		if !e.field(fd, m.Get(fd)) {
			return false
		}
	}
	e.out = append(e.out, '}')
	return true
}

func (e *jsonEncoder) field(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch {
	case fd.IsList():
		l := v.List()
		e.out = append(e.out, '[')
		for i := range l.Len() {
			if i > 0 {
				e.comma()
			}
			if !e.singular(fd, l.Get(i)) {
				return false
			}
		}
		e.out = append(e.out, ']')
		return true
	case fd.IsMap():
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return false
		}
		mp := v.Map()
		keys := make([]string, 0, mp.Len())
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k.String())
			return true
		})
		slices.Sort(keys)
		e.out = append(e.out, '{')
		for i, k := range keys {
			if i > 0 {
				e.comma()
			}
			if !e.str(k) {
				return false
			}
			e.out = append(e.out, ':')
			if !e.singular(fd.MapValue(), mp.Get(protoreflect.ValueOfString(k).MapKey())) {
				return false
			}
		}
		e.out = append(e.out, '}')
		return true
	}
	return e.singular(fd, v)
}

func (e *jsonEncoder) singular(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return e.str(v.String())
	case protoreflect.BoolKind:
		e.out = strconv.AppendBool(e.out, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		e.out = strconv.AppendInt(e.out, v.Int(), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		e.out = strconv.AppendUint(e.out, v.Uint(), 10)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		e.out = append(strconv.AppendInt(append(e.out, '"'), v.Int(), 10), '"')
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		e.out = append(strconv.AppendUint(append(e.out, '"'), v.Uint(), 10), '"')
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return false
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return e.str(string(ev.Name()))
		}
		e.out = strconv.AppendInt(e.out, int64(v.Enum()), 10)
	case protoreflect.BytesKind:
		e.out = append(e.out, '"')
		e.out = base64.StdEncoding.AppendEncode(e.out, v.Bytes())
		e.out = append(e.out, '"')
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return e.message(v.Message())
	default: // floats
		return false
	}
	return true
}

// str is protojson's string: UTF-8 only; ", \ and controls escaped
// (\b \f \n \r \t, else \u with the fewest hex digits of 4).
func (e *jsonEncoder) str(s string) bool {
	e.out = append(e.out, '"')
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] >= ' ' && s[i] != '"' && s[i] != '\\' && s[i] < utf8.RuneSelf {
			i++
		}
		e.out, s = append(e.out, s[:i]...), s[i:]
		if len(s) == 0 {
			break
		}
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			return false
		case r < ' ' || r == '"' || r == '\\':
			e.out = append(e.out, '\\')
			switch r {
			case '"', '\\':
				e.out = append(e.out, byte(r))
			case '\b':
				e.out = append(e.out, 'b')
			case '\f':
				e.out = append(e.out, 'f')
			case '\n':
				e.out = append(e.out, 'n')
			case '\r':
				e.out = append(e.out, 'r')
			case '\t':
				e.out = append(e.out, 't')
			default:
				e.out = append(e.out, 'u')
				e.out = append(e.out, "0000"[1+(bits.Len32(uint32(r))-1)/4:]...)
				e.out = strconv.AppendUint(e.out, uint64(r), 16)
			}
		default:
			e.out = append(e.out, s[:n]...)
		}
		s = s[n:]
	}
	e.out = append(e.out, '"')
	return true
}

// The bounds protojson holds timestamps and durations to.
const (
	minTimestampSeconds  = -62135596800 // 0001-01-01T00:00:00Z
	maxTimestampSeconds  = 253402300799 // 9999-12-31T23:59:59Z
	maxSecondsInDuration = 315576000000
	maxNanos             = 999999999
)

func secondsNanos(m protoreflect.Message) (int64, int64) {
	fds := m.Descriptor().Fields()
	return m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
}

func (e *jsonEncoder) timestamp(m protoreflect.Message) bool {
	secs, nanos := secondsNanos(m)
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > maxNanos {
		return false
	}
	e.out = append(e.out, '"')
	e.out = time.Unix(secs, 0).UTC().AppendFormat(e.out, "2006-01-02T15:04:05")
	e.out = fraction(e.out, nanos)
	e.out = append(e.out, 'Z', '"')
	return true
}

func (e *jsonEncoder) duration(m protoreflect.Message) bool {
	secs, nanos := secondsNanos(m)
	if secs < -maxSecondsInDuration || secs > maxSecondsInDuration || nanos < -maxNanos || nanos > maxNanos ||
		(secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return false
	}
	e.out = append(e.out, '"')
	if secs < 0 || nanos < 0 {
		e.out = append(e.out, '-')
		secs, nanos = -secs, -nanos
	}
	e.out = strconv.AppendInt(e.out, secs, 10)
	e.out = fraction(e.out, nanos)
	e.out = append(e.out, 's', '"')
	return true
}

// fraction is ".nnn", ".nnnnnn" or ".nnnnnnnnn" (the fewest of those
// that hold nanos exactly), or nothing for 0.
func fraction(b []byte, nanos int64) []byte {
	if nanos == 0 {
		return b
	}
	digits := 9
	for _, d := range []int{3, 6} {
		if nanos%pow10[9-d] == 0 {
			digits = d
			break
		}
	}
	n := nanos / pow10[9-digits]
	b = append(b, '.')
	s := strconv.AppendInt(nil, n, 10)
	for range digits - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

var pow10 = [...]int64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000}

// detectCommaSpace asks protojson which separator this binary writes.
func detectCommaSpace() bool {
	probe, err := protojson.Marshal(&errdetails.ErrorInfo{Reason: "a", Domain: "b"})
	return err == nil && bytes.Contains(probe, []byte(", "))
}
