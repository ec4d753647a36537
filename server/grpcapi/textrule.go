package grpcapi

import (
	"encoding/binary"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// The one rule for every string a client sends, identifiers and free text
// alike (names, metadata values, revoke reasons): valid UTF-8 without control
// characters, and without invisible format characters (Unicode category Cf:
// bidi controls such as U+202E, zero-width ones such as U+200B), which make
// a name or fingerprint show as another in the console, seatctl or a log. Free text gets no exception, not even tab or newline: these
// strings are labels, not documents, and they end up in log lines, audit
// records, terminal tables, PostgreSQL (which refuses NUL) and Redis keys,
// where a control character splits a line, forges a field or fails a write.
const (
	notUTF8         = "must be valid UTF-8"
	hasControlChars = "must not contain control characters"
	hasFormatChars  = "must not contain invisible format characters (Unicode Cf: bidi controls such as U+202E, zero-width characters such as U+200B)"
)

// maxRequestString bounds any string of any request: no field needs more
// (the longest are metadata values and revoke reasons, 1024 bytes), and the
// handlers check tighter bounds per field.
const maxRequestString = 1024

// textProblem says what breaks the rule in s ("" when nothing does). It
// rejects C0 controls (NUL included), DEL, C1 controls (U+0080-U+009F) and
// format characters (Cf).
func textProblem(s string) string {
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainASCII8(s[i:i+8]) {
			i += 8 // the common case, 8 bytes at a time: every heartbeat comes here
			continue
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b < 0x20 || b == 0x7f {
				return hasControlChars
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return notUTF8
		}
		if r <= 0x9f { // C1: U+0080-U+009F
			return hasControlChars
		}
		if unicode.Is(unicode.Cf, r) {
			return hasFormatChars
		}
		i += size
	}
	return ""
}

// plainASCII8 reports whether the 8 bytes of s are all printable ASCII
// (0x20-0x7E), testing them at once as one word.
func plainASCII8(s string) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	w := binary.LittleEndian.Uint64([]byte(s))
	nonASCII := w & hi
	below20 := (w - 0x20*lo) & ^w & hi // a byte < 0x20 borrows into its top bit
	x := w ^ 0x7f*lo
	isDEL := (x - lo) & ^x & hi // a byte == 0x7F is zero in x
	return nonASCII|below20|isDEL == 0
}

// mapEntryPath names the value of one map entry, e.g. metadata["os"]. Only
// keys that passed textProblem are named (quoted, so that the path stays one
// unambiguous token).
func mapEntryPath(field, key string) string {
	return field + "[" + strconv.Quote(key) + "]"
}
