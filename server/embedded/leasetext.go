package embedded

import (
	"cmp"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
)

// A lease's text is its strings in one immutable string, each a uvarint
// length and its bytes, in this order: id, fingerprint, user, hostname,
// idempotency key; then the dedupe key if its kind is dedupeOther, the
// token hash if flagTokenText, the feature and version asked if
// flagFeature (a lease of a grant), the site-policy reservation whose
// seat it took if flagReserved; then the metadata, a uvarint count and as
// many key, value pairs, sorted by key. The strings a lease answer holds
// are substrings of it: one allocation per lease, and nothing for the
// collector to scan. The same bytes (without the id) end the records on
// disk (record.go).
type leaseText struct {
	id, fingerprint, user, hostname, idem string
	dedupe, token                         string // only with dedupeOther, flagTokenText
	feature, version                      string // only with flagFeature
	reservation                           string // only with flagReserved
	meta                                  string // the encoded metadata, count first
}

// The kinds of dedupe key (server.DedupeKey): a prefix and one of the
// lease's own strings, so that the key costs no bytes of its own.
const (
	dedupeNone uint8 = iota
	dedupeFingerprint
	dedupeUser
	dedupeHost
	dedupeOther // anything else, kept in the text as is
)

var dedupePrefixes = [...]string{dedupeFingerprint: "fp:", dedupeUser: "user:", dedupeHost: "host:"}

func dedupeKindOf(key, fingerprint, user, hostname string) uint8 {
	is := func(kind uint8, s string) bool {
		p := dedupePrefixes[kind]
		return len(key) == len(p)+len(s) && strings.HasPrefix(key, p) && key[len(p):] == s
	}
	switch {
	case key == "":
		return dedupeNone
	case is(dedupeFingerprint, fingerprint):
		return dedupeFingerprint
	case is(dedupeUser, user):
		return dedupeUser
	case is(dedupeHost, hostname):
		return dedupeHost
	}
	return dedupeOther
}

// dedupeParts is the lease's dedupe key as a prefix and a rest, so that
// it can be hashed and compared without being built.
func (t *leaseText) dedupeParts(kind uint8) (prefix, rest string) {
	switch kind {
	case dedupeFingerprint:
		return dedupePrefixes[kind], t.fingerprint
	case dedupeUser:
		return dedupePrefixes[kind], t.user
	case dedupeHost:
		return dedupePrefixes[kind], t.hostname
	case dedupeOther:
		return "", t.dedupe
	}
	return "", ""
}

func (t *leaseText) dedupeKey(kind uint8) string {
	p, r := t.dedupeParts(kind)
	if p == "" {
		return r
	}
	return p + r
}

// appendText appends the text of a lease's strings.
func appendText(b []byte, t *leaseText, f flags, meta map[string]string) []byte {
	for _, s := range []string{t.id, t.fingerprint, t.user, t.hostname, t.idem} {
		b = appendString(b, s)
	}
	if f.dedupeKind() == dedupeOther {
		b = appendString(b, t.dedupe)
	}
	if f&flagTokenText != 0 {
		b = appendString(b, t.token)
	}
	if f&flagFeature != 0 {
		b = appendString(appendString(b, t.feature), t.version)
	}
	if f&flagReserved != 0 {
		b = appendString(b, t.reservation)
	}
	b = binary.AppendUvarint(b, uint64(len(meta)))
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		b = appendString(appendString(b, k), meta[k])
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// parseText splits a text into its strings (substrings of it) and checks
// that it is well formed.
func parseText(s string, f flags) (leaseText, error) {
	r := reader[string]{b: s}
	t := leaseText{
		id: r.bytes("id"), fingerprint: r.bytes("fingerprint"), user: r.bytes("user"),
		hostname: r.bytes("hostname"), idem: r.bytes("idempotency_key"),
	}
	if f.dedupeKind() == dedupeOther {
		t.dedupe = r.bytes("dedupe_key")
	} else if f.dedupeKind() > dedupeOther {
		r.fail("dedupe_key", "unknown kind")
	}
	if f&flagTokenText != 0 {
		t.token = r.bytes("token_hash")
	}
	if f&flagFeature != 0 {
		t.feature, t.version = r.bytes("feature"), r.bytes("version")
	}
	if f&flagReserved != 0 {
		t.reservation = r.bytes("reservation")
	}
	t.meta = r.b
	n := r.uvarint("metadata")
	if n > uint64(len(r.b)) {
		r.fail("metadata", "truncated")
		n = 0
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.bytes("metadata")
		r.bytes("metadata")
	}
	if r.err == nil && r.b != "" {
		r.fail("metadata", "trailing bytes")
	}
	if r.err != nil {
		return leaseText{}, r.err
	}
	return t, nil
}

// mustParseText parses a text the index made or checked itself.
func mustParseText(s string, f flags) leaseText {
	t, err := parseText(s, f)
	if err != nil {
		panic("embedded: a lease text in memory does not parse: " + err.Error())
	}
	return t
}

// textID is the id a text starts with (the hot path: no other field).
func textID(s string) string {
	n, k := uvarint(s)
	return s[k : k+int(n)]
}

// metadata decodes the pairs of t.meta: a new map each call (nil if none),
// so that callers never share one.
func (t *leaseText) metadata() map[string]string {
	r := reader[string]{b: t.meta}
	n := r.uvarint("metadata")
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := r.bytes("metadata")
		m[k] = r.bytes("metadata")
	}
	return m
}

// tokenBytes decodes a token hash as server.HashSecret writes it (64
// lowercase hex digits); ok is false for any other string.
func tokenBytes(h string) (b [32]byte, ok bool) {
	if len(h) != 64 {
		return b, false
	}
	for i := range 32 {
		hi, ok1 := hexDigit(h[2*i])
		lo, ok2 := hexDigit(h[2*i+1])
		if !ok1 || !ok2 {
			return [32]byte{}, false
		}
		b[i] = hi<<4 | lo
	}
	return b, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// zeroTime stands for time.Time{} among Unix nanoseconds.
const zeroTime = math.MinInt64

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func timeOf(ns int64) time.Time {
	if ns == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// errTimeRange: a time a lease record cannot hold.
var errTimeRange = errors.New("a time outside the years 1678-2262")

// checkTimes refuses times Unix nanoseconds cannot hold.
func checkTimes(ts ...time.Time) error {
	lo, hi := time.Unix(0, math.MinInt64+1), time.Unix(0, math.MaxInt64)
	for _, t := range ts {
		if !t.IsZero() && (t.Before(lo) || t.After(hi)) {
			return errTimeRange
		}
	}
	return nil
}

// compact is a lease as memory and the records keep it: its slot (times,
// token, flags) and its text.
func compact(l *server.Lease, rev uint64) (slot, string) {
	s := slot{
		deadline: unixNano(l.ExpiresAt),
		beat:     unixNano(l.LastHeartbeatAt),
		acquired: unixNano(l.AcquiredAt),
		rev:      rev,
	}
	t := leaseText{id: l.ID, fingerprint: l.Fingerprint, user: l.User, hostname: l.Hostname, idem: l.IdempotencyKey}
	if l.Borrowed {
		s.flags |= flagBorrowed
	}
	if l.Lingering {
		s.flags |= flagLingering
	}
	var ok bool
	if s.token, ok = tokenBytes(l.TokenHash); !ok {
		s.flags |= flagTokenText
		t.token = l.TokenHash
	}
	if l.Feature != "" || l.Version != "" {
		s.flags |= flagFeature
		t.feature, t.version = l.Feature, l.Version
	}
	if l.Reservation != "" {
		s.flags |= flagReserved
		t.reservation = l.Reservation
	}
	kind := dedupeKindOf(l.DedupeKey, l.Fingerprint, l.User, l.Hostname)
	s.flags |= flags(kind) << dedupeShift
	if kind == dedupeOther {
		t.dedupe = l.DedupeKey
	}
	return s, string(appendText(nil, &t, s.flags, l.Metadata))
}

// expand is the lease a slot and its text describe, active, with the
// given license and tenant ids.
func expand(s *slot, text string, licenseID, tenantID string) server.Lease {
	return expandWith(s, text, licenseID, tenantID, "")
}

// expandWith is expand with the lease's token hash given (when not ""),
// as the string a caller proved it with: no new one is made.
func expandWith(s *slot, text string, licenseID, tenantID, tokenHash string) server.Lease {
	t := mustParseText(text, s.flags)
	l := server.Lease{
		ID:              t.id,
		LicenseID:       licenseID,
		TenantID:        tenantID,
		TokenHash:       tokenHash,
		Fingerprint:     t.fingerprint,
		User:            t.user,
		Hostname:        t.hostname,
		Metadata:        t.metadata(),
		IdempotencyKey:  t.idem,
		DedupeKey:       t.dedupeKey(s.flags.dedupeKind()),
		State:           server.LeaseActive,
		AcquiredAt:      timeOf(s.acquired),
		LastHeartbeatAt: timeOf(s.beat),
		ExpiresAt:       timeOf(s.deadline),
		Borrowed:        s.borrowed(),
		Feature:         t.feature,
		Version:         t.version,
		Reservation:     t.reservation,
		Lingering:       s.lingering(),
	}
	switch {
	case tokenHash != "":
	case s.flags&flagTokenText != 0:
		l.TokenHash = t.token
	default:
		l.TokenHash = hexToken(&s.token)
	}
	return l
}

func hexToken(b *[32]byte) string {
	const digits = "0123456789abcdef"
	var h [64]byte
	for i, c := range b {
		h[2*i], h[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(h[:])
}

// cmpAcquired orders slots by acquisition, then id.
func cmpAcquired(a, b *slot, aid, bid string) int {
	return cmp.Or(cmp.Compare(a.acquired, b.acquired), strings.Compare(aid, bid))
}
