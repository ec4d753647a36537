package live

import (
	"encoding/hex"
	"strings"
)

// Lease ids and token hashes are kept in Redis in a compact binary form
// (layout 2): a lease id is stored three times per lease (the leases hash,
// the deadlines zset, the dedupe hash) and a token hash once, and at a
// million leases their text forms cost about a quarter of the live
// state's memory. Only this package sees the binary forms: every id that
// goes into a script is converted by leaseKey and every id a script
// returns by leaseIDOf.

// idPrefix and idHexLen make the canonical lease id: server.NewID("lse_"),
// the prefix and 24 lowercase hex digits (12 random bytes).
const (
	idPrefix  = "lse_"
	idHexLen  = 24
	idBinLen  = idHexLen / 2
	otherMark = "\xff"
)

// leaseKey is a lease id as the live state stores it: a canonical id as
// its 12 bytes; any other id as itself, or, if it is exactly 12 bytes
// long, behind the byte 0xFF (which makes it 13 bytes), so that two
// different ids never share a key. Ids are UTF-8 (protobuf strings: the
// API refuses anything else), which never holds 0xFF.
func leaseKey(id string) string {
	if len(id) == len(idPrefix)+idHexLen && strings.HasPrefix(id, idPrefix) && isLowerHex(id[len(idPrefix):]) {
		b, _ := hex.DecodeString(id[len(idPrefix):])
		return string(b)
	}
	if len(id) == idBinLen {
		return otherMark + id
	}
	return id
}

// leaseIDOf is the lease id of a key leaseKey made.
func leaseIDOf(key string) string {
	switch {
	case len(key) == idBinLen:
		return idPrefix + hex.EncodeToString([]byte(key))
	case len(key) == idBinLen+1 && key[:1] == otherMark:
		return key[1:]
	}
	return key
}

// LeaseKey is leaseKey for tests that read the live state themselves.
func LeaseKey(id string) string { return leaseKey(id) }

// tokenLen is how much of a token's SHA-256 the live state keeps: 128
// bits. The token is a 256-bit secret; finding another whose hash shares
// these 128 bits is a 2^128 search, far beyond any guessing the rate
// limits allow. The record keeps the whole hash.
const tokenLen = 16

// tokenKey is a token hash (hex SHA-256, server.HashSecret) as the live
// state stores it: its first 16 bytes. Anything that is not such a hash
// (a caller's garbage) keeps its own text, of another length unless it is
// 16 bytes long, which then goes behind 0xFF: it never matches a stored
// token.
func tokenKey(hash string) string {
	if len(hash) == 64 && isLowerHex(hash) {
		b, _ := hex.DecodeString(hash[:2*tokenLen])
		return string(b)
	}
	if len(hash) == tokenLen {
		return otherMark + hash
	}
	return hash
}

func isLowerHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// leaseKeys converts ids to script arguments (leaseKey of each).
func leaseKeys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = leaseKey(id)
	}
	return out
}
