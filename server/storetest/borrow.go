package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Borrowing: a borrowed lease holds its seat until its deadline or its
// early return, with no heartbeats, and is ended exactly once like any
// other lease.

func borrowing(maxBorrow time.Duration, maxBorrowed int) func(*server.License) {
	return func(l *server.License) { l.MaxBorrowDuration, l.MaxBorrowedSeats = maxBorrow, maxBorrowed }
}

// earlyReturn allows a borrowed lease to be returned before its deadline.
func earlyReturn(l *server.License) { l.AllowEarlyReturn = true }

func borrowFor(d time.Duration) func(*server.AcquireRequest) {
	return func(r *server.AcquireRequest) { r.BorrowFor = d }
}

func testBorrow(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()

	w.run("BorrowedLeaseCountsAndKeepsItsDeadline", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), borrowing(24*time.Hour, 0)))
		requireLicense(t, lic, getLicense(t, s, tn.ID, lic.ID))

		b, tok := acquire(t, s, lic, "laptop", borrowFor(8*time.Hour))
		require.True(t, b.Lease.Borrowed)
		require.Equal(t, 1, b.SeatsInUse)
		require.True(t, getLease(t, s, tn.ID, b.Lease.ID).Borrowed, "the record says borrowed")

		// No heartbeats: the lease keeps the deadline it was borrowed until.
		_, err := s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseBorrowed, "heartbeat of a borrowed lease")
		requireSameLease(t, b.Lease, getLease(t, s, tn.ID, b.Lease.ID), "a refused heartbeat changes nothing")
		// The token is still checked first.
		_, err = s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret("wrong"))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong)

		// The same machine online takes its own seat: a borrowed lease is
		// never handed back by the leasing strategy.
		online, _ := acquire(t, s, lic, "laptop", nil)
		require.False(t, online.Existing)
		require.False(t, online.Lease.Borrowed)
		require.Equal(t, 2, online.SeatsInUse, "the borrowed seat counts against the limit")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "desktop", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "other-laptop", borrowFor(time.Hour))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "a borrow needs a free seat too")

		// Listed with its state and deadline.
		ls, _, err := s.ListLeases(t.Context(), tn.ID, lic.ID, server.LeaseActive, server.Page{})
		require.NoError(t, err)
		require.Len(t, ls, 2)
		for _, l := range ls {
			require.Equal(t, l.ID == b.Lease.ID, l.Borrowed, "ListLeases says which lease is borrowed")
		}
	})

	w.run("BorrowRefusalsChangeNothing", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		off := newLicense(t, s, tn.ID, with(seats(3)))
		_, _, err := tryAcquire(t.Context(), s, off.Key, "laptop", borrowFor(time.Hour))
		requireCode(t, err, server.EPRECONDITION, server.ReasonBorrowNotAllowed, "max_borrow_duration 0: no borrowing")
		// Allowed by an update: the change reaches every judge of borrows.
		_, err = s.UpdateLicense(t.Context(), tn.ID, off.ID, func(l *server.License) error { l.MaxBorrowDuration = time.Hour; return nil })
		require.NoError(t, err)
		b, _ := acquire(t, s, off, "laptop", borrowFor(time.Hour))
		require.True(t, b.Lease.Borrowed)

		lic := newLicense(t, s, tn.ID, with(seats(3), borrowing(2*time.Hour, 1)))
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop", borrowFor(3*time.Hour))
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "longer than max_borrow_duration")
		require.Equal(t, "borrow_duration", errField(err))

		acquire(t, s, lic, "laptop-1", borrowFor(time.Hour))
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop-2", borrowFor(time.Hour))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonBorrowLimit, "max_borrowed_seats reached")
		require.Equal(t, map[string]string{"borrowed_seats": "1", "max_borrowed_seats": "1"}, errMeta(err))
		// Seats not borrowed are still there for normal leases.
		online, _ := acquire(t, s, lic, "desktop", nil)
		require.Equal(t, 2, online.SeatsInUse, "the refused borrows took nothing")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, off.ID), "only the borrow the update allowed")
	})

	// Invariant 1 for borrowed seats: concurrent borrows never exceed
	// max_borrowed_seats, nor borrows and acquisitions the seat limit.
	w.run("ConcurrentBorrowsRespectBothLimits", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(5), borrowing(time.Hour, 3)))
		var (
			mu                sync.Mutex
			borrowed, granted int
			wg                sync.WaitGroup
		)
		for i := range 16 {
			wg.Go(func() {
				var mut func(*server.AcquireRequest)
				if i%2 == 0 {
					mut = borrowFor(time.Hour)
				}
				res, _, err := tryAcquire(t.Context(), s, lic.Key, server.NewID("fp"), mut)
				if err != nil {
					if !isCode(err, server.EEXHAUSTED, server.ReasonSeatsExhausted) && !isCode(err, server.EEXHAUSTED, server.ReasonBorrowLimit) {
						t.Errorf("acquire: %v", err)
					}
					return
				}
				mu.Lock()
				defer mu.Unlock()
				granted++
				if res.Lease.Borrowed {
					borrowed++
				}
			})
		}
		wg.Wait()
		require.LessOrEqual(t, borrowed, 3, "max_borrowed_seats")
		require.Equal(t, 5, granted, "every seat is taken, none twice")
		require.Equal(t, 5, seatsInUse(t, s, tn.ID, lic.ID))
	})

	// No early return unless the license allows it (AllowEarlyReturn,
	// off by default): a returned borrow's certificate would stay valid
	// offline until its deadline. A live borrowed lease keeps its seat,
	// and its borrowed seat, until its deadline; Release refuses
	// (LEASE_BORROWED, naming the deadline), changes nothing and lists
	// nothing as returned.
	w.run("NotReturnedEarly", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), borrowing(time.Hour, 1)))
		b, tok := acquire(t, s, lic, "laptop", borrowFor(time.Hour))
		_, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.Equal(t, server.ReasonLeaseBorrowed, server.ErrorReason(err), "%v", err)
		_, err = s.Release(t.Context(), b.Lease.ID, server.HashSecret("slt_wrong"))
		require.ErrorIs(t, err, server.ErrLeaseToken, "the token is checked first")
		l, err := s.GetLease(t.Context(), tn.ID, b.Lease.ID)
		require.NoError(t, err)
		require.Equal(t, server.LeaseActive, l.State)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID), "the borrowed lease keeps its seat")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop-2", borrowFor(time.Hour))
		require.Equal(t, server.ReasonBorrowLimit, server.ErrorReason(err), "and its borrowed seat: %v", err)
		require.Empty(t, usageEvents(t, s, tn.ID, lic.ID))
		require.Empty(t, returnedOf(t, s, tn.ID))
	})

	// Early return (issue: borrow, return, repeat gave any number of valid
	// offline certificates on one seat). The return frees the seat, lists
	// the certificate as returned until retention drops it, and the
	// returned borrow keeps counting against the borrow cap until its
	// deadline: at most max_borrowed_seats certificates are ever valid
	// offline at once.
	w.run("ReturnedEarlyFreesTheSeatNotTheBorrowCap", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), borrowing(time.Hour, 1), earlyReturn))
		requireLicense(t, lic, getLicense(t, s, tn.ID, lic.ID))
		b, tok := acquire(t, s, lic, "laptop", borrowFor(time.Hour))
		_, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret("slt_wrong"))
		require.ErrorIs(t, err, server.ErrLeaseToken, "the token is checked first")
		require.Empty(t, returnedOf(t, s, tn.ID))

		l, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.NoError(t, err)
		require.Equal(t, server.LeaseReleased, l.State)
		again, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.NoError(t, err, "a second return is a no-op")
		require.Equal(t, server.LeaseReleased, again.State)
		require.Equal(t, server.LeaseReleased, getLease(t, s, tn.ID, b.Lease.ID).State)
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID), "the seat is free")
		requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), getLease(t, s, tn.ID, b.Lease.ID))

		rcs := returnedOf(t, s, tn.ID)
		require.Len(t, rcs, 1, "listed once")
		require.Equal(t, b.Lease.ID, rcs[0].LeaseID)
		require.Equal(t, lic.ID, rcs[0].LicenseID)
		require.Equal(t, tn.ID, rcs[0].TenantID)
		requireSameTime(t, b.Lease.ExpiresAt, rcs[0].ExpiresAt, "until the certificate's exp")
		other := newTenant(t, s)
		require.Empty(t, returnedOf(t, s, other.ID), "another tenant's list")

		// Online use takes the freed seat; a second borrow is refused: the
		// returned certificate may still be in use offline.
		acquire(t, s, lic, "desk", nil)
		acquire(t, s, lic, "desk-2", nil)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop-2", borrowFor(time.Hour))
		require.Equal(t, server.ReasonBorrowLimit, server.ErrorReason(err), "the returned borrow counts: %v", err)
		require.Equal(t, map[string]string{"borrowed_seats": "1", "max_borrowed_seats": "1"}, errMeta(err))
	})

	// With max_borrowed_seats 0 the cap is the seat limit: on a 1-seat
	// license, borrow and return, and no second borrow until the first
	// certificate expires; then borrowing works again.
	w.run("ReturnedBorrowCountsUntilItsDeadline", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), borrowing(time.Hour, 0), earlyReturn))
		b, tok := acquire(t, s, lic, "laptop", borrowFor(shortTTL))
		_, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.NoError(t, err)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop-2", borrowFor(time.Hour))
		require.Equal(t, server.ReasonBorrowLimit, server.ErrorReason(err), "%v", err)
		n, ntok := acquire(t, s, lic, "desk", nil)
		require.Equal(t, 1, n.SeatsInUse, "online use is not held back")
		_, err = s.Release(t.Context(), n.Lease.ID, server.HashSecret(ntok))
		require.NoError(t, err)

		passDeadline(t, s, b.Lease.ExpiresAt)
		b2, _ := acquire(t, s, lic, "laptop-2", borrowFor(time.Hour))
		require.True(t, b2.Lease.Borrowed, "the returned certificate has expired: borrowing again")
		require.Len(t, returnedOf(t, s, tn.ID), 1, "listed until retention removes it")

		// Retention removes it by its exp, not before.
		n0, err := s.PruneRecords(t.Context(), server.RecordReturnedCertificates, b.Lease.ExpiresAt.Add(-time.Second), 10)
		require.NoError(t, err)
		require.Zero(t, n0)
		n1, err := s.PruneRecords(t.Context(), server.RecordReturnedCertificates, b.Lease.ExpiresAt.Add(time.Second), 10)
		require.NoError(t, err)
		require.Equal(t, 1, n1)
		require.Empty(t, returnedOf(t, s, tn.ID))
	})

	// Invariant 6: a return that fails changes nothing: the lease keeps
	// its seat and is not listed.
	w.run("FailedReturnChangesNothing", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), borrowing(time.Hour, 0), earlyReturn))
		b, tok := acquire(t, s, lic, "laptop", borrowFor(time.Hour))
		withFault(t, faultsOf(t, s), FaultRecord, func() {
			_, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
			requireUnavailable(t, err, "Release")
		})
		require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, b.Lease.ID).State)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
		require.Empty(t, returnedOf(t, s, tn.ID))
		_, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.NoError(t, err, "the retry returns it")
		require.Len(t, returnedOf(t, s, tn.ID), 1)
	})

	// The list and the count survive a restart.
	w.run("ReturnedSurvivesReopen", func(t *testing.T) {
		open := newBackend(t)
		s1 := openReopenable(t, open)
		tn := newTenant(t, s1)
		lic := newLicense(t, s1, tn.ID, with(seats(2), borrowing(time.Hour, 1), earlyReturn))
		b, tok := acquire(t, s1, lic, "laptop", borrowFor(time.Hour))
		_, err := s1.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.NoError(t, err)
		require.NoError(t, s1.Close())
		s := openWith(t, open)
		require.Len(t, returnedOf(t, s, tn.ID), 1)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "laptop-2", borrowFor(time.Hour))
		require.Equal(t, server.ReasonBorrowLimit, server.ErrorReason(err), "%v", err)
	})

	// Invariants 3 and 5: a borrowed lease stops counting at its deadline,
	// is never revived, and cleanup records its expiry exactly once.
	w.run("ExpiresAtItsDeadlineOnce", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), borrowing(time.Hour, 1), func(l *server.License) {
			l.RevivalWindow = time.Hour // never for a borrowed lease
		}))
		b, tok := acquire(t, s, lic, "laptop", borrowFor(shortTTL))
		passDeadline(t, s, b.Lease.ExpiresAt)
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID), "a lapsed borrowed lease holds no seat")
		_, err := s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "no revival of a borrowed lease")

		other, _ := acquire(t, s, lic, "laptop-2", borrowFor(time.Hour))
		require.Equal(t, 1, other.SeatsInUse)
		expireAllDue(t, s)
		expireAllDue(t, s)
		ended := getLease(t, s, tn.ID, b.Lease.ID)
		require.Equal(t, server.LeaseExpired, ended.State)
		requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ended)
		require.Len(t, cleanupOf(cleanupEvents(t, s, tn.ID, lic.ID), b.Lease.ID), 1,
			"recorded once: by the heartbeat that was told, not again by cleanup")
	})

	w.run("CleanupRecordsALapsedBorrowOnce", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), borrowing(time.Hour, 0)))
		b, _ := acquire(t, s, lic, "laptop", borrowFor(shortTTL))
		passDeadline(t, s, b.Lease.ExpiresAt)
		first := expireAllDue(t, s)
		require.Equal(t, []string{b.Lease.ID}, leaseIDs(first))
		require.Empty(t, expireAllDue(t, s), "a second pass records nothing")
		ended := getLease(t, s, tn.ID, b.Lease.ID)
		require.Equal(t, server.LeaseExpired, ended.State)
		require.True(t, ended.Borrowed)
		requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ended)
		require.Len(t, cleanupOf(cleanupEvents(t, s, tn.ID, lic.ID), b.Lease.ID), 1)
	})

	w.run("RetriedBorrowGetsItsLeaseBack", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(3), borrowing(time.Hour, 0), leaseTTL(time.Minute)))
		idem := func(d time.Duration) func(*server.AcquireRequest) {
			return func(r *server.AcquireRequest) { r.IdempotencyKey, r.BorrowFor = "trip-42", d }
		}
		b, _ := acquire(t, s, lic, "laptop", idem(time.Hour))
		again, tok := acquire(t, s, lic, "laptop", idem(30*time.Minute))
		require.True(t, again.Existing, "the same idempotency key hands the borrowed lease back")
		require.Equal(t, b.Lease.ID, again.Lease.ID)
		require.True(t, again.Lease.Borrowed)
		requireSameTime(t, b.Lease.ExpiresAt, again.Lease.ExpiresAt, "with the deadline it was borrowed until")
		require.Equal(t, 1, again.SeatsInUse)
		// The new token is the one that opens it (a return is refused:
		// NotReturnedEarly).
		_, err := s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
		require.Equal(t, server.ReasonLeaseBorrowed, server.ErrorReason(err), "%v", err)

		// A normal acquisition never gets a borrowed lease back, nor a
		// borrow a normal one, whatever the idempotency key.
		n, _ := acquire(t, s, lic, "desk", func(r *server.AcquireRequest) { r.IdempotencyKey = "shared" })
		nb, _ := acquire(t, s, lic, "desk", func(r *server.AcquireRequest) { r.IdempotencyKey, r.BorrowFor = "shared", time.Hour })
		require.False(t, nb.Existing)
		require.True(t, nb.Lease.Borrowed)
		n2, _ := acquire(t, s, lic, "desk", func(r *server.AcquireRequest) { r.IdempotencyKey = "shared" })
		require.True(t, n2.Existing)
		require.Equal(t, n.Lease.ID, n2.Lease.ID)
		require.False(t, n2.Lease.Borrowed)
	})

	// Deleting the license ends its borrowed leases too (each once).
	w.run("DeleteLicenseEndsBorrowedLeases", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), borrowing(time.Hour, 0)))
		b, _ := acquire(t, s, lic, "laptop", borrowFor(time.Hour))
		n, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		ended := getLease(t, s, tn.ID, b.Lease.ID)
		require.Equal(t, server.LeaseRevoked, ended.State)
		requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ended)
	})
}

// returnedOf is the tenant's returned certificates.
func returnedOf(t *testing.T, s server.Store, tenantID string) []server.ReturnedCertificate {
	t.Helper()
	rcs, err := s.ReturnedCertificates(t.Context(), tenantID)
	require.NoError(t, err)
	return rcs
}
