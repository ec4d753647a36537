package grpcapi

import (
	"strconv"
	"unicode/utf8"
)

// The one rule for every string a client sends, identifiers and free text
// alike (names, metadata values, revoke reasons): valid UTF-8 without control
// characters. Free text gets no exception, not even tab or newline: these
// strings are labels, not documents, and they end up in log lines, audit
// records, terminal tables, PostgreSQL (which refuses NUL) and Redis keys,
// where a control character splits a line, forges a field or fails a write.
const (
	notUTF8         = "must be valid UTF-8"
	hasControlChars = "must not contain control characters"
)

// maxRequestString bounds any string of any request: no field needs more
// (the longest are metadata values and revoke reasons, 1024 bytes), and the
// handlers check tighter bounds per field.
const maxRequestString = 1024

// textProblem says what breaks the rule in s ("" when nothing does). It
// rejects C0 controls (NUL included), DEL and C1 controls (U+0080-U+009F).
func textProblem(s string) string {
	for i := 0; i < len(s); {
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
		i += size
	}
	return ""
}

// mapEntryPath names the value of one map entry, e.g. metadata["os"]. Only
// keys that passed textProblem are named (quoted, so that the path stays one
// unambiguous token).
func mapEntryPath(field, key string) string {
	return field + "[" + strconv.Quote(key) + "]"
}
