package distributed

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// mkBorrowLicense is mkLicense (1 min TTL) with the borrowing limits.
func mkBorrowLicense(t *testing.T, s *Store, tenantID string, seats int, maxBorrow time.Duration, maxBorrowed int) server.License {
	t.Helper()
	now := time.Now().UTC()
	l, err := s.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tenantID, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: seats, LeaseTTL: time.Minute, LeasingStrategy: server.PerFingerprint, Active: true,
		MaxBorrowDuration: maxBorrow, MaxBorrowedSeats: maxBorrowed, CreatedAt: now, UpdatedAt: now,
	})
	require.NoError(t, err)
	return l
}

// tryBorrow acquires with an idempotency key, borrowing for d (0: a normal
// lease); it returns the result and the lease token.
func tryBorrow(ctx context.Context, s *Store, key, fp, idem string, d time.Duration) (server.AcquireResult, string, error) {
	tok := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.Acquire(ctx, server.AcquireRequest{LicenseKey: key, Fingerprint: fp, IdempotencyKey: idem,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(tok), BorrowFor: d})
	return res, tok, err
}

// TestBorrowedLeasesSurviveARebuild: after Redis loses the license's live
// state (or a rebuild is forced), a borrowed lease still counts, still
// counts against max_borrowed_seats, keeps its deadline exactly (no
// write-behind slack: no heartbeat of it can be lost), still refuses
// heartbeats, and a retried borrow still finds it by its idempotency key.
func TestBorrowedLeasesSurviveARebuild(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"forced rebuild", "Redis loss"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			loc, s, tn := openStore(t, nil)
			lic := mkBorrowLicense(t, s, tn.ID, 3, time.Hour, 1)
			b, tok, err := tryBorrow(t.Context(), s, lic.Key, "laptop", "trip", 30*time.Minute)
			require.NoError(t, err)

			rebuildBy(t, how, loc, s, lic.ID)

			_, _, err = tryBorrow(t.Context(), s, lic.Key, "laptop-2", "", 30*time.Minute)
			requireCode(t, err, server.EEXHAUSTED, server.ReasonBorrowLimit, "the borrowed seat still counts as borrowed")
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			_, err = s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tok))
			requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseBorrowed)

			again, _, err := tryBorrow(t.Context(), s, lic.Key, "laptop", "trip", 30*time.Minute)
			require.NoError(t, err)
			require.True(t, again.Existing, "a retried borrow finds its lease after the rebuild")
			require.Equal(t, b.Lease.ID, again.Lease.ID)
			require.WithinDuration(t, b.Lease.ExpiresAt, again.Lease.ExpiresAt, time.Millisecond,
				"the deadline it was borrowed until, with no slack")
		})
	}
}

// TestBorrowIdempotencyKeysAreKeptApart: a normal acquisition whose
// idempotency key looks like a borrow's stored key ("borrow:trip", the
// prefix an earlier version used) neither finds the borrowed lease nor
// skips its own dedupe lookup, and the borrow's retry still gets its own
// lease back (invariant 4): borrows' keys live under a byte no client key
// can hold (lua/common.lua, idem_key).
func TestBorrowIdempotencyKeysAreKeptApart(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkBorrowLicense(t, s, tn.ID, 5, time.Hour, 0)
	acquire := func(fp, idem string, borrow time.Duration) server.AcquireResult {
		t.Helper()
		res, _, err := tryBorrow(t.Context(), s, lic.Key, fp, idem, borrow)
		require.NoError(t, err)
		return res
	}
	a := acquire("laptop", "", 0)                  // a normal lease of fingerprint "laptop"
	b := acquire("travel", "trip", 30*time.Minute) // a borrowed lease, idempotency key "trip"

	again := acquire("laptop", "borrow:trip", 0)
	bAgain := acquire("travel", "trip", 30*time.Minute)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)

	assert.True(t, again.Existing && again.Lease.ID == a.Lease.ID,
		"same fingerprint, same lease (invariant 4): got a new lease %s, not %s", again.Lease.ID, a.Lease.ID)
	assert.True(t, bAgain.Existing && bAgain.Lease.ID == b.Lease.ID,
		"a retried borrow gets its lease back: got %s, not %s", bAgain.Lease.ID, b.Lease.ID)
	assert.Equal(t, 2, n, "two clients, two seats")
}

// TestSubMicrosecondBorrowIsJudgedAsABorrow: a borrow shorter than the
// microsecond acquire.lua counts in is still judged as a borrow (refused
// here, on a license without borrowing, as the embedded store refuses it),
// never granted as a normal lease that the record calls borrowed.
func TestSubMicrosecondBorrowIsJudgedAsABorrow(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkBorrowLicense(t, s, tn.ID, 5, 0, 0) // borrowing off
	res, tok, err := tryBorrow(t.Context(), s, lic.Key, "laptop", "", 500*time.Nanosecond)
	if err == nil {
		_, hbErr := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
		t.Errorf("a borrow on a license without borrowing was granted: borrowed=%v, deadline in %v, heartbeat err=%v",
			res.Lease.Borrowed, time.Until(res.Lease.ExpiresAt).Round(time.Second), hbErr)
	}
	requireCode(t, err, server.EPRECONDITION, server.ErrBorrowNotAllowed.Reason)
}

// TestReturnedBorrowsSurviveARebuild: a borrow returned early keeps
// counting against max_borrowed_seats until its deadline after Redis loses
// the license's live state (the rebuild reads returned_certificates) or a
// rebuild is forced (end.lua's entry is rebuilt from the record too); the
// seat it freed stays free.
func TestReturnedBorrowsSurviveARebuild(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"forced rebuild", "Redis loss"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			loc, s, tn := openStore(t, nil)
			lic := mkBorrowLicense(t, s, tn.ID, 3, time.Hour, 1)
			_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
				l.AllowEarlyReturn = true
				return nil
			})
			require.NoError(t, err)
			b, tok, err := tryBorrow(t.Context(), s, lic.Key, "laptop", "trip", 30*time.Minute)
			require.NoError(t, err)
			_, err = s.Release(t.Context(), b.Lease.ID, server.HashSecret(tok))
			require.NoError(t, err)

			rebuildBy(t, how, loc, s, lic.ID)

			_, _, err = tryBorrow(t.Context(), s, lic.Key, "laptop-2", "", 30*time.Minute)
			requireCode(t, err, server.EEXHAUSTED, server.ReasonBorrowLimit, "the returned borrow still counts")
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Zero(t, n, "its seat stays free")
		})
	}
}

// rebuildBy rebuilds a license's live state from the record, by a forced
// rebuild or after losing Redis (how: "Redis loss").
func rebuildBy(t *testing.T, how string, loc location, s *Store, licenseID string) {
	t.Helper()
	if how == "Redis loss" {
		loc.loseRedis(t)
		require.NoError(t, s.ensureLive(t.Context(), licenseID))
		return
	}
	require.NoError(t, s.rebuildFrom(t.Context(), licenseID, loc.epochOf(t, licenseID)))
}
