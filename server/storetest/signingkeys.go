package storetest

import (
	"crypto/ed25519"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testSigningKeys: server.SigningKeyStore. A tenant has at most one key
// that signs; a first key added by many at once is one key they all agree
// on; a rotation retires the key before it in the same step; keys are kept
// byte for byte (the private half as the caller sealed it) and survive a
// reopen; a failed write changes nothing.
func testSigningKeys(t *testing.T, newBackend Backend) {
	t.Run("FirstKeyReplaceAndList", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		base := now()
		keys, err := s.SigningKeys(t.Context(), tn.ID)
		require.NoError(t, err)
		require.NotNil(t, keys, "no keys is an empty list")
		require.Empty(t, keys)

		k1 := signingKeyFor(tn.ID, base)
		got, err := s.AddSigningKey(t.Context(), k1, false)
		require.NoError(t, err)
		requireSameSigningKey(t, k1, got)

		k2 := signingKeyFor(tn.ID, base.Add(time.Second))
		got, err = s.AddSigningKey(t.Context(), k2, false)
		require.NoError(t, err)
		requireSameSigningKey(t, k1, got, "without replace the key that signs is returned")
		keys = signingKeys(t, s, tn.ID)
		require.Len(t, keys, 1, "without replace nothing is stored")

		k3 := signingKeyFor(tn.ID, base.Add(2*time.Second))
		got, err = s.AddSigningKey(t.Context(), k3, true)
		require.NoError(t, err)
		requireSameSigningKey(t, k3, got)
		keys = signingKeys(t, s, tn.ID)
		require.Len(t, keys, 2)
		requireSameSigningKey(t, k3, keys[0], "newest first")
		retired := k1
		retired.RetiredAt = k3.CreatedAt
		requireSameSigningKey(t, retired, keys[1], "the key before is retired when the new one was created")

		k4 := signingKeyFor(tn.ID, base.Add(3*time.Second))
		_, err = s.AddSigningKey(t.Context(), k4, true)
		require.NoError(t, err)
		keys = signingKeys(t, s, tn.ID)
		require.Equal(t, []string{k4.ID, k3.ID, k1.ID}, signingKeyIDs(keys))
		require.Equal(t, 1, signing(keys), "one key signs")
		requireSameTime(t, k4.CreatedAt, keys[1].RetiredAt)
		requireSameTime(t, k3.CreatedAt, keys[2].RetiredAt, "a retired key stays retired when it was")
	})

	t.Run("UnknownTenantAndIsolation", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		a, b := newTenant(t, s), newTenant(t, s)
		for _, replace := range []bool{false, true} {
			_, err := s.AddSigningKey(t.Context(), signingKeyFor(server.NewID("tnt_"), now()), replace)
			requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound, "replace=%v", replace)
		}
		ka := signingKeyFor(a.ID, now())
		_, err := s.AddSigningKey(t.Context(), ka, false)
		require.NoError(t, err)
		require.Empty(t, signingKeys(t, s, b.ID), "another tenant's key is not listed")
		kb := signingKeyFor(b.ID, now())
		got, err := s.AddSigningKey(t.Context(), kb, false)
		require.NoError(t, err)
		requireSameSigningKey(t, kb, got, "a tenant's first key is its own, whatever other tenants have")
		require.Equal(t, []string{ka.ID}, signingKeyIDs(signingKeys(t, s, a.ID)))
	})

	t.Run("ConcurrentFirstKeysAgree", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		const n = 8
		got := make([]server.SigningKey, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.AddSigningKey(t.Context(), signingKeyFor(tn.ID, now()), false)
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			requireSameSigningKey(t, got[0], got[i], "every caller gets the one key that won")
		}
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, 1)
		requireSameSigningKey(t, got[0], keys[0])
	})

	t.Run("ConcurrentRotationsLeaveOneSigning", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		_, err := s.AddSigningKey(t.Context(), signingKeyFor(tn.ID, now()), false)
		require.NoError(t, err)
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = s.AddSigningKey(t.Context(), signingKeyFor(tn.ID, now().Add(time.Duration(i+1)*time.Millisecond)), true)
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, n+1)
		require.Equal(t, 1, signing(keys), "one key signs after rotations at once")
	})

	t.Run("TransientErrorChangesNothing", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		fs := faultsOf(t, s)
		tn := newTenant(t, s)
		k1 := signingKeyFor(tn.ID, now())
		_, err := s.AddSigningKey(t.Context(), k1, false)
		require.NoError(t, err)
		withFault(t, fs, FaultRecord, func() {
			for _, replace := range []bool{false, true} {
				_, err := s.AddSigningKey(t.Context(), signingKeyFor(tn.ID, now().Add(time.Second)), replace)
				requireUnavailable(t, err, "AddSigningKey")
			}
		})
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, 1)
		requireSameSigningKey(t, k1, keys[0])
	})

	t.Run("KeysSurviveReopen", func(t *testing.T) {
		t.Parallel()
		open := newBackend(t)
		s1 := openReopenable(t, open)
		tn := newTenant(t, s1)
		k1, k2 := signingKeyFor(tn.ID, now()), signingKeyFor(tn.ID, now().Add(time.Second))
		_, err := s1.AddSigningKey(t.Context(), k1, false)
		require.NoError(t, err)
		_, err = s1.AddSigningKey(t.Context(), k2, true)
		require.NoError(t, err)
		before := signingKeys(t, s1, tn.ID)
		require.NoError(t, s1.Close())
		s2 := openWith(t, open)
		after := signingKeys(t, s2, tn.ID)
		require.Len(t, after, len(before))
		for i := range before {
			requireSameSigningKey(t, before[i], after[i])
		}
	})
}

// signingKeyFor is a key of the tenant created at at: a real Ed25519
// public key, and stand-in bytes for the sealed private half (the store
// keeps them as given).
func signingKeyFor(tenantID string, at time.Time) server.SigningKey {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	private := make([]byte, 80)
	_, _ = rand.Read(private)
	return server.SigningKey{
		ID: server.NewID("kid_"), TenantID: tenantID, PublicKey: pub, PrivateKey: private, CreatedAt: at,
	}
}

func signingKeys(t *testing.T, s server.Store, tenantID string) []server.SigningKey {
	t.Helper()
	keys, err := s.SigningKeys(t.Context(), tenantID)
	require.NoError(t, err)
	return keys
}

func signingKeyIDs(keys []server.SigningKey) []string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

// signing counts the keys that sign (not retired).
func signing(keys []server.SigningKey) int {
	n := 0
	for _, k := range keys {
		if k.RetiredAt.IsZero() {
			n++
		}
	}
	return n
}

func requireSameSigningKey(t *testing.T, want, got server.SigningKey, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, msgAndArgs...)
	require.Equal(t, want.TenantID, got.TenantID, msgAndArgs...)
	require.Equal(t, []byte(want.PublicKey), []byte(got.PublicKey), msgAndArgs...)
	require.Equal(t, want.PrivateKey, got.PrivateKey, msgAndArgs...)
	requireSameTime(t, want.CreatedAt, got.CreatedAt, msgAndArgs...)
	requireSameTime(t, want.RetiredAt, got.RetiredAt, msgAndArgs...)
}
