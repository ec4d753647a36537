package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/seatd/seatd/server"
)

// Lease records, schema 2. Both start with a byte that names their kind
// and version (JSON, which schema 1 wrote and readers still take, starts
// with '{'), then share a body:
//
//	uvarint rev, byte flags (slot.flags' low byte), int64 last heartbeat,
//	int64 deadline, the 32-byte token hash unless flagTokenText, then the
//	lease's text without its id (leasetext.go).
//
// An active lease's record (bucketActiveLeases) is keyed by
// activeKey(license, acquired, id), which holds the rest: activeRecordV1,
// body. An ended lease's record (bucketLeases) is keyed by its id:
// historyRecordV1, byte state, int64 acquired, int64 ended, the license
// and tenant ids (uvarint length, bytes), body. Integers are big-endian;
// a zero time is math.MinInt64.
const (
	activeRecordV1  = 0xA1
	historyRecordV1 = 0xB1
)

var states = [...]server.LeaseState{server.LeaseActive, server.LeaseReleased, server.LeaseExpired, server.LeaseRevoked}

func stateByte(st server.LeaseState) (byte, bool) {
	for i, s := range states {
		if s == st {
			return byte(i), true
		}
	}
	return 0, false
}

// activeKey is the key of an active lease's record, the same as its key
// in bucketLeasesLicense once it ends.
func activeKey(licenseID string, acquired int64, id string) []byte {
	return timeKey(licenseID, timeOf(acquired), id)
}

func appendBody(b []byte, s *slot, text string) []byte {
	b = binary.AppendUvarint(b, s.rev)
	b = append(b, byte(s.flags&storedFlags))
	b = binary.BigEndian.AppendUint64(b, uint64(s.beat))
	b = binary.BigEndian.AppendUint64(b, uint64(s.deadline))
	if s.flags&flagTokenText == 0 {
		b = append(b, s.token[:]...)
	}
	return append(b, textWithoutID(text)...)
}

// textWithoutID is a text past its id.
func textWithoutID(text string) string {
	n, k := uvarint(text)
	return text[k+int(n):]
}

// appendActive appends the record of an active lease (its key is
// activeKey).
func appendActive(b []byte, s *slot, text string) []byte {
	return appendBody(append(b, activeRecordV1), s, text)
}

// appendHistory appends the record of a lease that ended at ended in
// state st (its key is its id).
func appendHistory(b []byte, s *slot, text string, st server.LeaseState, ended int64, licenseID, tenantID string) []byte {
	sb, ok := stateByte(st)
	if !ok {
		panic("embedded: unknown lease state " + string(st))
	}
	b = append(b, historyRecordV1, sb)
	b = binary.BigEndian.AppendUint64(b, uint64(s.acquired))
	b = binary.BigEndian.AppendUint64(b, uint64(ended))
	b = appendString(appendString(b, licenseID), tenantID)
	return appendBody(b, s, text)
}

// encodeHistory is the record of an ended lease, from the lease.
func encodeHistory(rec leaseRecord) ([]byte, error) {
	if err := checkTimes(rec.AcquiredAt, rec.LastHeartbeatAt, rec.ExpiresAt, rec.EndedAt); err != nil {
		return nil, fmt.Errorf("lease %s: %w", rec.ID, err)
	}
	if _, ok := stateByte(rec.State); !ok {
		return nil, fmt.Errorf("lease %s: unknown state %q", rec.ID, rec.State)
	}
	s, text := compact(&rec.Lease, rec.Rev)
	return appendHistory(nil, &s, text, rec.State, unixNano(rec.EndedAt), rec.LicenseID, rec.TenantID), nil
}

// body reads the shared body into s and appends the lease's text, with
// id put back in front, to dst.
func body(r *reader[[]byte], s *slot, id, dst []byte) []byte {
	s.rev = r.uvarint("rev")
	// Every bit of the stored byte has a meaning (storedFlags; the last,
	// flagLingering): a new flag needs a new record version.
	s.flags = flags(r.byte("flags"))
	s.beat = r.int64("last_heartbeat_at")
	s.deadline = r.int64("expires_at")
	if s.flags&flagTokenText == 0 {
		copy(s.token[:], r.take("token_hash", 32))
	}
	if r.err != nil {
		return nil
	}
	dst = append(appendString(dst, unsafe.String(unsafe.SliceData(id), len(id))), r.b...)
	r.b = nil
	if _, err := parseText(unsafe.String(unsafe.SliceData(dst), len(dst)), s.flags); err != nil {
		r.fail("text", err.Error())
		return nil
	}
	return dst
}

// splitActiveKey returns the license id, acquisition time and lease id an
// activeKey holds.
func splitActiveKey(k []byte) (licenseID []byte, acquired int64, id []byte, err error) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) < i+1+8 {
		return nil, 0, nil, errors.New("key: malformed")
	}
	ns := binary.BigEndian.Uint64(k[i+1:])
	if ns > math.MaxInt64 {
		return nil, 0, nil, errors.New("key: acquired_at out of range")
	}
	return k[:i], int64(ns), k[i+1+8:], nil
}

// decodeActive reads an active lease's record: the license and lease ids
// of its key (they share k's bytes), its slot (lic unset) and its text,
// appended to dst (a buffer a loop may reuse).
func decodeActive(k, v, dst []byte) (licenseID, id []byte, s slot, text []byte, err error) {
	licenseID, acquired, id, err := splitActiveKey(k)
	if err != nil {
		return nil, nil, slot{}, nil, fmt.Errorf("active lease record: %w", err)
	}
	r := reader[[]byte]{b: v}
	if r.byte("kind") != activeRecordV1 && r.err == nil {
		r.fail("kind", "not an active lease record")
	}
	s.acquired = acquired
	text = body(&r, &s, id, dst)
	if r.err != nil {
		return nil, nil, slot{}, nil, fmt.Errorf("active lease record %s: %w", id, r.err)
	}
	return licenseID, id, s, text, nil
}

// activeLease is the lease an active record holds (for lists that read
// the disk; memory has newer heartbeats).
func activeLease(k, v []byte, tenantID string) (server.Lease, error) {
	lic, _, s, text, err := decodeActive(k, v, nil)
	if err != nil {
		return server.Lease{}, err
	}
	return expand(&s, string(text), string(lic), tenantID), nil
}

// decodeHistory reads an ended lease's record, binary or (schema 1) JSON.
func decodeHistory(id, v []byte) (leaseRecord, error) {
	if len(v) > 0 && v[0] == '{' {
		return decode[leaseRecord](v)
	}
	r := reader[[]byte]{b: v}
	if r.byte("kind") != historyRecordV1 && r.err == nil {
		r.fail("kind", "not a lease record")
	}
	sb := r.byte("state")
	if int(sb) >= len(states) && r.err == nil {
		r.fail("state", "unknown")
	}
	var s slot
	s.acquired = r.int64("acquired_at")
	ended := r.int64("ended_at")
	licenseID, tenantID := string(r.bytes("license_id")), string(r.bytes("tenant_id"))
	text := body(&r, &s, id, nil)
	if r.err != nil {
		return leaseRecord{}, fmt.Errorf("lease record %s: %w", id, r.err)
	}
	l := expand(&s, string(text), licenseID, tenantID)
	l.State, l.EndedAt = states[sb], timeOf(ended)
	return leaseRecord{Lease: l, Rev: s.rev}, nil
}

// recordRev is the rev of a record of either kind (or JSON), read
// without decoding the rest.
func recordRev(v []byte) (uint64, error) {
	if len(v) > 0 && v[0] == '{' {
		rec, err := decode[leaseRecord](v)
		return rec.Rev, err
	}
	r := reader[[]byte]{b: v}
	switch r.byte("kind") {
	case activeRecordV1:
	case historyRecordV1:
		r.byte("state")
		r.int64("acquired_at")
		r.int64("ended_at")
		r.bytes("license_id")
		r.bytes("tenant_id")
	default:
		r.fail("kind", "not a lease record")
	}
	rev := r.uvarint("rev")
	return rev, r.err
}
