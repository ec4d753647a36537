package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestBorrowIdempotencyKeysAreKeptApart: a normal acquisition whose
// idempotency key looks like a borrow's stored key ("borrow:trip", the
// prefix an earlier version used) neither finds the borrowed lease nor
// skips its own dedupe lookup, and the borrow's retry still gets its own
// lease back (invariant 4): borrows' keys live under a byte no client key
// can hold (lua/common.lua, idem_key).
func TestBorrowIdempotencyKeysAreKeptApart(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	now := time.Now().UTC()
	lic, err := s.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tn.ID, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: 5, LeaseTTL: time.Minute, LeasingStrategy: server.PerFingerprint, Active: true,
		MaxBorrowDuration: time.Hour, CreatedAt: now, UpdatedAt: now,
	})
	require.NoError(t, err)
	acquire := func(fp, idem string, borrow time.Duration) server.AcquireResult {
		t.Helper()
		res, err := s.Acquire(t.Context(), server.AcquireRequest{LicenseKey: lic.Key, Fingerprint: fp,
			IdempotencyKey: idem, LeaseID: server.NewID(server.PrefixLeaseID),
			TokenHash: server.HashSecret(server.NewSecret(server.PrefixLeaseToken)), BorrowFor: borrow})
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
	now := time.Now().UTC()
	lic, err := s.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tn.ID, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: 5, LeaseTTL: time.Minute, LeasingStrategy: server.PerFingerprint, Active: true,
		CreatedAt: now, UpdatedAt: now, // borrowing off (MaxBorrowDuration 0)
	})
	require.NoError(t, err)
	tok := server.HashSecret(server.NewSecret(server.PrefixLeaseToken))
	res, err := s.Acquire(t.Context(), server.AcquireRequest{LicenseKey: lic.Key, Fingerprint: "laptop",
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: tok, BorrowFor: 500 * time.Nanosecond})
	if err == nil {
		_, hbErr := s.Heartbeat(t.Context(), res.Lease.ID, tok)
		t.Errorf("a borrow on a license without borrowing was granted: borrowed=%v, deadline in %v, heartbeat err=%v",
			res.Lease.Borrowed, time.Until(res.Lease.ExpiresAt).Round(time.Second), hbErr)
	}
	requireCode(t, err, server.EPRECONDITION, server.ErrBorrowNotAllowed.Reason)
}
