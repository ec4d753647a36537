package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

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
			now := time.Now().UTC()
			lic, err := s.CreateLicense(t.Context(), server.License{
				ID: server.NewID(server.PrefixLicenseID), TenantID: tn.ID, Key: server.NewSecret(server.PrefixLicenseKey),
				Seats: 3, LeaseTTL: time.Minute, LeasingStrategy: server.PerFingerprint, Active: true,
				MaxBorrowDuration: time.Hour, MaxBorrowedSeats: 1, CreatedAt: now, UpdatedAt: now,
			})
			require.NoError(t, err)
			borrow := func(fp, idem string) (server.AcquireResult, string, error) {
				tok := server.NewSecret(server.PrefixLeaseToken)
				res, err := s.Acquire(t.Context(), server.AcquireRequest{LicenseKey: lic.Key, Fingerprint: fp,
					IdempotencyKey: idem, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(tok),
					BorrowFor: 30 * time.Minute})
				return res, tok, err
			}
			b, tok, err := borrow("laptop", "trip")
			require.NoError(t, err)

			if how == "Redis loss" {
				loc.loseRedis(t)
				require.NoError(t, s.ensureLive(t.Context(), lic.ID))
			} else {
				require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
			}

			_, _, err = borrow("laptop-2", "")
			requireCode(t, err, server.EEXHAUSTED, server.ReasonBorrowLimit, "the borrowed seat still counts as borrowed")
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			_, err = s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tok))
			requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseBorrowed)

			again, _, err := borrow("laptop", "trip")
			require.NoError(t, err)
			require.True(t, again.Existing, "a retried borrow finds its lease after the rebuild")
			require.Equal(t, b.Lease.ID, again.Lease.ID)
			require.WithinDuration(t, b.Lease.ExpiresAt, again.Lease.ExpiresAt, time.Millisecond,
				"the deadline it was borrowed until, with no slack")
		})
	}
}
