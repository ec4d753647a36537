package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testLeaseAuth: a lease is heartbeated or released only with its own token
// (invariant 8), and failed calls change nothing.
func testLeaseAuth(t *testing.T, newBackend Backend) {
	t.Run("WrongTokenIsPermissionDeniedAndChangesNothing", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))
		a, tokA := acquire(t, s, lic, "a", nil)
		_, tokB := acquire(t, s, lic, "b", nil)
		before := getLease(t, s, tn.ID, a.Lease.ID)
		time.Sleep(10 * time.Millisecond) // a wrongly accepted heartbeat would show

		for name, hash := range map[string]string{
			"another lease's token": server.HashSecret(tokB),
			"a random token":        server.HashSecret(server.NewSecret(server.PrefixLeaseToken)),
			"the raw token":         tokA, // the store takes the hash, never the token
			"an empty hash":         "",
		} {
			_, err := s.Heartbeat(t.Context(), a.Lease.ID, hash)
			requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "heartbeat with %s", name)
			_, err = s.Release(t.Context(), a.Lease.ID, hash)
			requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "release with %s", name)
		}
		requireSameLease(t, before, getLease(t, s, tn.ID, a.Lease.ID), "rejected calls changed the lease")
		require.Empty(t, usageEvents(t, s, tn.ID, lic.ID))
		require.Equal(t, 2, seatsInUse(t, s, tn.ID, lic.ID))

		// The right token still works; on an ended lease a wrong token is
		// still refused before the lease's state is revealed.
		heartbeat(t, s, a.Lease.ID, tokA)
		release(t, s, a.Lease.ID, tokA)
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokB))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "wrong token on a released lease")
		_, err = s.Release(t.Context(), a.Lease.ID, server.HashSecret(tokB))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "wrong token on a released lease")
	})

	t.Run("UnknownLeaseIsNotFound", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		a, tok := acquire(t, s, lic, "a", nil)
		before := getLease(t, s, tn.ID, a.Lease.ID)

		unknown := server.NewID(server.PrefixLeaseID)
		_, err := s.Heartbeat(t.Context(), unknown, server.HashSecret(tok))
		requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "heartbeat unknown lease")
		_, err = s.Release(t.Context(), unknown, server.HashSecret(tok))
		requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "release unknown lease")
		_, err = s.GetLease(t.Context(), tn.ID, unknown)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "get unknown lease")
		_, err = s.Revoke(t.Context(), tn.ID, unknown)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "revoke unknown lease")
		_, _, err = tryAcquire(t.Context(), s, server.NewSecret(server.PrefixLicenseKey), "a", nil)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "acquire with an unknown key")
		_, err = s.SeatsInUse(t.Context(), tn.ID, server.NewID(server.PrefixLicenseID))
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "seats in use of an unknown license")

		requireSameLease(t, before, getLease(t, s, tn.ID, a.Lease.ID))
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
		require.Empty(t, usageEvents(t, s, tn.ID, lic.ID))
	})
}

// testLeaseEnd: release and revoke are idempotent and recorded once.
func testLeaseEnd(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	t.Run("ReleaseTwiceRecordsOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		a, tok := acquire(t, s, lic, "a", nil)

		r1 := release(t, s, a.Lease.ID, tok)
		require.False(t, r1.EndedAt.Before(r1.AcquiredAt))
		r2 := release(t, s, a.Lease.ID, tok)
		requireSameLease(t, r1, r2, "a second release returns the lease unchanged")
		requireSameLease(t, r1, getLease(t, s, tn.ID, a.Lease.ID))
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID))
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, 1)
		requireOneUsage(t, evs, r1)

		// A released lease is over for good.
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "heartbeat after release")
		rv, err := s.Revoke(t.Context(), tn.ID, a.Lease.ID)
		require.NoError(t, err, "revoking a released lease returns it unchanged")
		requireSameLease(t, r1, rv)
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)
		require.Empty(t, cleanupEvents(t, s, tn.ID, lic.ID))

		// The seat is free again.
		b, _ := acquire(t, s, lic, "a", nil)
		require.False(t, b.Existing, "a released lease is not handed back")
		require.NotEqual(t, a.Lease.ID, b.Lease.ID)
	})

	t.Run("ConcurrentReleasesRecordOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		a, tok := acquire(t, s, lic, "a", nil)
		errs := make([]error, 20)
		ended := make([]server.Lease, 20)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { ended[i], errs[i] = s.Release(t.Context(), a.Lease.ID, server.HashSecret(tok)) })
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "release %d", i)
			require.Equal(t, server.LeaseReleased, ended[i].State)
			requireSameTime(t, ended[0].EndedAt, ended[i].EndedAt, "one end time")
		}
		requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ended[0])
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)
	})

	// RevokeUnconfirmed (a waiter's grant held for its first heartbeat)
	// takes back only a lease that is still as granted; a heartbeat
	// acknowledged before it keeps the lease.
	t.Run("RevokeUnconfirmed", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))
		a, tokA := acquire(t, s, lic, "a", nil)
		b, tokB := acquire(t, s, lic, "b", nil)

		other := a.Lease
		other.TenantID = newTenant(t, s).ID
		_, _, err := s.RevokeUnconfirmed(t.Context(), other)
		require.ErrorIs(t, err, server.ErrLeaseNotFound, "another tenant's lease")

		beat, err := s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tokB))
		require.NoError(t, err)
		require.True(t, beat.LastHeartbeatAt.After(b.Lease.LastHeartbeatAt), "the heartbeat came after the grant")
		kept, revoked, err := s.RevokeUnconfirmed(t.Context(), b.Lease)
		require.NoError(t, err)
		require.False(t, revoked, "a heartbeated lease is confirmed")
		require.Equal(t, server.LeaseActive, kept.State)
		_, err = s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tokB))
		require.NoError(t, err, "and keeps heartbeating")

		rv, revoked, err := s.RevokeUnconfirmed(t.Context(), a.Lease)
		require.NoError(t, err)
		require.True(t, revoked, "a lease as granted is taken back")
		require.Equal(t, server.LeaseRevoked, rv.State)
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked, "heartbeat after the revocation")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
		again, revoked, err := s.RevokeUnconfirmed(t.Context(), a.Lease)
		require.NoError(t, err)
		require.False(t, revoked, "an ended lease is left as it is")
		require.Equal(t, server.LeaseRevoked, again.State)
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, 1, "one usage event, of the revoked lease")
		requireOneUsage(t, evs, rv)
	})

	t.Run("RevokeTwiceRecordsOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		a, tok := acquire(t, s, lic, "a", nil)

		r1, err := s.Revoke(t.Context(), tn.ID, a.Lease.ID)
		require.NoError(t, err)
		require.Equal(t, server.LeaseRevoked, r1.State)
		require.False(t, r1.EndedAt.IsZero())
		r2, err := s.Revoke(t.Context(), tn.ID, a.Lease.ID)
		require.NoError(t, err, "revoke is idempotent")
		requireSameLease(t, r1, r2)
		requireSameLease(t, r1, getLease(t, s, tn.ID, a.Lease.ID))
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID))
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, 1)
		requireOneUsage(t, evs, r1)

		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked, "heartbeat after revoke")
		_, err = s.Release(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked, "release after revoke")
		requireSameLease(t, r1, getLease(t, s, tn.ID, a.Lease.ID), "release after revoke changed the lease")
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)

		b, _ := acquire(t, s, lic, "a", nil)
		require.False(t, b.Existing, "a revoked lease is not handed back")
	})

	t.Run("ConcurrentRevokesRecordOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		a, tok := acquire(t, s, lic, "a", nil)
		errs := make([]error, 21)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				if i == 0 { // a release racing the revokes: one of them wins
					_, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tok))
					if isCode(err, server.EPRECONDITION, server.ReasonLeaseRevoked) {
						err = nil
					}
					errs[i] = err
					return
				}
				_, errs[i] = s.Revoke(t.Context(), tn.ID, a.Lease.ID)
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "call %d", i)
		}
		ls := getLease(t, s, tn.ID, a.Lease.ID)
		require.True(t, ls.State.Terminal())
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, 1)
		requireOneUsage(t, evs, ls)
	})

	w.run("RevokePastDeadlineBeforeCleanup", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), leaseTTL(shortTTL)))
		a, _ := acquire(t, s, lic, "a", nil)
		passDeadline(t, s, a.Lease.ExpiresAt)

		rv, err := s.Revoke(t.Context(), tn.ID, a.Lease.ID)
		require.NoError(t, err, "revoke a lease past its deadline that no cleanup has seen")
		require.Equal(t, server.LeaseRevoked, rv.State)
		due, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		require.Empty(t, due, "a revoked lease is not due")
		exp, err := s.ExpireLeases(t.Context(), []server.LeaseRef{{LeaseID: a.Lease.ID, LicenseID: lic.ID, ExpiresAt: a.Lease.ExpiresAt}})
		require.NoError(t, err)
		require.Empty(t, exp, "a revoked lease is not expired")
		require.Equal(t, server.LeaseRevoked, getLease(t, s, tn.ID, a.Lease.ID).State)
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, 1)
		requireOneUsage(t, evs, rv)
		require.Empty(t, cleanupEvents(t, s, tn.ID, lic.ID))
	})
}

func testListLeases(t *testing.T, newBackend Backend) {
	t.Run("NewestFirstStateFilterAndPages", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(10))
		other := newLicense(t, s, tn.ID, seats(10))
		acquire(t, s, other, "elsewhere", nil) // not listed under lic

		var all []server.Lease
		tokens := map[string]string{}
		for i := range 5 {
			r, tok := acquire(t, s, lic, fmt.Sprintf("fp-%d", i), nil)
			all = append(all, r.Lease)
			tokens[r.Lease.ID] = tok
			time.Sleep(2 * time.Millisecond)
		}
		release(t, s, all[1].ID, tokens[all[1].ID])
		release(t, s, all[3].ID, tokens[all[3].ID])
		want := slices.Clone(all)
		slices.SortFunc(want, compareNewestFirst)
		released := map[string]bool{all[1].ID: true, all[3].ID: true}
		byState := func(st server.LeaseState) []string {
			var ids []string
			for _, l := range want {
				if released[l.ID] == (st == server.LeaseReleased) {
					ids = append(ids, l.ID)
				}
			}
			return ids
		}

		list := func(state server.LeaseState, size int) []server.Lease {
			return listAll(t, size, func(l server.Lease) string { return l.ID }, func(p server.Page) ([]server.Lease, string, error) {
				return s.ListLeases(t.Context(), tn.ID, lic.ID, state, p)
			})
		}
		got := list("", 2)
		require.Equal(t, leaseIDs(want), leaseIDs(got), "newest first, over pages of 2")
		require.True(t, slices.IsSortedFunc(got, compareNewestFirst), "ordered by AcquiredAt desc, ID desc")
		require.Equal(t, leaseIDs(want), leaseIDs(list("", 0)), "default page size")
		require.Equal(t, byState(server.LeaseActive), leaseIDs(list(server.LeaseActive, 2)))
		require.Equal(t, byState(server.LeaseReleased), leaseIDs(list(server.LeaseReleased, 1)))
		require.Empty(t, list(server.LeaseExpired, 2))
		for _, l := range list(server.LeaseReleased, 10) {
			require.Equal(t, server.LeaseReleased, l.State)
			require.False(t, l.EndedAt.IsZero())
		}

		_, _, err := s.ListLeases(t.Context(), tn.ID, server.NewID(server.PrefixLicenseID), "", server.Page{})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "list leases of an unknown license")
	})
}
