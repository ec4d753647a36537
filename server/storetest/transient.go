package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testTransient: invariant 6, transient errors never remove a live session.
// With each part of the backend's storage failing in turn (Faults), every
// call that changes state either fails and changes nothing, or succeeds and
// does all of its work; once the storage is back, a retry completes it.
func testTransient(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	for _, fault := range []Fault{FaultRecord, FaultLive} {
		w.run(string(fault), func(t *testing.T) {
			s := openStore(t, newBackend)
			fs := faultsOf(t, s)
			if !slices.Contains(fs.Faults(), fault) {
				t.Skipf("this backend keeps no %s storage apart from its record", fault)
			}
			tn := newTenant(t, s)
			lic := newLicense(t, s, tn.ID, with(seats(3), leaseTTL(shortTTL)))
			keep := newLicense(t, s, tn.ID, seats(4))
			zombies := map[string]bool{}
			var lapsing []server.Lease
			for i := range 2 {
				r, _ := acquire(t, s, lic, fmt.Sprintf("z-%d", i), nil)
				zombies[r.Lease.ID] = true
				lapsing = append(lapsing, r.Lease)
			}
			live, liveTok := acquire(t, s, keep, "live", nil)
			ended, endedTok := acquire(t, s, keep, "to-release", nil)
			revoked, _ := acquire(t, s, keep, "to-revoke", nil)
			passDeadlines(t, s, lapsing...)
			refs, err := s.DueLeases(t.Context(), nil, 100)
			require.NoError(t, err)
			require.Len(t, refs, 2)

			before := map[string]server.Lease{}
			for _, id := range []string{live.Lease.ID, ended.Lease.ID, revoked.Lease.ID} {
				before[id] = getLease(t, s, tn.ID, id)
			}
			withFault(t, fs, fault, func() {
				_, err := s.ExpireLeases(t.Context(), refs)
				requireUnavailable(t, err, "ExpireLeases")
				_, err = s.Release(t.Context(), ended.Lease.ID, server.HashSecret(endedTok))
				requireUnavailable(t, err, "Release")
				_, err = s.Revoke(t.Context(), tn.ID, revoked.Lease.ID)
				requireUnavailable(t, err, "Revoke")
				req, _ := acquireReq(keep.Key, "new", nil)
				_, err = s.Acquire(t.Context(), req)
				requireUnavailable(t, err, "Acquire")
				_, err = s.DeleteLicense(t.Context(), tn.ID, keep.ID)
				requireUnavailable(t, err, "DeleteLicense")
				if fault == FaultRecord { // the audit log is in the record only
					requireUnavailable(t, s.AppendAudit(t.Context(), newAuditEntry(tn.ID, "license.update", keep.ID, time.Now())), "AppendAudit")
				}
				if hb, err := s.Heartbeat(t.Context(), live.Lease.ID, server.HashSecret(liveTok)); err != nil {
					requireUnavailable(t, err, "Heartbeat")
				} else {
					before[live.Lease.ID] = hb // a heartbeat written behind needs no storage now
				}
			})

			// Nothing was removed or recorded by the failed calls.
			for id := range zombies {
				require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, id).State, "a failed ExpireLeases ended a lease")
			}
			require.Empty(t, usageEvents(t, s, tn.ID, lic.ID), "a failed ExpireLeases wrote usage events")
			require.Empty(t, cleanupEvents(t, s, tn.ID, lic.ID), "a failed ExpireLeases wrote cleanup events")
			for id, l := range before {
				requireSameLease(t, l, getLease(t, s, tn.ID, id), "a failed call changed lease %s", id)
			}
			require.Empty(t, usageEvents(t, s, tn.ID, keep.ID), "a failed end wrote usage events")
			require.Equal(t, 3, seatsInUse(t, s, tn.ID, keep.ID), "a failed call took or freed a seat")
			_, err = s.GetLicense(t.Context(), tn.ID, keep.ID)
			require.NoError(t, err, "a failed DeleteLicense deleted the license")
			heartbeat(t, s, live.Lease.ID, liveTok)

			// The storage is back: the next pass and the retries finish it.
			exp, err := s.ExpireLeases(t.Context(), refs)
			require.NoError(t, err)
			require.Len(t, exp, 2)
			for _, l := range exp {
				require.True(t, zombies[l.ID], "expired %s", l.ID)
			}
			require.Len(t, cleanupEvents(t, s, tn.ID, lic.ID), 2)
			require.Equal(t, server.LeaseReleased, release(t, s, ended.Lease.ID, endedTok).State)
			r, err := s.Revoke(t.Context(), tn.ID, revoked.Lease.ID)
			require.NoError(t, err)
			require.Equal(t, server.LeaseRevoked, r.State)
			require.Len(t, usageEvents(t, s, tn.ID, keep.ID), 2, "one usage event per end")
			require.Equal(t, 1, seatsInUse(t, s, tn.ID, keep.ID))
		})
	}
}

func requireUnavailable(t *testing.T, err error, call string) {
	t.Helper()
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, call+" with its storage failing")
}
