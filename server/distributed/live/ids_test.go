package live

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestLeaseKeysAreCompactAndDistinct: a canonical lease id is stored as
// its 12 bytes and read back as itself; any other (UTF-8) id round-trips
// too, and no two ids share a key (a 12-byte id of text goes behind 0xFF).
func TestLeaseKeysAreCompactAndDistinct(t *testing.T) {
	t.Parallel()
	canonical := server.NewID(server.PrefixLeaseID)
	require.Len(t, leaseKey(canonical), 12, "a canonical id is 12 bytes in Redis")
	ids := []string{
		canonical,
		server.NewID(server.PrefixLeaseID),
		"lease-1",                        // tests' own ids
		"twelve-chars",                   // 12 bytes of text: behind 0xFF
		leaseKey(canonical),              // the binary form itself, given as an id
		"lse_" + strings.Repeat("A", 24), // upper-case hex: not canonical
		"lse_" + strings.Repeat("0", 23), // too short
		"",
	}
	seen := map[string]string{}
	for _, id := range ids {
		k := leaseKey(id)
		require.Equal(t, id, leaseIDOf(k), "round trip of %q", id)
		if other, dup := seen[k]; dup {
			t.Fatalf("ids %q and %q share the key %q", other, id, k)
		}
		seen[k] = id
	}
}

// TestLeaseKeysKeepTheOrderOfCanonicalIDs: due.lua pages by (deadline,
// key); for canonical ids the keys sort as the ids do.
func TestLeaseKeysKeepTheOrderOfCanonicalIDs(t *testing.T) {
	t.Parallel()
	for range 1000 {
		a, b := server.NewID(server.PrefixLeaseID), server.NewID(server.PrefixLeaseID)
		require.Equal(t, strings.Compare(a, b), strings.Compare(leaseKey(a), leaseKey(b)), "%s vs %s", a, b)
	}
}

// TestTokenKeys: a token hash is kept as its first 16 bytes; two tokens'
// keys differ when their hashes do, and anything that is not a hash never
// matches one.
func TestTokenKeys(t *testing.T) {
	t.Parallel()
	h := server.HashSecret("slt_secret")
	require.Len(t, tokenKey(h), 16)
	require.NotEqual(t, tokenKey(h), tokenKey(server.HashSecret("slt_other")))
	require.Equal(t, tokenKey(h), tokenKey(h))
	for _, garbage := range []string{"", "wrong", strings.ToUpper(h), h[:63], tokenKey(h)} {
		require.NotEqual(t, tokenKey(h), tokenKey(garbage), "%q", garbage)
	}
}
