package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// verifying is a client that checks certificates against the fake's key.
func verifying(t *testing.T, o Options, configure func(f *fakeServer)) *testBundle {
	t.Helper()
	signer := newTestSigner("k1")
	keys, err := ParseSigningKeys(jwks(signer))
	require.NoError(t, err)
	o.SigningKeys = keys
	return setup(t, o, func(f *fakeServer) {
		f.signer = signer
		if configure != nil {
			configure(f)
		}
	})
}

func requireBadCertificate(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrBadCertificate)
	require.ErrorIs(t, err, ErrLeaseLost, "a bad certificate is a lost lease")
	require.Equal(t, ReasonBadCertificate, Reason(err))
	var ce *CertificateError
	require.ErrorAs(t, err, &ce)
	require.NotEmpty(t, ce.Problem)
}

func TestVerifiedLeaseIsKept(t *testing.T) {
	for _, unary := range []bool{false, true} {
		name := map[bool]string{false: "stream", true: "unary"}[unary]
		t.Run(name, func(t *testing.T) {
			b := verifying(t, DefaultOptions(), func(f *fakeServer) { f.streamUnimplemented = unary })
			l := acquire(t, b)
			first := l.Certificate()
			require.NotEmpty(t, first)

			eventually(t, func() bool { return b.fake.beats(l.ID()) >= 3 }, "heartbeats")
			eventually(t, func() bool { return l.Certificate() != first }, "each answer's certificate is kept")
			requireNotLost(t, l)

			claims, err := b.client.opts.SigningKeys.Verify(l.Certificate(), time.Now())
			require.NoError(t, err)
			require.Equal(t, l.ID(), claims.LeaseID)
			require.Equal(t, "fp", claims.Fingerprint)
			require.Equal(t, "lic-1", claims.LicenseID)
			require.Equal(t, "k1", claims.KeyID)
			require.False(t, claims.Borrowed)
			require.Len(t, claims.Nonce, 22, "16 random bytes, base64url")
			require.NoError(t, l.Release(testContext(t)))
		})
	}
}

// TestAcquireRefusesABadCertificate: an answer whose certificate is missing,
// forged, replayed or for something else is no seat: Acquire fails with
// ErrBadCertificate and gives the seat back.
func TestAcquireRefusesABadCertificate(t *testing.T) {
	for forge, name := range forgeries {
		t.Run(name, func(t *testing.T) {
			b := verifying(t, DefaultOptions(), func(f *fakeServer) { f.forge = forge })
			_, err := b.client.Acquire(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"})
			requireBadCertificate(t, err)
			require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.live() }), "the refused seat is given back")
		})
	}
	t.Run("server without certificates", func(t *testing.T) {
		b := verifying(t, DefaultOptions(), func(f *fakeServer) { f.signer = nil })
		_, err := b.client.Acquire(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"})
		requireBadCertificate(t, err)
	})
}

// TestBadCertificateLosesTheLease: a heartbeat answered with a bad
// certificate (a fake server taking over, or a replay) ends the lease as an
// expiry would: Lost closes, the keeper stops, and the seat is given back.
func TestBadCertificateLosesTheLease(t *testing.T) {
	for _, forge := range []forgery{forgeMissing, forgeOtherKey, forgeNonce, forgeExp, forgeByte} {
		for _, unary := range []bool{false, true} {
			name := forgeries[forge] + map[bool]string{false: " on the stream", true: " unary"}[unary]
			t.Run(name, func(t *testing.T) {
				b := verifying(t, DefaultOptions(), func(f *fakeServer) { f.streamUnimplemented = unary })
				l := acquire(t, b)
				eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "heartbeats")

				b.fake.set(func(f *fakeServer) { f.forge = forge })
				requireLost(t, l)
				requireBadCertificate(t, l.Err())
				eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.live() }) == 0 }, "the seat given back")
				eventually(t, func() bool { return isClosed(l.keep.done) }, "the keeper stops")
				requireNotKept(t, b, l, "after a bad certificate")
				require.NoError(t, l.Release(testContext(t)), "nothing left to release")
			})
		}
	}
}

func TestBadCertificateIsNotAcquiredAgain(t *testing.T) {
	b := verifying(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, nil)
	l := acquire(t, b)
	b.fake.set(func(f *fakeServer) { f.forge = forgeOtherKey })
	requireLost(t, l)
	requireBadCertificate(t, l.Err())
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.acquires }), "an untrusted server gets no second acquisition")
}

func TestHeartbeatByHandChecksTheCertificate(t *testing.T) {
	b := verifying(t, Options{}, nil)
	l := acquire(t, b)
	require.NoError(t, l.Heartbeat(testContext(t)))
	b.fake.set(func(f *fakeServer) { f.forge = forgeNonce })
	requireBadCertificate(t, l.Heartbeat(testContext(t)))
	requireLost(t, l)
}

func TestWaitForSeatChecksTheGrant(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		b := verifying(t, DefaultOptions(), func(f *fakeServer) { f.positions = []int32{2, 1} })
		l, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}, nil)
		require.NoError(t, err)
		require.NotEmpty(t, l.Certificate())
		require.NoError(t, l.Release(testContext(t)))
	})
	t.Run("bad", func(t *testing.T) {
		b := verifying(t, DefaultOptions(), func(f *fakeServer) { f.positions = []int32{1}; f.forge = forgeUnknownKid })
		_, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}, nil)
		requireBadCertificate(t, err)
		require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.live() }), "the refused seat is given back")
	})
}

func TestBorrow(t *testing.T) {
	b := verifying(t, DefaultOptions(), nil)
	keys := jwks(b.fake.signer)
	l, err := b.client.Borrow(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "laptop"}, 72*time.Hour)
	require.NoError(t, err)
	require.True(t, l.Borrowed())
	requireNotKept(t, b, l, "a borrowed lease needs no heartbeats")
	require.WithinDuration(t, time.Now().Add(72*time.Hour), l.ExpiresAt(), time.Minute)

	// On the laptop, offline: the stored certificate and the embedded JWKS.
	claims, err := VerifyOffline(l.Certificate(), keys, time.Now().Add(71*time.Hour))
	require.NoError(t, err)
	require.True(t, claims.Borrowed)
	require.Equal(t, "laptop", claims.Fingerprint)
	require.Equal(t, "lic-1", claims.LicenseID)
	require.Equal(t, l.ID(), claims.LeaseID)
	require.Equal(t, l.ExpiresAt().Unix(), claims.Expiry.Unix())
	_, err = VerifyOffline(l.Certificate(), keys, l.ExpiresAt().Add(time.Second))
	require.ErrorIs(t, err, ErrBadCertificate)
	require.ErrorIs(t, err, ErrCertificateExpired)

	// ReleaseSeat by id and token reaches the server (the fake takes a
	// borrowed lease back; seatd refuses an early return: e2e TestClientCert).
	require.NoError(t, b.client.ReleaseSeat(testContext(t), l.ID(), l.Token()))
	require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.live() }))
	require.ErrorIs(t, b.client.ReleaseSeat(testContext(t), "lease-none", "t"), ErrLeaseLost)

	_, err = b.client.Borrow(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "laptop"}, 0)
	require.Error(t, err)
}

// TestBorrowNeedsABorrowedCertifiedLease: without signing keys Borrow still
// refuses an answer it could not store (no certificate) or that is not a
// borrow (a server that ignored borrow_duration), and gives the seat back.
func TestBorrowNeedsABorrowedCertifiedLease(t *testing.T) {
	t.Run("no certificate", func(t *testing.T) {
		b := setup(t, DefaultOptions(), nil)
		_, err := b.client.Borrow(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "laptop"}, time.Hour)
		requireBadCertificate(t, err)
		require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.live() }))
	})
	t.Run("not lent", func(t *testing.T) {
		b := setup(t, DefaultOptions(), func(f *fakeServer) { f.signer = newTestSigner("k1"); f.noBorrow = true })
		_, err := b.client.Borrow(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "laptop"}, time.Hour)
		requireBadCertificate(t, err)
		require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.live() }))
	})
}

func TestVerifyOffline(t *testing.T) {
	signer, other := newTestSigner("k1"), newTestSigner("k2")
	keys := jwks(signer)
	deadline := time.Now().Add(time.Hour)
	good := signer.certificate(forgeNothing, certClaims("lease-1", "fp", deadline, true, "n"))

	claims, err := VerifyOffline(good, keys, time.Now())
	require.NoError(t, err)
	require.Equal(t, Claims{
		Issuer: "seatd", LeaseID: "lease-1", TenantID: "default", LicenseID: "lic-1", Fingerprint: "fp",
		BoundTo: BoundToFingerprint, LicenseKeySHA256: LicenseKeyHash("key"),
		IssuedAt: claims.IssuedAt, Expiry: time.Unix(deadline.Unix(), 0), Borrowed: true, Nonce: "n", KeyID: "k1",
	}, claims)
	require.NoError(t, claims.CheckHolder(AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}))
	require.WithinDuration(t, time.Now(), claims.IssuedAt, 2*time.Second)

	_, err = VerifyOffline(good, jwks(signer, other), time.Now())
	require.NoError(t, err, "a JWKS with more keys (after a rotation) still verifies")
	_, err = VerifyOffline(good, jwks(other), time.Now())
	require.ErrorIs(t, err, ErrBadCertificate, "another tenant's JWKS")
	require.NotErrorIs(t, err, ErrCertificateExpired)

	for _, forge := range []forgery{forgeOtherKey, forgeUnknownKid, forgeByte, forgeAlgNone, forgeIssuer, forgeMissing} {
		cert := signer.certificate(forge, certClaims("lease-1", "fp", deadline, true, "n"))
		_, err := VerifyOffline(cert, keys, time.Now())
		require.ErrorIs(t, err, ErrBadCertificate, forgeries[forge])
	}
	for _, junk := range []string{"x", "a.b.c", good + "x", good[:len(good)-2]} {
		_, err := VerifyOffline(junk, keys, time.Now())
		require.ErrorIs(t, err, ErrBadCertificate, junk)
	}

	_, err = VerifyOffline(good, keys, time.Unix(deadline.Unix(), 0))
	require.ErrorIs(t, err, ErrCertificateExpired, "exp is the first instant it is not valid")
	_, err = VerifyOffline(good, keys, time.Unix(deadline.Unix(), 0).Add(-time.Nanosecond))
	require.NoError(t, err)
}

// TestCheckHolder: a certificate is this client's only when it names the
// hash of the license key the client uses and the client's own identity,
// the one its lease is bound to; a certificate of an older seatd (neither
// claim) still verifies offline but names no holder.
func TestCheckHolder(t *testing.T) {
	signer := newTestSigner("k1")
	keys := jwks(signer)
	deadline := time.Now().Add(time.Hour)
	me := AcquireOptions{LicenseKey: "key", Fingerprint: "fp", User: "ann", Hostname: "box"}
	claimsOf := func(forge forgery) Claims {
		t.Helper()
		c, err := VerifyOffline(signer.certificate(forge, certClaims("lease-1", "fp", deadline, true, "n")), keys, time.Now())
		require.NoError(t, err, forgeries[forge])
		return c
	}
	require.NoError(t, claimsOf(forgeNothing).CheckHolder(me))
	for _, forge := range []forgery{forgeRelayed, forgeFingerprint, forgeLicenseKey, forgeUnbound, forgeOtherUser} {
		err := claimsOf(forge).CheckHolder(me)
		require.ErrorIs(t, err, ErrBadCertificate, forgeries[forge])
		var ce *CertificateError
		require.ErrorAs(t, err, &ce)
		require.NotContains(t, ce.Problem, "key\"", "the problem does not show the license key")
	}
	other := me
	other.LicenseKey = "another-key"
	require.ErrorIs(t, claimsOf(forgeNothing).CheckHolder(other), ErrBadCertificate)

	// A lease shared per user is bound to the user: another machine of
	// ann's holds it, bob does not, nor a client that sent no user.
	shared := claimsOf(forgeOtherUser) // bound to user bob, fingerprint fp
	bob := AcquireOptions{LicenseKey: "key", Fingerprint: "bobs-laptop", User: "bob"}
	require.NoError(t, shared.CheckHolder(bob))
	require.ErrorIs(t, shared.CheckHolder(AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}), ErrBadCertificate)
	shared.BoundTo, shared.Hostname = BoundToHostname, "box"
	require.NoError(t, shared.CheckHolder(me))
	require.ErrorIs(t, shared.CheckHolder(bob), ErrBadCertificate)
	shared.BoundTo = "group"
	require.ErrorIs(t, shared.CheckHolder(me), ErrBadCertificate, "an unknown binding")
}

// TestFeatureClaims: a certificate of a seat of a feature grant gives
// its feature, version, grant and grant expiry, and is this client's only
// for the feature and version the client asks for.
func TestFeatureClaims(t *testing.T) {
	signer := newTestSigner("k1")
	deadline := time.Now().Add(time.Hour)
	grantExpiry := time.Now().Add(30 * 24 * time.Hour)
	cc := certClaims("lease-1", "fp", deadline, true, "n")
	cc["feature"], cc["version"], cc["grant_id"], cc["grant_expires_at"] = "render", "2025", "lic-1.0a1b2c3d", grantExpiry.Unix()
	claims, err := VerifyOffline(signer.certificate(forgeNothing, cc), jwks(signer), time.Now())
	require.NoError(t, err)
	require.Equal(t, "render", claims.Feature)
	require.Equal(t, "2025", claims.Version)
	require.Equal(t, "lic-1.0a1b2c3d", claims.GrantID)
	require.Equal(t, time.Unix(grantExpiry.Unix(), 0), claims.GrantExpiresAt)

	me := AcquireOptions{LicenseKey: "key", Fingerprint: "fp", Feature: "render", Version: "2025"}
	require.NoError(t, claims.CheckHolder(me))
	for _, other := range []AcquireOptions{
		{LicenseKey: "key", Fingerprint: "fp"},
		{LicenseKey: "key", Fingerprint: "fp", Feature: "sim", Version: "2025"},
		{LicenseKey: "key", Fingerprint: "fp", Feature: "render", Version: "2024"},
	} {
		require.ErrorIs(t, claims.CheckHolder(other), ErrBadCertificate, "%+v", other)
	}
	base, err := VerifyOffline(signer.certificate(forgeNothing, certClaims("lease-2", "fp", deadline, true, "n")), jwks(signer), time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, base.CheckHolder(me), ErrBadCertificate, "a base seat's certificate is no feature's")
	require.True(t, base.GrantExpiresAt.IsZero())
}

func TestParseSigningKeys(t *testing.T) {
	signer := newTestSigner("k1")
	keys, err := ParseSigningKeys(jwks(signer))
	require.NoError(t, err)
	require.Equal(t, []string{"k1"}, keys.KeyIDs())

	for name, bad := range map[string]string{
		"not JSON":    `{`,
		"no keys":     `{"keys": []}`,
		"RSA only":    `{"keys": [{"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"}]}`,
		"private key": `{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "d": "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}`,
		"twice":       `{"keys": [` + string(mustJWK(signer)) + `,` + string(mustJWK(signer)) + `]}`,
	} {
		_, err := ParseSigningKeys([]byte(bad))
		require.Error(t, err, name)
	}
	// Other key types beside an Ed25519 key are skipped, not refused.
	keys, err = ParseSigningKeys([]byte(`{"keys": [{"kty": "RSA", "kid": "r", "n": "AQAB", "e": "AQAB"},` + string(mustJWK(signer)) + `]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"k1"}, keys.KeyIDs())
}

func mustJWK(s *testSigner) []byte {
	b := jwks(s)
	// {"keys": [ <key> ]}: the key between the brackets.
	start, end := 0, len(b)
	for i, c := range b {
		if c == '[' {
			start = i + 1
			break
		}
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ']' {
			end = i
			break
		}
	}
	return b[start:end]
}

func TestFetchSigningKeys(t *testing.T) {
	b := verifying(t, DefaultOptions(), nil)
	got, err := b.client.FetchSigningKeys(testContext(t), "")
	require.NoError(t, err)
	require.JSONEq(t, string(jwks(b.fake.signer)), string(got))
	keys, err := ParseSigningKeys(got)
	require.NoError(t, err)
	require.Equal(t, []string{"k1"}, keys.KeyIDs())
}

// TestNonceOnlyWhenVerifying: with SigningKeys every request carries a
// fresh nonce (acquire, acquiring again after an expiry, every heartbeat on
// the stream and unary, the wait), so every answer brings a certificate to
// check. Without, requests carry none, and seatd (the fake signs as it does)
// signs nothing for them; but a borrow always gets a certificate, and its
// request carries a nonce for the certificate to repeat.
func TestNonceOnlyWhenVerifying(t *testing.T) {
	for _, verify := range []bool{false, true} {
		t.Run(map[bool]string{false: "unchecked", true: "verifying"}[verify], func(t *testing.T) {
			o := Options{AutoHeartbeat: true, ReacquireOnExpiry: true}
			signer := newTestSigner("k1")
			var b *testBundle
			if verify {
				b = verifying(t, o, nil)
				signer = b.fake.signer
			} else {
				b = setup(t, o, func(f *fakeServer) { f.signer = signer })
			}
			ctx := testContext(t)
			l := acquire(t, b)
			old := l.ID()
			eventually(t, func() bool { return b.fake.beats(old) >= 2 }, "stream heartbeats")
			b.fake.end(old, ReasonLeaseExpired)
			eventually(t, func() bool { return l.ID() != old }, "acquired again")
			eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "the new lease is heartbeated")
			require.NoError(t, l.Heartbeat(ctx), "a unary heartbeat")
			w, err := b.client.WaitForSeat(ctx, AcquireOptions{LicenseKey: "key", Fingerprint: "fp-2"}, nil)
			require.NoError(t, err)
			requireNotLost(t, l)
			if verify {
				require.NotEmpty(t, l.Certificate())
				require.NotEmpty(t, w.Certificate())
			} else {
				require.Empty(t, l.Certificate(), "no nonce, no certificate")
				require.Empty(t, w.Certificate(), "no nonce, no certificate")
			}
			require.NoError(t, w.Release(ctx))
			require.NoError(t, l.Release(ctx))

			seen := b.fake.seenNonces()
			sent := map[string]bool{}
			for _, rpc := range []string{"acquire", "stream", "heartbeat", "wait"} {
				require.NotEmpty(t, seen[rpc], "no %s request seen", rpc)
				for _, n := range seen[rpc] {
					if !verify {
						require.Empty(t, n, "a %s request without SigningKeys carries no nonce", rpc)
						continue
					}
					require.Len(t, n, 22, "%s: 16 random bytes, base64url", rpc)
					require.False(t, sent[n], "%s: nonce %q sent twice", rpc, n)
					sent[n] = true
				}
			}
			require.GreaterOrEqual(t, len(seen["acquire"]), 2, "the acquisition and the one after the expiry")

			// A borrow sends a nonce, checked or not, and its certificate repeats it.
			bl, err := b.client.Borrow(ctx, AcquireOptions{LicenseKey: "key", Fingerprint: "laptop"}, time.Hour)
			require.NoError(t, err)
			acquires := b.fake.seenNonces()["acquire"]
			nonce := acquires[len(acquires)-1]
			require.Len(t, nonce, 22)
			require.False(t, sent[nonce], "a fresh nonce")
			claims, err := VerifyOffline(bl.Certificate(), jwks(signer), time.Now())
			require.NoError(t, err)
			require.Equal(t, nonce, claims.Nonce)
			require.NoError(t, bl.Release(ctx))
		})
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
