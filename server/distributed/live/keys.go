package live

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Keyspace names the Redis keys of one store. Every key of a license
// carries the license id as a hash tag, so that the scripts, which touch
// only the keys of one license, stay within one cluster slot. A grant's
// pool (id <license id>.<8 hex>, server.NewGrantID) has keys of its own
// under its license's hash tag, P{lic}:<hex>:v2:..., so that every pool of
// a license shares one slot and a feature acquisition judges all of them
// in one script (lua/acquire_pools.lua).
type Keyspace struct{ Prefix string }

// layout names the version of the live state's keys and values: the
// lease records, ids and token hashes of layout 2 are compact binary
// (ids.go, lua/common.lua), and live under new names so that no script
// ever reads a record of another layout. A license whose live state is
// still in an older layout has none in this one: it is rebuilt from the
// record on first use, as after a Redis loss, and the rebuild drops the
// old keys (legacyKeys).
const layout = "v2:"

// License returns the keys of a license in the order the scripts expect
// them (lua/common.lua).
func (k Keyspace) License(licenseID string) []string {
	base := k.base(licenseID) + layout
	return []string{
		base + "conf",
		base + "leases",
		base + "deadlines",
		base + "dedupe",
		base + "idem",
		base + "expiring",
		base + "ended",
		base + "borrowed",
	}
}

// base is the prefix of a pool's keys.
func (k Keyspace) base(poolID string) string {
	if i := strings.IndexByte(poolID, '.'); i >= 0 {
		return k.Prefix + "{" + poolID[:i] + "}:" + poolID[i+1:] + ":"
	}
	return k.Prefix + "{" + poolID + "}:"
}

// LiveKeys returns the keys of a license with, last, its incarnation key:
// a random value that state.lua sets once and rebuild.lua requires
// unchanged, so that a rebuild never writes a snapshot read against a
// Redis that has since lost its data (the ends remembered in the ended
// zset went with it).
func (k Keyspace) LiveKeys(licenseID string) []string {
	return append(k.License(licenseID), k.base(licenseID)+layout+"incarnation")
}

// RebuildKeys returns LiveKeys followed by the keys a rebuild writes
// before it switches them in (the staging: its progress hash, then
// leases, deadlines, dedupe, idem and borrowed as License names them),
// then the keys of the previous layout, which the first rebuild drops,
// then the keys of the policy index of the pool's license (Policy).
// state.lua, rebuild.lua and tombstone.lua take them.
func (k Keyspace) RebuildKeys(licenseID string) []string {
	stage := k.base(licenseID) + layout + "stage:"
	pol := k.Policy(licenseID)
	return append(k.LiveKeys(licenseID),
		stage+"progress", stage+"leases", stage+"deadlines", stage+"dedupe", stage+"idem", stage+"borrowed",
		// Layout 1 (seatd before the compact records).
		k.base(licenseID)+"conf", k.base(licenseID)+"leases", k.base(licenseID)+"deadlines",
		k.base(licenseID)+"dedupe", k.base(licenseID)+"idem", k.base(licenseID)+"expiring",
		k.base(licenseID)+"ended", k.base(licenseID)+"borrowed", k.base(licenseID)+"incarnation",
		// The policy index of the pool's license (Policy): a rebuild of
		// any of its pools makes it untrusted (its members stay), the
		// tombstone of the license itself drops it (a grant's leaves it).
		pol[0], pol[1])
}

// Policy returns the keys of the site-policy index of the license a pool
// (the license itself or one of its grants) belongs to: the index, a
// sorted set of the holders of its live leases by scope and identity,
// read by lexicographic range, and its marker, the policy generation the
// index was built for (lua/policy_index.lua, acquire_pools.lua).
func (k Keyspace) Policy(poolID string) []string {
	lic, _, _ := strings.Cut(poolID, ".")
	base := k.Prefix + "{" + lic + "}:" + layout + "pol:"
	return []string{base + "index", base + "built"}
}

// HintShards is how many pieces the expiry hint is split into. Each piece
// is its own hash slot, so that on a Redis Cluster the hint's load spreads
// over the masters instead of landing on one.
const HintShards = 16

// ExpiryOf returns the keys of the piece of the expiry hint that holds a
// license: a sorted set of license ids scored by a time at or before the
// earliest deadline of the leases the license holds (live or expiring),
// and a hash of per-license generations that orders hint changes
// (lua/hint.lua, lua/fixhint.lua). The hint is maintained outside the
// license scripts, so it is only a hint: DueLeases re-checks every license
// under its own script, repairs hints that are too early, and re-derives
// lost ones from PostgreSQL.
func (k Keyspace) ExpiryOf(licenseID string) []string {
	return k.ExpiryShard(HintShardOf(licenseID))
}

// ExpiryShard returns the keys of piece i of the expiry hint.
func (k Keyspace) ExpiryShard(i int) []string {
	tag := fmt.Sprintf("%s{expiry:%02d}:", k.Prefix, i)
	return []string{tag + "due", tag + "gen"}
}

// LegacyExpiry is the one-piece expiry hint of earlier versions, moved
// into the pieces at Open.
func (k Keyspace) LegacyExpiry() []string {
	return []string{k.Prefix + "{expiry}:due", k.Prefix + "{expiry}:gen"}
}

// HintShardOf is the piece of the expiry hint that holds a license.
func HintShardOf(licenseID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(licenseID))
	return int(h.Sum32() % HintShards)
}
