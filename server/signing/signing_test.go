package signing

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// memKeys is a KeyStore in memory with the store's promises (one key that
// signs and one next key per tenant, a rotation promotes the next key).
type memKeys struct {
	mu      sync.Mutex
	tenants map[string]bool
	keys    []server.SigningKey // newest first
	reads   int
}

func newMemKeys(tenants ...string) *memKeys {
	m := &memKeys{tenants: map[string]bool{}}
	for _, t := range tenants {
		m.tenants[t] = true
	}
	return m
}

func (m *memKeys) GetTenant(_ context.Context, id string) (server.Tenant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.tenants[id] {
		return server.Tenant{}, server.ErrTenantNotFound
	}
	return server.Tenant{ID: id}, nil
}

// find returns the index of the tenant's key in state (-1: none).
func (m *memKeys) find(tenantID string, state server.SigningKeyState) int {
	for i, k := range m.keys {
		if k.TenantID == tenantID && k.State() == state {
			return i
		}
	}
	return -1
}

func (m *memKeys) EnsureSigningKeys(_ context.Context, tenantID string, signing, next server.SigningKey) ([]server.SigningKey, error) {
	m.mu.Lock()
	if !m.tenants[tenantID] {
		m.mu.Unlock()
		return nil, server.ErrTenantNotFound
	}
	hasSigning, hasNext := m.find(tenantID, server.KeySigning) >= 0, m.find(tenantID, server.KeyNext) >= 0
	if signing.ID != "" && !hasSigning {
		signing.Next = false
		m.keys = append([]server.SigningKey{signing}, m.keys...)
	}
	if next.ID != "" && !hasNext {
		next.Next = true
		m.keys = append([]server.SigningKey{next}, m.keys...)
	}
	m.mu.Unlock()
	return m.list(tenantID), nil
}

func (m *memKeys) RotateSigningKey(_ context.Context, next server.SigningKey) (server.SigningKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.tenants[next.TenantID] {
		return server.SigningKey{}, server.ErrTenantNotFound
	}
	cur, nxt := m.find(next.TenantID, server.KeySigning), m.find(next.TenantID, server.KeyNext)
	if cur < 0 || nxt < 0 {
		return server.SigningKey{}, server.ErrSigningKeysMissing
	}
	m.keys[cur].RetiredAt = next.CreatedAt
	m.keys[nxt].Next = false
	promoted := m.keys[nxt]
	next.Next = true
	m.keys = append([]server.SigningKey{next}, m.keys...)
	return promoted, nil
}

func (m *memKeys) SigningKeys(_ context.Context, tenantID string) ([]server.SigningKey, error) {
	m.mu.Lock()
	m.reads++
	m.mu.Unlock()
	return m.list(tenantID), nil
}

func (m *memKeys) list(tenantID string) []server.SigningKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []server.SigningKey{}
	for _, k := range m.keys {
		if k.TenantID == tenantID {
			out = append(out, k)
		}
	}
	server.SortSigningKeys(out)
	return out
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func randomSealer(t testing.TB) *Sealer {
	t.Helper()
	key := make([]byte, EncryptionKeyLen)
	_, _ = rand.Read(key)
	s, err := ParseEncryptionKey(base64.StdEncoding.EncodeToString(key))
	require.NoError(t, err)
	return s
}

// testKeyHash is the license_key_sha256 claim of testLease's license.
var testKeyHash = LicenseKeyHash("slk_test")

func testLease(tenant string, expires time.Time) server.Lease {
	return server.Lease{
		ID: "lse_0123456789abcdef01234567", LicenseID: "lic_0123456789abcdef01234567", TenantID: tenant,
		Fingerprint: "laptop-1", State: server.LeaseActive, ExpiresAt: expires,
	}
}

func TestSealRoundTrip(t *testing.T) {
	t.Parallel()
	s := randomSealer(t)
	k, err := NewKey("acme", time.Now(), s)
	require.NoError(t, err)
	require.True(t, Sealed(k.PrivateKey))
	require.Equal(t, KeyID(k.PublicKey), k.ID)
	priv, err := s.Open(k)
	require.NoError(t, err)
	require.Equal(t, []byte(k.PublicKey), []byte(priv.Public().(ed25519.PublicKey)))
	require.False(t, bytes.Contains(k.PrivateKey, priv.Seed()), "the seed is not stored in the clear")

	plain, err := NewKey("acme", time.Now(), nil)
	require.NoError(t, err)
	require.False(t, Sealed(plain.PrivateKey))
	for _, opener := range []*Sealer{nil, s} { // a plain key opens with or without an encryption key
		_, err := opener.Open(plain)
		require.NoError(t, err)
	}
}

func TestSealedKeyNeedsItsEncryptionKey(t *testing.T) {
	t.Parallel()
	s := randomSealer(t)
	k, err := NewKey("acme", time.Now(), s)
	require.NoError(t, err)
	priv, err := s.Open(k)
	require.NoError(t, err)
	secrets := []string{
		base64.StdEncoding.EncodeToString(priv.Seed()), base64.RawURLEncoding.EncodeToString(priv.Seed()),
		base64.StdEncoding.EncodeToString(k.PrivateKey),
	}
	noSecret := func(err error) {
		t.Helper()
		for _, s := range secrets {
			require.NotContains(t, err.Error(), s)
		}
		require.Contains(t, err.Error(), k.ID, "the error names the key")
	}

	_, err = (*Sealer)(nil).Open(k)
	require.ErrorIs(t, err, ErrNoEncryptionKey)
	noSecret(err)
	_, err = (&Sealer{}).Open(k)
	require.ErrorIs(t, err, ErrNoEncryptionKey)

	_, err = randomSealer(t).Open(k)
	require.ErrorIs(t, err, ErrWrongEncryptionKey)
	noSecret(err)

	moved := k
	moved.TenantID = "other"
	_, err = s.Open(moved)
	require.ErrorIs(t, err, ErrDamagedKey, "a sealed key is bound to its tenant and kid")

	damaged := k
	damaged.PrivateKey = bytes.Clone(k.PrivateKey)
	damaged.PrivateKey[len(damaged.PrivateKey)-1] ^= 1
	_, err = s.Open(damaged)
	require.ErrorIs(t, err, ErrDamagedKey)
	damaged.PrivateKey = damaged.PrivateKey[:len(damaged.PrivateKey)-3]
	_, err = s.Open(damaged)
	require.ErrorIs(t, err, ErrDamagedKey)
	damaged.PrivateKey = []byte("something else")
	_, err = s.Open(damaged)
	require.ErrorIs(t, err, ErrDamagedKey)

	other, err := NewKey("acme", time.Now(), s)
	require.NoError(t, err)
	swapped := k
	swapped.PublicKey = other.PublicKey
	swapped.PrivateKey = append(bytes.Clone(plainPrefix), priv.Seed()...)
	_, err = s.Open(swapped)
	require.ErrorIs(t, err, ErrDamagedKey, "a private half that does not match the public key")
}

func TestParseEncryptionKey(t *testing.T) {
	t.Parallel()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	for _, text := range []string{
		base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		"  " + base64.StdEncoding.EncodeToString(raw) + "\n",
	} {
		s, err := ParseEncryptionKey(text)
		require.NoError(t, err)
		require.True(t, s.Encrypts())
		require.Len(t, s.KeyID(), 16)
	}
	short := base64.StdEncoding.EncodeToString(raw[:31])
	for _, text := range []string{short, "not base64 !!", ""} {
		_, err := ParseEncryptionKey(text)
		require.Error(t, err)
		if text != "" {
			require.NotContains(t, err.Error(), text, "the error never repeats the key")
		}
	}
	require.False(t, (*Sealer)(nil).Encrypts())
}

// split returns a compact JWS's three parts, decoded.
func split(t *testing.T, token string) (header, payload, sig []byte) {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	var err error
	header, err = base64.RawURLEncoding.DecodeString(parts[0])
	require.NoError(t, err)
	payload, err = base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	sig, err = base64.RawURLEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	return header, payload, sig
}

func join(header, payload, sig []byte) string {
	e := base64.RawURLEncoding
	return e.EncodeToString(header) + "." + e.EncodeToString(payload) + "." + e.EncodeToString(sig)
}

// verifyBoth verifies a certificate against a JWKS document in two ways:
// go-jose with the JWK parsed from the JSON, and crypto/ed25519 directly
// over the signing input.
func verifyBoth(t *testing.T, token string, jwks []byte) (joseErr, edErr error) {
	t.Helper()
	var set jose.JSONWebKeySet
	require.NoError(t, json.Unmarshal(jwks, &set))
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return err, err
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		err := errors.New("kid not in the JWKS")
		return err, err
	}
	_, joseErr = jws.Verify(keys[0].Key)

	parts := strings.Split(token, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return joseErr, err
	}
	if !ed25519.Verify(keys[0].Key.(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig) {
		edErr = errors.New("ed25519: bad signature")
	}
	return joseErr, edErr
}

func jwksOf(t *testing.T, keys []server.SigningKey) []byte {
	t.Helper()
	var set struct {
		Keys []JWK `json:"keys"`
	}
	for _, k := range keys {
		jwk, err := PublicJWK(k)
		require.NoError(t, err)
		set.Keys = append(set.Keys, jwk)
	}
	b, err := json.Marshal(set)
	require.NoError(t, err)
	return b
}

func TestCertificateVerifiesAndOneFlippedByteFails(t *testing.T) {
	t.Parallel()
	store := newMemKeys("acme", "other")
	c := newClock()
	iss := NewIssuer(store, IssuerOptions{Sealer: randomSealer(t), Now: c.now})
	ctx := t.Context()
	deadline := c.now().Add(90*time.Second + 999*time.Millisecond)
	l := testLease("acme", deadline)
	l.Borrowed = true
	token, err := iss.Certificate(ctx, l, Binding{KeyHash: testKeyHash, Nonce: "n0nce-ABC_def"})
	require.NoError(t, err)

	header, payload, sig := split(t, token)
	var h map[string]any
	require.NoError(t, json.Unmarshal(header, &h))
	keys, err := iss.Published(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, keys, 2, "the key that signs and the next key")
	signer := keys[1]
	require.Equal(t, server.KeySigning, signer.State())
	require.Equal(t, server.KeyNext, keys[0].State())
	require.Equal(t, map[string]any{"alg": "EdDSA", "kid": signer.ID, "typ": "JWT"}, h)
	require.JSONEq(t, `{"iss":"seatd","sub":"lse_0123456789abcdef01234567","lease_id":"lse_0123456789abcdef01234567",
		"tenant_id":"acme","license_id":"lic_0123456789abcdef01234567","fingerprint":"laptop-1",
		"user":"","hostname":"","bound_to":"fingerprint","license_key_sha256":"`+testKeyHash+`",
		"iat":`+itoa(c.now().Unix())+`,"exp":`+itoa(deadline.Unix())+`,"borrowed":true,"nonce":"n0nce-ABC_def"}`, string(payload),
		"exp is the deadline in whole seconds, rounded down")

	jwks := jwksOf(t, keys)
	require.NotContains(t, string(jwks), `"d"`, "no private part in the JWKS")
	joseErr, edErr := verifyBoth(t, token, jwks)
	require.NoError(t, joseErr)
	require.NoError(t, edErr)
	claims, err := Verify(token, keys)
	require.NoError(t, err)
	require.Equal(t, "n0nce-ABC_def", claims.Nonce)

	// One byte changed anywhere fails both verifiers.
	for i := range payload {
		p := bytes.Clone(payload)
		p[i] ^= 0x01
		joseErr, edErr := verifyBoth(t, join(header, p, sig), jwks)
		require.Error(t, joseErr, "payload byte %d", i)
		require.Error(t, edErr, "payload byte %d", i)
	}
	for i := range sig {
		s := bytes.Clone(sig)
		s[i] ^= 0x80
		joseErr, edErr := verifyBoth(t, join(header, payload, s), jwks)
		require.Error(t, joseErr, "signature byte %d", i)
		require.Error(t, edErr, "signature byte %d", i)
	}
	_, err = Verify(join(header, bytes.Replace(payload, []byte("laptop-1"), []byte("laptop-2"), 1), sig), keys)
	require.ErrorIs(t, err, ErrBadCertificate)

	// Another tenant's key does not verify it, even under this kid.
	otherKeys, err := iss.Published(ctx, "other")
	require.NoError(t, err)
	require.NotEqual(t, signer.ID, otherKeys[1].ID)
	_, err = Verify(token, otherKeys)
	require.ErrorIs(t, err, ErrBadCertificate)
	impostor := otherKeys[1]
	impostor.ID = signer.ID
	_, err = Verify(token, []server.SigningKey{impostor})
	require.ErrorIs(t, err, ErrBadCertificate)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestIssuerFirstKeyRotationAndPublishing(t *testing.T) {
	t.Parallel()
	store := newMemKeys("acme")
	c := newClock()
	a := NewIssuer(store, IssuerOptions{Now: c.now})
	b := NewIssuer(store, IssuerOptions{Now: c.now}) // another instance
	ctx := t.Context()

	_, err := a.Certificate(ctx, testLease("ghost", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.ErrorIs(t, err, server.ErrTenantNotFound)
	_, err = a.Published(ctx, "ghost")
	require.Equal(t, server.ENOTFOUND, server.ErrorCode(err))
	a.mu.Lock()
	require.NotContains(t, a.tenants, "ghost", "an unknown tenant takes no memory")
	a.mu.Unlock()

	first, err := a.Ensure(ctx, "acme")
	require.NoError(t, err)
	again, err := b.Ensure(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "two instances agree on the first key")
	embedded, err := b.Published(ctx, "acme") // the JWKS a product ships with
	require.NoError(t, err)
	require.Len(t, embedded, 2)
	next := embedded[0]
	require.Equal(t, []string{next.ID, first.ID}, ids(embedded), "the next key is published with the one that signs")
	require.Equal(t, server.KeyNext, next.State())

	old, err := b.Certificate(ctx, testLease("acme", c.now().Add(server.MaxLeaseTTL)), Binding{KeyHash: testKeyHash, Nonce: "x"})
	require.NoError(t, err)
	rotated, err := a.Rotate(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, next.ID, rotated.ID, "the rotation makes the published next key sign")
	require.Equal(t, server.KeySigning, rotated.State())

	kidOf := func(token string) string {
		h, _, _ := split(t, token)
		var v struct{ Kid string }
		require.NoError(t, json.Unmarshal(h, &v))
		return v.Kid
	}
	cert, err := a.Certificate(ctx, testLease("acme", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.NoError(t, err)
	require.Equal(t, rotated.ID, kidOf(cert), "the instance that rotated signs with the new key at once")
	_, err = Verify(cert, embedded)
	require.NoError(t, err, "the keys published before the rotation verify what the promoted key signs")
	cert, err = b.Certificate(ctx, testLease("acme", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.NoError(t, err)
	require.Equal(t, first.ID, kidOf(cert), "another instance signs with its cached key within the TTL")
	c.add(DefaultCacheTTL)
	cert, err = b.Certificate(ctx, testLease("acme", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.NoError(t, err)
	require.Equal(t, rotated.ID, kidOf(cert), "and with the new key after the TTL")

	pub, err := b.Published(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, pub, 3)
	require.Equal(t, []string{rotated.ID, first.ID}, ids(pub[1:]), "a new next key first; the old key stays published")
	require.Equal(t, server.KeyNext, pub[0].State())
	_, err = Verify(old, pub)
	require.NoError(t, err, "a certificate of the old key still verifies")

	all, err := a.Keys(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, all, 3)
	retired := all[2]
	require.Equal(t, server.KeyRetired, retired.State())
	c.add(retired.PublishUntil(PublishSlack).Sub(c.now()) - time.Second)
	pub, err = a.Published(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, pub, 3, "published until every certificate it signed has expired, and the slack")
	c.add(time.Second)
	c.add(DefaultCacheTTL)
	pub, err = a.Published(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []string{all[0].ID, rotated.ID}, ids(pub), "then no longer")
	require.Greater(t, PublishSlack, DefaultCacheTTL, "the slack covers the instances that signed with it within their TTL")

	// A second rotation makes a key sign that the first JWKS never held.
	second, err := a.Rotate(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, all[0].ID, second.ID)
	cert, err = a.Certificate(ctx, testLease("acme", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.NoError(t, err)
	_, err = Verify(cert, embedded)
	require.ErrorIs(t, err, ErrBadCertificate, "a JWKS from before the previous rotation is too old")
	_, err = Verify(cert, pub)
	require.NoError(t, err, "the one fetched after the first rotation verifies")
}

func TestIssuerGivesATenantWithoutNextKeyOne(t *testing.T) {
	t.Parallel()
	store := newMemKeys("acme")
	c := newClock()
	legacy, err := NewKey("acme", c.now(), nil)
	require.NoError(t, err)
	_, err = store.EnsureSigningKeys(t.Context(), "acme", legacy, server.SigningKey{}) // a tenant from before next keys
	require.NoError(t, err)

	iss := NewIssuer(store, IssuerOptions{Now: c.now})
	k, err := iss.Ensure(t.Context(), "acme")
	require.NoError(t, err)
	require.Equal(t, legacy.ID, k.ID, "the key that signs is kept")
	pub, err := iss.Published(t.Context(), "acme")
	require.NoError(t, err)
	require.Len(t, pub, 2)
	require.Equal(t, legacy.ID, pub[1].ID)
	require.Equal(t, server.KeyNext, pub[0].State(), "and a next key published with it")
	cert, err := iss.Certificate(t.Context(), testLease("acme", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.NoError(t, err)
	_, err = Verify(cert, []server.SigningKey{legacy})
	require.NoError(t, err, "still signed by the key that signed")
}

func TestIssuerCachesKeys(t *testing.T) {
	t.Parallel()
	store := newMemKeys("acme")
	c := newClock()
	iss := NewIssuer(store, IssuerOptions{Now: c.now})
	ctx := t.Context()
	for range 50 {
		_, err := iss.Certificate(ctx, testLease("acme", c.now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
		require.NoError(t, err)
	}
	store.mu.Lock()
	reads := store.reads
	store.mu.Unlock()
	require.Equal(t, 1, reads, "one read finds no key, making them returns them; then the cache")
}

func TestIssuerSealedKeyWithoutEncryptionKey(t *testing.T) {
	t.Parallel()
	store := newMemKeys("acme")
	sealedBy := NewIssuer(store, IssuerOptions{Sealer: randomSealer(t)})
	_, err := sealedBy.Ensure(t.Context(), "acme")
	require.NoError(t, err)

	plain := NewIssuer(store, IssuerOptions{})
	_, err = plain.Ensure(t.Context(), "acme")
	require.ErrorIs(t, err, ErrNoEncryptionKey, "a clear error at start")
	_, err = plain.Certificate(t.Context(), testLease("acme", time.Now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
	require.Equal(t, server.EINTERNAL, server.ErrorCode(err), "signing fails as an internal error, without detail for the client")
	require.ErrorIs(t, err, ErrNoEncryptionKey, "the logged cause says why")
	keys, err := plain.Published(t.Context(), "acme")
	require.NoError(t, err)
	require.Len(t, keys, 2, "its public keys are still published")
}

func TestIssuerConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	store := newMemKeys("acme")
	iss := NewIssuer(store, IssuerOptions{})
	var wg sync.WaitGroup
	tokens := make([]string, 16)
	errs := make([]error, len(tokens))
	for i := range tokens {
		wg.Go(func() {
			tokens[i], errs[i] = iss.Certificate(context.Background(), testLease("acme", time.Now().Add(time.Minute)), Binding{KeyHash: testKeyHash, Nonce: ""})
		})
	}
	wg.Wait()
	var kids []string
	for i, token := range tokens {
		require.NoError(t, errs[i])
		h, _, _ := split(t, token)
		var v struct{ Kid string }
		require.NoError(t, json.Unmarshal(h, &v))
		kids = append(kids, v.Kid)
		require.Equal(t, kids[0], v.Kid)
	}
	keys, _ := store.SigningKeys(t.Context(), "acme")
	require.Len(t, keys, 2, "one key that signs, one next key")
}

func ids(keys []server.SigningKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}

func TestKeysPrintWithoutTheirPrivateHalf(t *testing.T) {
	t.Parallel()
	k, err := NewKey("acme", time.Now(), nil)
	require.NoError(t, err)
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("key", "key", k)
	secret := base64.StdEncoding.EncodeToString(k.PrivateKey)
	var digits []string
	for _, b := range k.PrivateKey[:8] {
		digits = append(digits, strconv.Itoa(int(b)))
	}
	printed := strings.Join(digits, " ")
	for _, out := range []string{fmt.Sprint(k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k), fmt.Sprintf("%v", []server.SigningKey{k}), logs.String()} {
		require.Contains(t, out, k.ID)
		require.NotContains(t, out, secret)
		require.NotContains(t, out, printed, "the bytes as fmt prints a []byte")
	}
}

// TestGrantClaims: a lease of a grant names its license (not the grant)
// as license_id, and the feature, version, grant and grant expiry; a
// lease of the base pool has none of those claims in its JSON.
func TestGrantClaims(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	l := testLease("acme", now.Add(time.Minute))
	l.LicenseID, l.Feature, l.Version = "lic_0123456789abcdef01234567.0a1b2c3d", "render", "2025.1"
	c := LeaseClaims(l, Binding{KeyHash: testKeyHash, GrantExpiresAt: now.Add(time.Hour)}, now)
	require.Equal(t, "lic_0123456789abcdef01234567", c.LicenseID)
	require.Equal(t, "lic_0123456789abcdef01234567.0a1b2c3d", c.GrantID)
	require.Equal(t, "render", c.Feature)
	require.Equal(t, "2025.1", c.Version)
	require.Equal(t, now.Add(time.Hour).Unix(), c.GrantExpiresAt)

	base, err := json.Marshal(LeaseClaims(testLease("acme", now.Add(time.Minute)), Binding{KeyHash: testKeyHash}, now))
	require.NoError(t, err)
	for _, claim := range []string{"feature", "version", "grant_id", "grant_expires_at"} {
		require.NotContains(t, string(base), `"`+claim+`"`)
	}
}
