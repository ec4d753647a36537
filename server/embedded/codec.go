package embedded

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/seatd/seatd/server"
)

// licenseRecord is a license as stored. Deleted licenses stay so that the
// history of their leases and events keeps its context.
type licenseRecord struct {
	server.License
	Deleted bool `json:"deleted,omitempty"`
}

// leaseRecord is a lease with its rev, as a record holds it (record.go;
// schema 1 wrote it as JSON). Rev orders the writes of one lease: a
// write-behind flush of an older in-memory version never overwrites a
// newer one that a synchronous write already stored.
type leaseRecord struct {
	server.Lease
	Rev uint64 `json:"rev"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain structs of strings, times and maps are encoded.
		panic("embedded: encode: " + err.Error())
	}
	return b
}

func decode[T any](b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// cloneLicense is a license to hand out: nothing of it shared with memory.
func cloneLicense(l server.License) server.License {
	l.Metadata = maps.Clone(l.Metadata)
	l.Grants = slices.Clone(l.Grants)
	l.Policy = clonePolicy(l.Policy)
	return l
}

// readLicense is cloneLicense for reads (GetLicense, LicenseByKey): its
// Policy is shared with memory, which replaces a policy and never changes
// one in place (applyPolicy), so that a read costs nothing of the size of
// the policy's groups; callers treat it as read-only (server.PolicyStore).
func readLicense(l server.License) server.License {
	l.Metadata = maps.Clone(l.Metadata)
	l.Grants = slices.Clone(l.Grants)
	return l
}

// answerLicense is cloneLicense for the hot path: its Grants and Policy
// are shared with memory, which never changes either in place
// (syncGrants, applyPolicy: a change is a new slice, a new Policy).
func answerLicense(l server.License) server.License {
	l.Metadata = maps.Clone(l.Metadata)
	return l
}

// licenseToStore is a license's record: its grants have records of
// their own.
func licenseToStore(l server.License, deleted bool) licenseRecord {
	l.Grants = nil
	return licenseRecord{License: l, Deleted: deleted}
}

// normalize gives a license the shape it has after a round trip through the
// database, so a value read before and after a restart compares equal.
func normalize(l server.License) server.License {
	n, err := decode[server.License](encode(l))
	if err != nil {
		panic("embedded: normalize: " + err.Error())
	}
	return n
}
