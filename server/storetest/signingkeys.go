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
// that signs and one next key; first keys ensured by many at once are keys
// they all agree on, and a tenant from before next keys gets its next key
// without a change to the key that signs; a rotation retires the key that
// signs, promotes the next key and stores a new next key in one step,
// rotations at once take turns (none lost, none forked); keys are kept
// byte for byte (the private half as the caller sealed it) and survive a
// reopen; a failed write changes nothing.
func testSigningKeys(t *testing.T, newBackend Backend) {
	t.Run("FirstKeysNextPublishedNotSigning", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		base := now()
		keys, err := s.SigningKeys(t.Context(), tn.ID)
		require.NoError(t, err)
		require.NotNil(t, keys, "no keys is an empty list")
		require.Empty(t, keys)

		// The next key made on a clock behind: still listed first.
		s1, n1 := signingKeyFor(tn.ID, base), nextKeyFor(tn.ID, base.Add(-time.Second))
		keys, err = s.EnsureSigningKeys(t.Context(), tn.ID, s1, n1)
		require.NoError(t, err)
		require.Len(t, keys, 2)
		requireSameSigningKey(t, n1, keys[0], "the next key first, then the key that signs")
		requireSameSigningKey(t, s1, keys[1])
		require.Equal(t, server.KeyNext, keys[0].State())
		require.Equal(t, server.KeySigning, keys[1].State())
		requireSameSigningKeys(t, keys, signingKeys(t, s, tn.ID))

		again, err := s.EnsureSigningKeys(t.Context(), tn.ID,
			signingKeyFor(tn.ID, base.Add(time.Second)), nextKeyFor(tn.ID, base.Add(time.Second)))
		require.NoError(t, err)
		requireSameSigningKeys(t, keys, again, "with both keys there, nothing is stored")
		again, err = s.EnsureSigningKeys(t.Context(), tn.ID, server.SigningKey{}, server.SigningKey{})
		require.NoError(t, err)
		requireSameSigningKeys(t, keys, again, "no keys given: the keys are read")
		requireSameSigningKeys(t, keys, signingKeys(t, s, tn.ID))
	})

	t.Run("TenantWithoutNextKeyGetsOne", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		s1 := signingKeyFor(tn.ID, now())
		keys, err := s.EnsureSigningKeys(t.Context(), tn.ID, s1, server.SigningKey{})
		require.NoError(t, err)
		require.Len(t, keys, 1, "a key that signs alone: a tenant from before next keys")
		requireSameSigningKey(t, s1, keys[0])

		n1 := nextKeyFor(tn.ID, now().Add(time.Millisecond))
		keys, err = s.EnsureSigningKeys(t.Context(), tn.ID, signingKeyFor(tn.ID, now()), n1)
		require.NoError(t, err)
		require.Equal(t, []string{n1.ID, s1.ID}, signingKeyIDs(keys), "the next key is added, the key that signs kept")
		requireSameSigningKey(t, s1, keys[1])
		require.Equal(t, server.KeySigning, keys[1].State())
		require.Equal(t, server.KeyNext, keys[0].State())
	})

	t.Run("RotationPromotesTheNextKey", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		base := now()
		s1, n1 := signingKeyFor(tn.ID, base), nextKeyFor(tn.ID, base.Add(time.Millisecond))
		_, err := s.EnsureSigningKeys(t.Context(), tn.ID, s1, n1)
		require.NoError(t, err)

		n2 := nextKeyFor(tn.ID, base.Add(time.Second))
		got, err := s.RotateSigningKey(t.Context(), n2)
		require.NoError(t, err)
		promoted := n1
		promoted.Next = false
		requireSameSigningKey(t, promoted, got, "the next key signs now, as it was published")
		keys := signingKeys(t, s, tn.ID)
		require.Equal(t, []string{n2.ID, n1.ID, s1.ID}, signingKeyIDs(keys))
		requireSameSigningKey(t, n2, keys[0], "the new next key")
		requireSameSigningKey(t, promoted, keys[1])
		retired := s1
		retired.RetiredAt = n2.CreatedAt
		requireSameSigningKey(t, retired, keys[2], "the key that signed is retired when the rotation was made")
		require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning, server.KeyRetired}, signingKeyStates(keys))

		n3 := nextKeyFor(tn.ID, base.Add(2*time.Second))
		got, err = s.RotateSigningKey(t.Context(), n3)
		require.NoError(t, err)
		require.Equal(t, n2.ID, got.ID)
		require.Equal(t, server.KeySigning, got.State())
		keys = signingKeys(t, s, tn.ID)
		require.Equal(t, []string{n3.ID, n2.ID, n1.ID, s1.ID}, signingKeyIDs(keys))
		require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning, server.KeyRetired, server.KeyRetired}, signingKeyStates(keys))
		requireSameTime(t, n3.CreatedAt, keys[2].RetiredAt)
		requireSameTime(t, n2.CreatedAt, keys[3].RetiredAt, "a retired key stays retired when it was")
	})

	t.Run("RotationNeedsBothKeys", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		_, err := s.RotateSigningKey(t.Context(), nextKeyFor(tn.ID, now()))
		requireCode(t, err, server.EPRECONDITION, "", "no keys")
		s1 := signingKeyFor(tn.ID, now())
		_, err = s.EnsureSigningKeys(t.Context(), tn.ID, s1, server.SigningKey{})
		require.NoError(t, err)
		_, err = s.RotateSigningKey(t.Context(), nextKeyFor(tn.ID, now().Add(time.Second)))
		requireCode(t, err, server.EPRECONDITION, "", "no next key")
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, 1, "a refused rotation changes nothing")
		requireSameSigningKey(t, s1, keys[0])
	})

	t.Run("UnknownTenantAndIsolation", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		a, b := newTenant(t, s), newTenant(t, s)
		nobody := server.NewID("tnt_")
		_, err := s.EnsureSigningKeys(t.Context(), nobody, signingKeyFor(nobody, now()), nextKeyFor(nobody, now()))
		requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound)
		_, err = s.RotateSigningKey(t.Context(), nextKeyFor(nobody, now()))
		requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound)

		sa, na := signingKeyFor(a.ID, now()), nextKeyFor(a.ID, now().Add(time.Millisecond))
		_, err = s.EnsureSigningKeys(t.Context(), a.ID, sa, na)
		require.NoError(t, err)
		require.Empty(t, signingKeys(t, s, b.ID), "another tenant's keys are not listed")
		_, err = s.RotateSigningKey(t.Context(), nextKeyFor(b.ID, now()))
		requireCode(t, err, server.EPRECONDITION, "", "another tenant's keys are not b's")
		sb, nb := signingKeyFor(b.ID, now()), nextKeyFor(b.ID, now().Add(time.Millisecond))
		keys, err := s.EnsureSigningKeys(t.Context(), b.ID, sb, nb)
		require.NoError(t, err)
		require.Equal(t, []string{nb.ID, sb.ID}, signingKeyIDs(keys), "a tenant's first keys are its own, whatever other tenants have")
		_, err = s.RotateSigningKey(t.Context(), nextKeyFor(b.ID, now().Add(time.Second)))
		require.NoError(t, err)
		require.Equal(t, []string{na.ID, sa.ID}, signingKeyIDs(signingKeys(t, s, a.ID)), "b's rotation leaves a's keys")
		require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning}, signingKeyStates(signingKeys(t, s, a.ID)))
	})

	t.Run("ConcurrentFirstKeysAgree", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		const n = 8
		got := make([][]server.SigningKey, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.EnsureSigningKeys(t.Context(), tn.ID, signingKeyFor(tn.ID, now()), nextKeyFor(tn.ID, now().Add(time.Millisecond)))
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			requireSameSigningKeys(t, got[0], got[i], "every caller gets the keys that won")
		}
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, 2)
		require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning}, signingKeyStates(keys))
		requireSameSigningKeys(t, got[0], keys)
	})

	t.Run("ConcurrentRotationsTakeTurns", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		s1, n1 := signingKeyFor(tn.ID, now()), nextKeyFor(tn.ID, now().Add(time.Millisecond))
		_, err := s.EnsureSigningKeys(t.Context(), tn.ID, s1, n1)
		require.NoError(t, err)
		const n = 6
		var wg sync.WaitGroup
		nexts := make([]server.SigningKey, n)
		got := make([]server.SigningKey, n)
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			nexts[i] = nextKeyFor(tn.ID, now().Add(time.Duration(i+1)*time.Second))
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.RotateSigningKey(t.Context(), nexts[i])
			})
		}
		close(start)
		wg.Wait()
		// Each rotation promoted the next key the one before it stored:
		// n1 and all new next keys but the last form one chain.
		next := map[string]bool{n1.ID: true}
		for _, k := range nexts {
			next[k.ID] = true
		}
		promoted := map[string]bool{}
		for i := range n {
			require.NoError(t, errs[i])
			require.True(t, next[got[i].ID], "a rotation promotes a next key")
			require.False(t, promoted[got[i].ID], "no next key is promoted twice")
			promoted[got[i].ID] = true
		}
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, n+2, "no key lost")
		counts := map[server.SigningKeyState]int{}
		for _, k := range keys {
			counts[k.State()]++
		}
		require.Equal(t, map[server.SigningKeyState]int{server.KeySigning: 1, server.KeyNext: 1, server.KeyRetired: n}, counts)
		for _, k := range keys {
			switch k.State() {
			case server.KeyNext:
				require.False(t, promoted[k.ID], "the next key left is the one no rotation promoted")
			case server.KeySigning:
				require.True(t, promoted[k.ID])
			}
		}
	})

	t.Run("TransientErrorChangesNothing", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		fs := faultsOf(t, s)
		tn := newTenant(t, s)
		s1 := signingKeyFor(tn.ID, now())
		_, err := s.EnsureSigningKeys(t.Context(), tn.ID, s1, server.SigningKey{})
		require.NoError(t, err)
		withFault(t, fs, FaultRecord, func() {
			_, err := s.EnsureSigningKeys(t.Context(), tn.ID, server.SigningKey{}, nextKeyFor(tn.ID, now().Add(time.Second)))
			requireUnavailable(t, err, "EnsureSigningKeys")
		})
		keys := signingKeys(t, s, tn.ID)
		require.Len(t, keys, 1)
		requireSameSigningKey(t, s1, keys[0])

		n1 := nextKeyFor(tn.ID, now().Add(time.Second))
		_, err = s.EnsureSigningKeys(t.Context(), tn.ID, server.SigningKey{}, n1)
		require.NoError(t, err)
		before := signingKeys(t, s, tn.ID)
		withFault(t, fs, FaultRecord, func() {
			_, err := s.RotateSigningKey(t.Context(), nextKeyFor(tn.ID, now().Add(2*time.Second)))
			requireUnavailable(t, err, "RotateSigningKey")
		})
		requireSameSigningKeys(t, before, signingKeys(t, s, tn.ID), "a failed rotation leaves the keys as they were")
	})

	t.Run("KeysSurviveReopen", func(t *testing.T) {
		t.Parallel()
		open := newBackend(t)
		s1 := openReopenable(t, open)
		tn := newTenant(t, s1)
		_, err := s1.EnsureSigningKeys(t.Context(), tn.ID, signingKeyFor(tn.ID, now()), nextKeyFor(tn.ID, now().Add(time.Millisecond)))
		require.NoError(t, err)
		_, err = s1.RotateSigningKey(t.Context(), nextKeyFor(tn.ID, now().Add(time.Second)))
		require.NoError(t, err)
		before := signingKeys(t, s1, tn.ID)
		require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning, server.KeyRetired}, signingKeyStates(before))
		require.NoError(t, s1.Close())
		s2 := openWith(t, open)
		requireSameSigningKeys(t, before, signingKeys(t, s2, tn.ID))
		_, err = s2.RotateSigningKey(t.Context(), nextKeyFor(tn.ID, now().Add(2*time.Second)))
		require.NoError(t, err, "the reopened store rotates")
		require.Equal(t, before[0].ID, signingKeys(t, s2, tn.ID)[1].ID, "the next key from before the reopen signs")
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

// nextKeyFor is signingKeyFor's key as a next key.
func nextKeyFor(tenantID string, at time.Time) server.SigningKey {
	k := signingKeyFor(tenantID, at)
	k.Next = true
	return k
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

func signingKeyStates(keys []server.SigningKey) []server.SigningKeyState {
	var out []server.SigningKeyState
	for _, k := range keys {
		out = append(out, k.State())
	}
	return out
}

func requireSameSigningKeys(t *testing.T, want, got []server.SigningKey, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, signingKeyIDs(want), signingKeyIDs(got), msgAndArgs...)
	for i := range want {
		requireSameSigningKey(t, want[i], got[i], msgAndArgs...)
	}
}

func requireSameSigningKey(t *testing.T, want, got server.SigningKey, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, msgAndArgs...)
	require.Equal(t, want.TenantID, got.TenantID, msgAndArgs...)
	require.Equal(t, []byte(want.PublicKey), []byte(got.PublicKey), msgAndArgs...)
	require.Equal(t, want.PrivateKey, got.PrivateKey, msgAndArgs...)
	requireSameTime(t, want.CreatedAt, got.CreatedAt, msgAndArgs...)
	require.Equal(t, want.Next, got.Next, msgAndArgs...)
	requireSameTime(t, want.RetiredAt, got.RetiredAt, msgAndArgs...)
}
