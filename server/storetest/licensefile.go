package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testLicenseFile: server.LicenseFileStore. The first site key stored
// stays the site key (ensured by many at once, all get the one that
// won); the file in force only moves to a higher serial, never back nor
// sideways (the same serial with another hash), concurrent moves end at
// the highest; both survive a reopen; a failed write changes nothing.
func testLicenseFile(t *testing.T, newBackend Backend) {
	t.Run("FirstSiteKeyStays", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		none, err := s.EnsureSiteKey(t.Context(), server.SigningKey{})
		require.NoError(t, err)
		require.Empty(t, none.ID, "no site key yet")

		k1 := siteKeyAt(now())
		got, err := s.EnsureSiteKey(t.Context(), k1)
		require.NoError(t, err)
		requireSameSigningKey(t, k1, got)
		got, err = s.EnsureSiteKey(t.Context(), siteKeyAt(now().Add(time.Second)))
		require.NoError(t, err)
		requireSameSigningKey(t, k1, got, "a second key is not stored: the first one is answered")
		got, err = s.EnsureSiteKey(t.Context(), server.SigningKey{})
		require.NoError(t, err)
		requireSameSigningKey(t, k1, got)
	})

	t.Run("ConcurrentSiteKeysAgree", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		const n = 8
		got := make([]server.SigningKey, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.EnsureSiteKey(t.Context(), siteKeyAt(now()))
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			requireSameSigningKey(t, got[0], got[i], "every caller gets the key that won")
		}
	})

	t.Run("FileInForceOnlyMovesUp", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		cur, err := s.FileInForce(t.Context())
		require.NoError(t, err)
		require.Zero(t, cur.Serial, "no file in force yet")

		before := time.Now()
		f5, err := s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 5, Hash: "h5"})
		require.NoError(t, err)
		require.Equal(t, int64(5), f5.Serial)
		require.Equal(t, "h5", f5.Hash)
		require.WithinDuration(t, before, f5.SetAt, time.Minute, "SetAt is the store's clock")
		requireFileInForce(t, s, f5)

		again, err := s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 5, Hash: "h5"})
		require.NoError(t, err, "the file in force again is no change")
		requireSameFileRecord(t, f5, again, "SetAt is when it was first put in force")

		for _, bad := range []server.LicenseFileRecord{{Serial: 4, Hash: "h4"}, {Serial: 5, Hash: "other"}, {Serial: 1, Hash: "h5"}} {
			_, err := s.SetFileInForce(t.Context(), bad)
			requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseFileRefused, "serial %d hash %s", bad.Serial, bad.Hash)
			var e *server.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, "not_newer", e.Metadata["cause"])
			require.Equal(t, "5", e.Metadata["serial_in_force"])
			requireFileInForce(t, s, f5)
		}
		for _, bad := range []server.LicenseFileRecord{{Serial: 0, Hash: "h"}, {Serial: 9}} {
			_, err := s.SetFileInForce(t.Context(), bad)
			requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
			requireFileInForce(t, s, f5)
		}

		f9, err := s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 9, Hash: "h9"})
		require.NoError(t, err)
		require.Equal(t, int64(9), f9.Serial)
		requireFileInForce(t, s, f9)
	})

	t.Run("ConcurrentMovesEndAtTheHighest", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: int64(i + 1), Hash: "h"})
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				requireCode(t, errs[i], server.EPRECONDITION, server.ReasonLicenseFileRefused, "serial %d", i+1)
			}
		}
		require.NoError(t, errs[n-1], "the highest serial is never refused")
		cur, err := s.FileInForce(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(n), cur.Serial)
	})

	t.Run("TransientErrorChangesNothing", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		fs := faultsOf(t, s)
		f3, err := s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 3, Hash: "h3"})
		require.NoError(t, err)
		withFault(t, fs, FaultRecord, func() {
			_, err := s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 4, Hash: "h4"})
			requireUnavailable(t, err, "SetFileInForce")
			_, err = s.EnsureSiteKey(t.Context(), siteKeyAt(now()))
			requireUnavailable(t, err, "EnsureSiteKey")
		})
		requireFileInForce(t, s, f3)
		none, err := s.EnsureSiteKey(t.Context(), server.SigningKey{})
		require.NoError(t, err)
		require.Empty(t, none.ID, "the failed ensure stored no key")
	})

	t.Run("SurviveReopen", func(t *testing.T) {
		t.Parallel()
		open := newBackend(t)
		s1 := openReopenable(t, open)
		k := siteKeyAt(now())
		_, err := s1.EnsureSiteKey(t.Context(), k)
		require.NoError(t, err)
		f, err := s1.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 12, Hash: "h12"})
		require.NoError(t, err)
		require.NoError(t, s1.Close())
		s2 := openWith(t, open)
		got, err := s2.EnsureSiteKey(t.Context(), siteKeyAt(now()))
		require.NoError(t, err)
		requireSameSigningKey(t, k, got)
		requireFileInForce(t, s2, f)
		_, err = s2.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 11, Hash: "h11"})
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseFileRefused, "an older file after a reopen")
	})
}

// siteKeyAt is a site key created at at (signingKeyFor without a tenant).
func siteKeyAt(at time.Time) server.SigningKey { return signingKeyFor("", at) }

func requireFileInForce(t *testing.T, s server.Store, want server.LicenseFileRecord) {
	t.Helper()
	got, err := s.FileInForce(t.Context())
	require.NoError(t, err)
	requireSameFileRecord(t, want, got)
}

func requireSameFileRecord(t *testing.T, want, got server.LicenseFileRecord, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.Serial, got.Serial, msgAndArgs...)
	require.Equal(t, want.Hash, got.Hash, msgAndArgs...)
	requireSameTime(t, want.SetAt, got.SetAt, msgAndArgs...)
}
