package embedded

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// sampleLeases covers every way a lease's fields are kept: each dedupe
// kind, a token hash that is not hex, metadata, borrowing, a site-policy
// reservation, every state.
func sampleLeases() []leaseRecord {
	at := time.Date(2030, 1, 2, 10, 0, 0, 123456789, time.UTC)
	base := server.Lease{
		ID: "lse_0123456789abcdef01234567", LicenseID: "lic_1", TenantID: "default",
		TokenHash: server.HashSecret("slt_x"), Fingerprint: "machine-00000001-user@example.com",
		State: server.LeaseActive, AcquiredAt: at, LastHeartbeatAt: at.Add(time.Minute), ExpiresAt: at.Add(7 * time.Minute),
	}
	with := func(f func(*server.Lease)) server.Lease {
		l := base
		f(&l)
		return l
	}
	return []leaseRecord{
		{Lease: base, Rev: 1},
		{Lease: with(func(l *server.Lease) { l.DedupeKey = "fp:" + l.Fingerprint }), Rev: 2},
		{Lease: with(func(l *server.Lease) { l.User, l.DedupeKey = "ann", "user:ann" }), Rev: 300},
		{Lease: with(func(l *server.Lease) { l.Hostname, l.DedupeKey = "host-1", "host:host-1" }), Rev: 1 << 40},
		{Lease: with(func(l *server.Lease) { l.DedupeKey = "fp:someone-else" }), Rev: 3},
		{Lease: with(func(l *server.Lease) { l.TokenHash = "new" }), Rev: 4},
		{Lease: with(func(l *server.Lease) { l.TokenHash = strings.ToUpper(server.HashSecret("slt_y")) }), Rev: 4},
		{Lease: with(func(l *server.Lease) {
			l.IdempotencyKey, l.Metadata = "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", map[string]string{"os": "linux", "": "", "build": "é"}
		}), Rev: 5},
		{Lease: with(func(l *server.Lease) { l.Borrowed, l.ExpiresAt = true, at.Add(30*24*time.Hour) }), Rev: 6},
		{Lease: with(func(l *server.Lease) { l.Reservation = "r:group\x00night" }), Rev: 10},
		{Lease: with(func(l *server.Lease) {
			l.Feature, l.Version, l.Reservation, l.State, l.EndedAt = "render", "2025", "r:host\x00ws1", server.LeaseReleased, at.Add(time.Hour)
		}), Rev: 11},
		{Lease: with(func(l *server.Lease) { l.State, l.EndedAt = server.LeaseReleased, at.Add(time.Hour) }), Rev: 7},
		{Lease: with(func(l *server.Lease) { l.State, l.EndedAt = server.LeaseExpired, at.Add(time.Hour) }), Rev: 8},
		{Lease: with(func(l *server.Lease) {
			l.State, l.EndedAt, l.AcquiredAt = server.LeaseRevoked, at.Add(time.Hour), time.Unix(-5, 0).UTC()
		}), Rev: 9},
	}
}

func TestHistoryRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, rec := range sampleLeases() {
		v, err := encodeHistory(rec)
		require.NoError(t, err)
		require.Equal(t, byte(historyRecordV1), v[0])
		got, err := decodeHistory([]byte(rec.ID), v)
		require.NoError(t, err)
		require.Equal(t, rec, got)
		requireRev(t, rec.Rev, v)
	}
}

func TestActiveRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, rec := range sampleLeases() {
		if rec.State != server.LeaseActive {
			continue
		}
		s, text := compact(&rec.Lease, rec.Rev)
		k, v := activeKey(rec.LicenseID, s.acquired, rec.ID), appendActive(nil, &s, text)
		lic, id, got, gotText, err := decodeActive(k, v, nil)
		require.NoError(t, err)
		require.Equal(t, rec.LicenseID, string(lic))
		require.Equal(t, rec.ID, string(id))
		require.Equal(t, text, string(gotText))
		require.Equal(t, s, got)
		l, err := activeLease(k, v, rec.TenantID)
		require.NoError(t, err)
		require.Equal(t, rec.Lease, l)
		requireRev(t, rec.Rev, v)
	}
}

func requireRev(t *testing.T, want uint64, record []byte) {
	t.Helper()
	rev, err := recordRev(record)
	require.NoError(t, err)
	require.Equal(t, want, rev)
}

// Schema 1 wrote JSON: it reads back as it was written.
func TestHistoryReadsSchema1JSON(t *testing.T) {
	t.Parallel()
	for _, rec := range sampleLeases() {
		got, err := decodeHistory([]byte(rec.ID), encode(rec))
		require.NoError(t, err)
		require.Equal(t, rec, got)
	}
}

// A damaged record is an error naming the field, never a panic.
func TestDamagedRecordsNameTheField(t *testing.T) {
	t.Parallel()
	rec := sampleLeases()[7]
	hist, err := encodeHistory(rec)
	require.NoError(t, err)
	s, text := compact(&rec.Lease, rec.Rev)
	key, active := activeKey(rec.LicenseID, s.acquired, rec.ID), appendActive(nil, &s, text)

	for _, tc := range []struct {
		name string
		v    []byte
		want string
	}{
		{"empty", nil, "kind: truncated"},
		{"unknown kind", []byte{0x07, 1, 2}, "kind: not a lease record"},
		{"cut in the header", hist[:5], "acquired_at: truncated"},
		{"unknown state", append([]byte{historyRecordV1, 9}, hist[2:]...), "state: unknown"},
		{"cut in the token", hist[:len(hist)-len(textWithoutID(text))-3], "token_hash: truncated"},
		{"cut in the metadata", hist[:len(hist)-2], "metadata"},
		{"trailing bytes", append(hist[:len(hist):len(hist)], 0), "metadata: trailing bytes"},
	} {
		_, err := decodeHistory([]byte(rec.ID), tc.v)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.ErrorContains(t, err, rec.ID, tc.name)
	}

	for _, tc := range []struct {
		name string
		k, v []byte
		want string
	}{
		{"key without a license", []byte("nolicense"), active, "key: malformed"},
		{"key cut in the time", key[:len(rec.LicenseID)+3], active, "key: malformed"},
		{"history record", key, hist, "kind: not an active lease record"},
		{"cut", key, active[:len(active)-4], "metadata"},
	} {
		_, _, _, _, err := decodeActive(tc.k, tc.v, nil)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

// FuzzLeaseRecords: any bytes either decode, to a lease that encodes and
// decodes back to itself, or fail with an error; nothing panics.
func FuzzLeaseRecords(f *testing.F) {
	for _, rec := range sampleLeases() {
		hist, err := encodeHistory(rec)
		require.NoError(f, err)
		s, text := compact(&rec.Lease, rec.Rev)
		f.Add(hist, activeKey(rec.LicenseID, s.acquired, rec.ID), appendActive(nil, &s, text))
	}
	f.Add([]byte(`{"id":"x","state":"released","rev":3}`), []byte("lic\x00\x00\x00\x00\x00\x00\x00\x00\x01id"), []byte{activeRecordV1})
	f.Fuzz(func(t *testing.T, hist, key, active []byte) {
		_, _ = recordRev(hist)
		_, _ = recordRev(active)
		if rec, err := decodeHistory([]byte("lse_fuzz"), hist); err == nil && (len(hist) == 0 || hist[0] != '{') {
			v, err := encodeHistory(rec)
			require.NoError(t, err)
			again, err := decodeHistory([]byte("lse_fuzz"), v)
			require.NoError(t, err)
			require.Equal(t, rec, again)
		}
		lic, _, s, text, err := decodeActive(key, active, nil)
		if err != nil {
			return
		}
		l := expand(&s, string(text), string(lic), "tenant")
		s2, text2 := compact(&l, s.rev)
		s2.acquired = s.acquired // the key holds it
		l2, err := activeLease(key, appendActive(nil, &s2, text2), "tenant")
		require.NoError(t, err)
		require.Equal(t, l, l2)
	})
}
