package embedded

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Buckets. Records are JSON values, but for leases (record.go); index
// buckets have empty values and keys built so that a cursor walks them in
// the order the API lists them.
var (
	bucketMeta           = []byte("meta")
	bucketTenants        = []byte("tenants")         // tenantID -> Tenant
	bucketAPIKeys        = []byte("apikeys")         // keyID -> APIKey
	bucketAPIKeysTenant  = []byte("apikeys_tenant")  // tenantID 0 created id -> ""
	bucketAPIKeysHash    = []byte("apikeys_hash")    // secretHash -> keyID
	bucketLicenses       = []byte("licenses")        // licenseID -> licenseRecord
	bucketLicensesTenant = []byte("licenses_tenant") // tenantID 0 created id -> "" (undeleted only)
	bucketLeases         = []byte("leases")          // leaseID -> ended lease's record (schema 1: every lease, JSON)
	bucketLeasesLicense  = []byte("leases_license")  // licenseID 0 acquired id -> "" (ended leases; schema 1: every lease)
	bucketActiveLeases   = []byte("active_leases")   // licenseID 0 acquired id -> active lease's record (Open reads only these)
	bucketLeaseCounts    = []byte("lease_counts")    // licenseID -> uint64 leases ever acquired
	bucketUsage          = []byte("usage_events")    // licenseID 0 ended id -> UsageEvent
	bucketCleanupLicense = []byte("cleanup_license") // licenseID 0 cleaned id -> CleanupEvent
	bucketCleanupTenant  = []byte("cleanup_tenant")  // tenantID 0 cleaned id -> CleanupEvent
	bucketAudit          = []byte("audit")           // tenantID 0 at id -> AuditEntry
	// Buckets added after schema 1: created (and filled from the older
	// buckets) by the first Open that lacks them, not required of a backup.
	bucketUsageTenant = []byte("usage_tenant")   // tenantID 0 ended id -> UsageEvent
	bucketSeatEvents  = []byte("seat_events")    // licenseID 0 at id -> SeatEvent (denials, waits)
	bucketSigningKeys = []byte("signing_keys")   // tenantID 0 created kid -> SigningKey (signingkeys.go)
	bucketReturned    = []byte("returned_certs") // leaseID -> ReturnedCertificate (returned.go)
	bucketGrants      = []byte("grants")         // grantID -> grantRecord (grants.go)
	bucketGroups      = []byte("groups")         // tenantID 0 name -> Group (policy.go)
	addedBuckets      = append([]addedBucket{
		{bucketUsageTenant, fillUsageTenant}, {bucketSeatEvents, nil}, {bucketSigningKeys, nil}, {bucketReturned, nil},
		{bucketGrants, nil}, {bucketGroups, nil},
	}, webhookBuckets...)

	// Schema 1 kept the ids of the active leases here (leaseID -> ""),
	// their records in bucketLeases; schema 2 moved them (migrate.go).
	bucketActiveIDs = []byte("leases_active")

	// The buckets a database of each schema has (and a backup must).
	schemaBuckets = map[uint64][][]byte{
		1: {
			bucketMeta, bucketTenants, bucketAPIKeys, bucketAPIKeysTenant, bucketAPIKeysHash,
			bucketLicenses, bucketLicensesTenant, bucketLeases, bucketLeasesLicense, bucketActiveIDs,
			bucketLeaseCounts, bucketUsage, bucketCleanupLicense, bucketCleanupTenant, bucketAudit,
		},
		2: {
			bucketMeta, bucketTenants, bucketAPIKeys, bucketAPIKeysTenant, bucketAPIKeysHash,
			bucketLicenses, bucketLicensesTenant, bucketLeases, bucketLeasesLicense, bucketActiveLeases,
			bucketLeaseCounts, bucketUsage, bucketCleanupLicense, bucketCleanupTenant, bucketAudit,
			bucketUsageTenant, bucketSeatEvents, bucketSigningKeys,
		},
	}
	allBuckets = schemaBuckets[schemaVersion]

	// appended: buckets whose keys arrive in order (a scope, then the
	// time of the write): bbolt fills their pages before splitting them,
	// instead of leaving them half full (its default suits random keys).
	appended = map[string]bool{
		string(bucketActiveLeases): true, string(bucketUsage): true, string(bucketUsageTenant): true,
		string(bucketCleanupLicense): true, string(bucketCleanupTenant): true, string(bucketAudit): true,
		string(bucketSeatEvents): true, string(bucketLicensesTenant): true, string(bucketAPIKeysTenant): true,
		string(bucketSigningKeys): true,
	}
)

// appendedFill is the fill percent of appended buckets: a little room
// for keys that arrive slightly out of order (writers whose times
// interleave across one group commit).
const appendedFill = 0.9

// writable returns a bucket of a write transaction, set to fill its pages
// as its keys arrive (appended).
func writable(tx *bolt.Tx, name []byte) *bolt.Bucket {
	b := tx.Bucket(name)
	if appended[string(name)] {
		b.FillPercent = appendedFill
	}
	return b
}

// prefix is scope followed by a NUL, which no id contains, so that one
// scope's keys never run into another's ("a" vs "ab").
func prefix(scope string) []byte {
	return append([]byte(scope), 0)
}

// timeKey is prefix(scope) + big-endian nanoseconds + id: ordered by time,
// then id, within the scope.
func timeKey(scope string, t time.Time, id string) []byte {
	k := prefix(scope)
	k = binary.BigEndian.AppendUint64(k, nanos(t))
	return append(k, id...)
}

// nanos is t in Unix nanoseconds, clamped to what a key can order: times
// before 1970 (such as the zero time) sort first.
func nanos(t time.Time) uint64 {
	if t.Before(time.Unix(0, 0)) {
		return 0
	}
	return uint64(t.UnixNano())
}

// idFromTimeKey returns the id part of a timeKey with the given prefix length.
func idFromTimeKey(k []byte, prefixLen int) string {
	return string(k[prefixLen+8:])
}

// timeFromTimeKey returns the time part of a timeKey with the given prefix length.
func timeFromTimeKey(k []byte, prefixLen int) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k[prefixLen:prefixLen+8]))).UTC()
}

// encodeToken makes an opaque page token from the last key of a page.
func encodeToken(lastKey []byte) string {
	return base64.RawURLEncoding.EncodeToString(lastKey)
}

// decodeToken returns the key a page token stands for; it must lie within
// pfx so that a token of one list cannot browse another.
func decodeToken(token string, pfx []byte) ([]byte, error) {
	if token == "" {
		return nil, nil
	}
	k, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !bytes.HasPrefix(k, pfx) {
		return nil, errBadToken
	}
	return k, nil
}

var errBadToken = server.Invalid("page_token", "invalid page token")

func uint64Bytes(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func bytesUint64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
