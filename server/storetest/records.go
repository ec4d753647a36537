package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

func newAuditEntry(tenantID, action, resourceID string, at time.Time) server.AuditEntry {
	return server.AuditEntry{
		ID:         server.NewID("aud_"),
		TenantID:   tenantID,
		Actor:      "operator",
		Action:     action,
		Resource:   "license",
		ResourceID: resourceID,
		At:         at,
	}
}

// only keeps the entries with the given ids, in list order.
func only(entries []server.AuditEntry, want []server.AuditEntry) []server.AuditEntry {
	ids := map[string]bool{}
	for _, e := range want {
		ids[e.ID] = true
	}
	var out []server.AuditEntry
	for _, e := range entries {
		if ids[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

func requireAudit(t *testing.T, want, got []server.AuditEntry) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.ID, g.ID, "audit entry %d", i)
		require.Equal(t, w.TenantID, g.TenantID)
		require.Equal(t, w.Actor, g.Actor)
		require.Equal(t, w.Action, g.Action)
		require.Equal(t, w.Resource, g.Resource)
		require.Equal(t, w.ResourceID, g.ResourceID)
		requireMap(t, w.Details, g.Details)
		requireSameTime(t, w.At, g.At)
	}
}

func testAudit(t *testing.T, newBackend Backend) {
	t.Run("AppendAndListOldestFirstPerTenant", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		ta, tb := newTenant(t, s), newTenant(t, s)
		base := now()
		var wantA, wantB []server.AuditEntry
		for i := range 5 {
			e := newAuditEntry(ta.ID, "license.create", server.NewID(server.PrefixLicenseID), base.Add(time.Duration(i)*time.Millisecond))
			if i == 2 {
				e.Actor = "apikey:key_123"
				e.Details = map[string]string{"seats": "10", "name": "CAD"}
			}
			require.NoError(t, s.AppendAudit(t.Context(), e))
			wantA = append(wantA, e)
			if i < 2 {
				e := newAuditEntry(tb.ID, "license.delete", server.NewID(server.PrefixLicenseID), base.Add(time.Duration(i)*time.Millisecond))
				require.NoError(t, s.AppendAudit(t.Context(), e))
				wantB = append(wantB, e)
			}
		}

		gotA := listAudit(t, s, ta.ID, 2)
		require.True(t, slices.IsSortedFunc(gotA, func(a, b server.AuditEntry) int { return a.At.Compare(b.At) }), "oldest first")
		requireAudit(t, wantA, only(gotA, wantA))
		require.Empty(t, only(gotA, wantB), "tenant A sees B's entries")
		requireAudit(t, wantA, only(listAudit(t, s, ta.ID, 0), wantA))
		gotB := listAudit(t, s, tb.ID, 1)
		requireAudit(t, wantB, only(gotB, wantB))
		require.Empty(t, only(gotB, wantA), "tenant B sees A's entries")
		for _, e := range gotB {
			require.Equal(t, tb.ID, e.TenantID)
		}
	})
}

// testPersistence: DESIGN "a restart loses no license, lease, usage or audit
// record". Close flushes write-behind heartbeats.
func testPersistence(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	w.run("EverythingSurvivesReopen", func(t *testing.T) {
		open := newBackend(t)
		s1 := openReopenable(t, open)
		tn := newTenant(t, s1)
		apiKey := server.APIKey{
			ID: server.NewID(server.PrefixAPIKeyID), TenantID: tn.ID, Name: "ci",
			SecretHash: server.HashSecret(server.NewSecret(server.PrefixAPISecret)), CreatedAt: now(),
		}
		_, err := s1.CreateAPIKey(t.Context(), apiKey)
		require.NoError(t, err)
		lic := newLicense(t, s1, tn.ID, func(l *server.License) {
			l.Seats, l.RevivalWindow, l.Metadata = 3, 10*time.Second, map[string]string{"tier": "pro"}
		})
		short := newLicense(t, s1, tn.ID, with(seats(1), leaseTTL(shortTTL)))

		// An expired and cleaned-up lease.
		z, _ := acquire(t, s1, short, "zombie", nil)
		passDeadline(t, s1, z.Lease.ExpiresAt)
		require.Equal(t, []string{z.Lease.ID}, leaseIDs(expireAllDue(t, s1)))
		zl := getLease(t, s1, tn.ID, z.Lease.ID)

		// Live leases, one with a rotated token, and a released one.
		a, tokA := acquire(t, s1, lic, "a", nil)
		b1, tokB1 := acquire(t, s1, lic, "b", nil)
		b2, tokB2 := acquire(t, s1, lic, "b", nil)
		require.Equal(t, b1.Lease.ID, b2.Lease.ID)
		c, tokC := acquire(t, s1, lic, "c", nil)
		rc := release(t, s1, c.Lease.ID, tokC)

		var audit []server.AuditEntry
		for i := range 3 {
			e := newAuditEntry(tn.ID, "license.update", lic.ID, now().Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, s1.AppendAudit(t.Context(), e))
			audit = append(audit, e)
		}
		usageLic, usageShort := usageEvents(t, s1, tn.ID, lic.ID), usageEvents(t, s1, tn.ID, short.ID)
		cleanShort := cleanupEvents(t, s1, tn.ID, short.ID)
		auditBefore := listAudit(t, s1, tn.ID, 100)
		require.Len(t, usageLic, 1)
		require.Len(t, usageShort, 1)
		require.Len(t, cleanShort, 1)

		// The last write before Close is a heartbeat: Close must flush it.
		time.Sleep(20 * time.Millisecond)
		hbA := heartbeat(t, s1, a.Lease.ID, tokA)
		require.True(t, hbA.ExpiresAt.After(a.Lease.ExpiresAt))
		require.NoError(t, s1.Close())

		s := openWith(t, open)
		gotTenant, err := s.GetTenant(t.Context(), tn.ID)
		require.NoError(t, err)
		require.Equal(t, tn.Name, gotTenant.Name)
		gotKey, err := s.APIKeyBySecretHash(t.Context(), apiKey.SecretHash)
		require.NoError(t, err)
		requireAPIKey(t, apiKey, gotKey)
		requireLicense(t, lic, getLicense(t, s, tn.ID, lic.ID))
		requireLicense(t, short, getLicense(t, s, tn.ID, short.ID))

		requireSameLease(t, hbA, getLease(t, s, tn.ID, a.Lease.ID), "heartbeated lease (deadline flushed on Close)")
		requireSameLease(t, b2.Lease, getLease(t, s, tn.ID, b2.Lease.ID), "lease with a rotated token")
		requireSameLease(t, rc, getLease(t, s, tn.ID, c.Lease.ID), "released lease")
		requireSameLease(t, zl, getLease(t, s, tn.ID, z.Lease.ID), "expired lease")
		got := getLease(t, s, tn.ID, a.Lease.ID)
		require.Equal(t, "a", got.Fingerprint)
		require.Equal(t, a.Lease.DedupeKey, got.DedupeKey)

		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)
		requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), rc)
		requireOneUsage(t, usageEvents(t, s, tn.ID, short.ID), zl)
		require.Len(t, usageEvents(t, s, tn.ID, short.ID), 1)
		ces := cleanupEvents(t, s, tn.ID, short.ID)
		require.Len(t, ces, 1)
		require.Equal(t, cleanShort[0].LeaseID, ces[0].LeaseID)
		requireSameTime(t, cleanShort[0].CleanedAt, ces[0].CleanedAt)
		auditAfter := listAudit(t, s, tn.ID, 100)
		requireAudit(t, auditBefore, auditAfter)
		requireAudit(t, audit, only(auditAfter, audit))
		due, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		require.Empty(t, due, "nothing due after reopen")

		// The live leases still hold their seats and their tokens.
		require.Equal(t, 2, seatsInUse(t, s, tn.ID, lic.ID))
		heartbeat(t, s, a.Lease.ID, tokA)
		_, err = s.Heartbeat(t.Context(), b1.Lease.ID, server.HashSecret(tokB1))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "the rotated-out token after reopen")
		heartbeat(t, s, b2.Lease.ID, tokB2)
		again, _ := acquire(t, s, lic, "a", nil)
		require.True(t, again.Existing, "dedupe survives reopen")
		require.Equal(t, a.Lease.ID, again.Lease.ID)
		acquire(t, s, lic, "d", nil)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "e", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the seat limit holds after reopen")
		leases, _, err := s.ListLeases(t.Context(), tn.ID, lic.ID, "", server.Page{})
		require.NoError(t, err)
		require.Len(t, leases, 4)
	})
}
