package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testRetention: PruneRecords removes only history older than the cutoff,
// a batch at a time, never an active lease, and each kind apart.
func testRetention(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	tn := newTenant(t, s)
	lic := newLicense(t, s, tn.ID, with(seats(10), leaseTTL(lapsingTTL(s))))

	// One lease of each end, one still active, one zombie expired by cleanup.
	released, tokR := acquire(t, s, lic, "released", nil)
	release(t, s, released.Lease.ID, tokR)
	revoked, _ := acquire(t, s, lic, "revoked", nil)
	_, err := s.Revoke(t.Context(), tn.ID, revoked.Lease.ID)
	require.NoError(t, err)
	zombie, _ := acquire(t, s, lic, "zombie", nil)
	passDeadlines(t, s, zombie.Lease)
	expired, err := s.ExpireLeases(t.Context(), []server.LeaseRef{{LeaseID: zombie.Lease.ID, LicenseID: lic.ID, ExpiresAt: zombie.Lease.ExpiresAt}})
	require.NoError(t, err)
	require.Len(t, expired, 1)
	// Acquired after the others ended: its deadline is well ahead.
	longLic := newLicense(t, s, tn.ID, with(seats(1), leaseTTL(longTTL)))
	active, tokA := acquire(t, s, longLic, "active", nil)

	old := now().Add(-48 * time.Hour)
	for _, at := range []time.Time{old, old.Add(time.Second), now()} {
		require.NoError(t, s.RecordSeatEvent(t.Context(), server.SeatEvent{
			ID: server.NewID("sev_"), TenantID: tn.ID, LicenseID: lic.ID, Kind: server.SeatDenied, At: at,
		}))
	}
	oldAudit := newAuditEntry(tn.ID, "license.update", lic.ID, old)
	newAudit := newAuditEntry(tn.ID, "license.update", lic.ID, now())
	require.NoError(t, s.AppendAudit(t.Context(), oldAudit))
	require.NoError(t, s.AppendAudit(t.Context(), newAudit))

	prune := func(kind server.RecordKind, before time.Time, limit int) int {
		t.Helper()
		n, err := s.PruneRecords(t.Context(), kind, before, limit)
		require.NoError(t, err, "prune %s", kind)
		return n
	}

	// A cutoff before everything removes nothing.
	for _, kind := range server.RecordKinds {
		require.Zero(t, prune(kind, old.Add(-time.Hour), 100), "%s before everything", kind)
	}
	require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 3)

	// With the record failing, nothing is removed (invariant 6). The
	// cutoff is after every end, on any store's clock (passDeadlines may
	// have moved it an hour ahead).
	cutoff := now().Add(48 * time.Hour)
	withFault(t, faultsOf(t, s), FaultRecord, func() {
		for _, kind := range server.RecordKinds {
			_, err := s.PruneRecords(t.Context(), kind, cutoff, 100)
			requireUnavailable(t, err, "PruneRecords "+string(kind))
		}
	})
	require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 3)
	require.Len(t, cleanupEvents(t, s, tn.ID, lic.ID), 1)

	// Ended leases, one batch of 2 then the rest; the active lease stays.
	require.Equal(t, 2, prune(server.RecordLeases, cutoff, 2), "a full batch")
	require.Equal(t, 1, prune(server.RecordLeases, cutoff, 2), "the rest: a short batch")
	require.Zero(t, prune(server.RecordLeases, cutoff, 2), "nothing left")
	for _, id := range []string{released.Lease.ID, revoked.Lease.ID, zombie.Lease.ID} {
		_, err := s.GetLease(t.Context(), tn.ID, id)
		requireCode(t, err, server.ENOTFOUND, "", "pruned lease %s", id)
	}
	require.Empty(t, usageEvents(t, s, tn.ID, lic.ID), "usage events go with their leases")
	got := getLease(t, s, tn.ID, active.Lease.ID)
	require.Equal(t, server.LeaseActive, got.State, "an active lease is never pruned")
	heartbeat(t, s, active.Lease.ID, tokA)
	leases, _, err := s.ListLeases(t.Context(), tn.ID, lic.ID, "", server.Page{})
	require.NoError(t, err)
	require.Empty(t, leases)
	// The cleanup event is a kind of its own: still there.
	require.Len(t, cleanupEvents(t, s, tn.ID, lic.ID), 1)
	require.Equal(t, 1, prune(server.RecordCleanupEvents, cutoff, 100))
	require.Empty(t, cleanupEvents(t, s, tn.ID, lic.ID))

	// Seat events and audit entries: only those older than the cutoff.
	dayAgo := now().Add(-24 * time.Hour)
	require.Equal(t, 2, prune(server.RecordSeatEvents, dayAgo, 100))
	require.Zero(t, prune(server.RecordSeatEvents, dayAgo, 100))
	require.Equal(t, 1, prune(server.RecordAudit, dayAgo, 100))
	entries := listAudit(t, s, tn.ID, 100)
	requireAudit(t, []server.AuditEntry{newAudit}, only(entries, []server.AuditEntry{oldAudit, newAudit}))

	_, err = s.PruneRecords(t.Context(), "sessions", cutoff, 100)
	requireCode(t, err, server.EINVALID, "", "an unknown kind")
}
