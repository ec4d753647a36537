package distributed

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestLeaseInfoEncodingRoundTrips: what the lease cache keeps of a lease
// comes back unchanged, for every shape of its fields.
func TestLeaseInfoEncodingRoundTrips(t *testing.T) {
	at := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for name, i := range map[string]leaseInfo{
		"fingerprint dedupe": {LicenseID: "lic_1", TenantID: "tn_1", Fingerprint: "fp", DedupeKey: "fp:fp", AcquiredAt: at},
		"every field": {LicenseID: "lic_1", TenantID: "tn_1", Fingerprint: "fp", User: "ann", Hostname: "h.example",
			Metadata: map[string]string{"a": "1", "b": "", "ключ": "значение"}, IdempotencyKey: "idem", DedupeKey: "user:ann",
			AcquiredAt: at, Borrowed: true},
		"dedupe like fp but not":  {LicenseID: "lic_1", Fingerprint: "fp", DedupeKey: "fp:fpx", AcquiredAt: at},
		"zero":                    {},
		"a grant's lease":         {LicenseID: "lic_1.0a1b2c3d", Fingerprint: "fp", DedupeKey: "fp:fp", Feature: "render", Version: "2024.2"},
		"any version":             {LicenseID: "lic_1.0a1b2c3d", Feature: "render"},
		"a reserved seat":         {LicenseID: "lic_1", User: "ann", Reservation: "r:group\x00night", Metadata: map[string]string{"a": "1"}},
		"a reserved feature seat": {LicenseID: "lic_1.0a1b2c3d", Feature: "render", Reservation: "r:user\x00ann"},
		"long strings":            {LicenseID: string(make([]byte, 300)), Fingerprint: strings.Repeat("f", 70000), AcquiredAt: at},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeLeaseInfo(string(i.appendTo(nil)))
			require.NoError(t, err)
			require.Equal(t, i, *got)
		})
	}
	_, err := decodeLeaseInfo(string((&leaseInfo{LicenseID: "lic_1"}).appendTo(nil))[:5])
	require.Error(t, err, "a truncated entry")
}

// TestLeaseCacheIsBounded: a store that caches fewer leases than it
// serves answers heartbeats of all of them in full (reading the leases it
// forgot from PostgreSQL) and keeps its cache within the bound.
func TestLeaseCacheIsBounded(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.LeaseCacheSize = 4 })
	lic := mkLicense(t, s, tn.ID, 20, time.Hour)
	type held struct {
		lease server.Lease
		tok   string
	}
	var leases []held
	for i := range 20 {
		res, tok := acq(t, s, lic.Key, fmt.Sprint("fp", i))
		leases = append(leases, held{res.Lease, tok})
	}
	require.LessOrEqual(t, s.leaseInfo.c.Stats().Entries, 4)

	// Another process: nothing cached.
	other := loc.open(t, func(o *Options) { o.LeaseCacheSize = 4 })
	t.Cleanup(func() { _ = other.Close() })
	for range 2 {
		for _, h := range leases {
			l, err := other.Heartbeat(t.Context(), h.lease.ID, server.HashSecret(h.tok))
			require.NoError(t, err)
			want := h.lease
			want.LastHeartbeatAt, want.ExpiresAt = l.LastHeartbeatAt, l.ExpiresAt
			require.Equal(t, want, l)
			require.LessOrEqual(t, other.leaseInfo.c.Stats().Entries, 4)
		}
	}
	st := other.BackgroundStats()
	require.EqualValues(t, 40, st.LeaseCacheMisses, "a cache of 4 first in, first out over 20 leases in turn never hits")
	require.EqualValues(t, 4, st.LeaseCacheSize)
	require.EqualValues(t, 4, st.LeaseCacheEntries)
}
