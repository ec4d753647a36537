package distributed

import (
	"encoding/binary"
	"errors"
	"maps"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/cache"
)

// leaseInfo is what never changes about a lease: cached per process
// (encoded) so that heartbeats need no PostgreSQL read. Each one is built
// for one use (decoded from the cache, or of a lease just read), so that
// lease hands its metadata on without copying it.
type leaseInfo struct {
	LicenseID      string
	TenantID       string
	Fingerprint    string
	User           string
	Hostname       string
	Metadata       map[string]string
	IdempotencyKey string
	DedupeKey      string
	AcquiredAt     time.Time
	Borrowed       bool
	Feature        string // a grant's lease: what it asked for
	Version        string
	Reservation    string // the site-policy reservation it took ("" none)
}

func infoOf(l *server.Lease) *leaseInfo {
	return &leaseInfo{
		LicenseID: l.LicenseID, TenantID: l.TenantID, Fingerprint: l.Fingerprint, User: l.User,
		Hostname: l.Hostname, Metadata: l.Metadata, IdempotencyKey: l.IdempotencyKey,
		DedupeKey: l.DedupeKey, AcquiredAt: l.AcquiredAt, Borrowed: l.Borrowed,
		Feature: l.Feature, Version: l.Version, Reservation: l.Reservation,
	}
}

// lease builds an active lease from its fixed fields and live values.
func (i *leaseInfo) lease(id, tokenHash string, hb, deadline time.Time) server.Lease {
	return server.Lease{
		ID: id, LicenseID: i.LicenseID, TenantID: i.TenantID, TokenHash: tokenHash,
		Fingerprint: i.Fingerprint, User: i.User, Hostname: i.Hostname, Metadata: i.Metadata,
		IdempotencyKey: i.IdempotencyKey, DedupeKey: i.DedupeKey, State: server.LeaseActive,
		AcquiredAt: i.AcquiredAt, LastHeartbeatAt: hb, ExpiresAt: deadline, Borrowed: i.Borrowed,
		Feature: i.Feature, Version: i.Version, Reservation: i.Reservation,
	}
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// DefaultLeaseCacheSize is how many leases' fixed fields a process caches
// by default (Options.LeaseCacheSize). Heartbeats of the leases beyond it
// read PostgreSQL (one row by primary key) until they are cached again.
const DefaultLeaseCacheSize = 2_000_000

// leaseInfoCache holds the leaseInfo of leases, encoded in a cache.Compact:
// no pointer per lease for the garbage collector to scan (a million
// cached leases cost a few milliseconds of marking, not hundreds), and
// about half the memory of the structs and strings.
type leaseInfoCache struct{ c *cache.Compact }

func newLeaseInfoCache(size int) leaseInfoCache {
	return leaseInfoCache{cache.NewCompact(size)}
}

// Put caches the fixed fields of a lease.
func (lc leaseInfoCache) Put(leaseID string, i *leaseInfo) { lc.c.Put(leaseID, i.appendTo(nil)) }

// Get returns the cached fixed fields of a lease: its strings share one
// allocation.
func (lc leaseInfoCache) Get(leaseID string) (*leaseInfo, bool) {
	b, ok := lc.c.Get(leaseID)
	if !ok {
		return nil, false
	}
	i, err := decodeLeaseInfo(b)
	if err != nil { // never: the cache holds what appendTo wrote
		return nil, false
	}
	return i, true
}

// The flags of an encoded leaseInfo.
const (
	infoBorrowed      = 1 << iota
	infoDedupeIsFP    // DedupeKey is "fp:" + Fingerprint (the default strategy's)
	infoNoAcquireTime // AcquiredAt is the zero time
	infoFeature       // Feature and Version follow the dedupe key (a grant's lease)
	infoReservation   // Reservation follows (a lease that took a reserved seat)
)

// appendTo encodes i: flags, AcquiredAt (UTC unix nanoseconds), then the
// strings, each its length (uvarint) and bytes (Feature and Version only
// for a grant's lease), and the metadata (count, then key and value of
// each pair, in no particular order). Reservation, when set, comes
// between the strings and the metadata.
func (i *leaseInfo) appendTo(b []byte) []byte {
	var flags byte
	if i.Borrowed {
		flags |= infoBorrowed
	}
	dedupe := i.DedupeKey
	if len(dedupe) == 3+len(i.Fingerprint) && dedupe[:3] == "fp:" && dedupe[3:] == i.Fingerprint {
		flags |= infoDedupeIsFP
		dedupe = ""
	}
	var at int64
	if i.AcquiredAt.IsZero() {
		flags |= infoNoAcquireTime
	} else {
		at = i.AcquiredAt.UnixNano()
	}
	if i.Feature != "" || i.Version != "" {
		flags |= infoFeature
	}
	if i.Reservation != "" {
		flags |= infoReservation
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, at)
	for _, s := range [...]string{i.LicenseID, i.TenantID, i.Fingerprint, i.User, i.Hostname, i.IdempotencyKey, dedupe} {
		b = appendString(b, s)
	}
	if flags&infoFeature != 0 {
		b = appendString(appendString(b, i.Feature), i.Version)
	}
	if flags&infoReservation != 0 {
		b = appendString(b, i.Reservation)
	}
	b = binary.AppendUvarint(b, uint64(len(i.Metadata)))
	for k, v := range i.Metadata {
		b = appendString(appendString(b, k), v)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errBadLeaseInfo = errors.New("distributed store: malformed cached lease")

// decodeLeaseInfo reads what appendTo wrote; the strings are substrings
// of s.
func decodeLeaseInfo(s string) (*leaseInfo, error) {
	d := infoDecoder{s: s}
	i := &leaseInfo{}
	flags := d.byte()
	at := d.varint()
	i.Borrowed = flags&infoBorrowed != 0
	if flags&infoNoAcquireTime == 0 {
		i.AcquiredAt = time.Unix(0, at).UTC()
	}
	i.LicenseID, i.TenantID, i.Fingerprint = d.string(), d.string(), d.string()
	i.User, i.Hostname, i.IdempotencyKey, i.DedupeKey = d.string(), d.string(), d.string(), d.string()
	if flags&infoDedupeIsFP != 0 {
		i.DedupeKey = "fp:" + i.Fingerprint
	}
	if flags&infoFeature != 0 {
		i.Feature, i.Version = d.string(), d.string()
	}
	if flags&infoReservation != 0 {
		i.Reservation = d.string()
	}
	if n := d.uvarint(); n > 0 && d.ok {
		i.Metadata = make(map[string]string, min(n, uint64(len(s))))
		for range n {
			k := d.string()
			i.Metadata[k] = d.string()
		}
	}
	if !d.ok || d.s != "" {
		return nil, errBadLeaseInfo
	}
	return i, nil
}

// infoDecoder reads an encoded leaseInfo; ok turns false at the first
// malformed value (and every read after it returns a zero value).
type infoDecoder struct {
	s  string
	ok bool
}

func (d *infoDecoder) byte() byte {
	if d.s == "" {
		d.ok = false
		return 0
	}
	d.ok = true
	b := d.s[0]
	d.s = d.s[1:]
	return b
}

func (d *infoDecoder) uvarint() uint64 {
	var x uint64
	for shift := uint(0); d.ok && shift < 64; shift += 7 {
		if d.s == "" {
			break
		}
		c := d.s[0]
		d.s = d.s[1:]
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	d.ok = false
	return 0
}

func (d *infoDecoder) varint() int64 {
	u := d.uvarint()
	x := int64(u >> 1) //nolint:gosec // zigzag decoding, as binary.Varint
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *infoDecoder) string() string {
	n := d.uvarint()
	if !d.ok || n > uint64(len(d.s)) {
		d.ok = false
		return ""
	}
	out := d.s[:n]
	d.s = d.s[n:]
	return out
}
