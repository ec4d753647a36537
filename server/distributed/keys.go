package distributed

// keyspace names the Redis keys of one store. Every key of a license
// carries the license id as a hash tag, so that the scripts, which touch
// only the keys of one license, stay within one cluster slot.
type keyspace struct{ prefix string }

// license returns the keys of a license in the order the scripts expect
// them (lua/common.lua).
func (k keyspace) license(licenseID string) []string {
	base := k.prefix + "{" + licenseID + "}:"
	return []string{
		base + "conf",
		base + "leases",
		base + "deadlines",
		base + "dedupe",
		base + "idem",
		base + "expiring",
		base + "ended",
	}
}

// expiry returns the keys of the global expiry hint: a sorted set of
// license ids scored by a time at or before the earliest deadline of the
// leases the license holds (live or expiring), and a hash of per-license
// generations that orders hint changes (lua/hint.lua, lua/fixhint.lua).
// The hint is maintained outside the license scripts, so it is only a
// hint: DueLeases re-checks every license under its own script, repairs
// hints that are too early, and re-derives lost ones from PostgreSQL.
func (k keyspace) expiry() []string {
	return []string{k.prefix + "{expiry}:due", k.prefix + "{expiry}:gen"}
}
