package signing

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/seatd/seatd/server"
)

// KeyStore is what the Issuer needs of a server.Store.
type KeyStore interface {
	server.SigningKeyStore
	GetTenant(ctx context.Context, id string) (server.Tenant, error)
}

// Timing of the key cache.
const (
	// DefaultCacheTTL is how long an Issuer signs with the key it read
	// before it reads the tenant's keys again: a rotation made through
	// another instance is picked up within this.
	DefaultCacheTTL = 5 * time.Second
	// PublishSlack is how long past its last certificate's expiry a retired
	// key stays published (server.SigningKey.PublishUntil): it covers the
	// instances that signed with it for up to a cache TTL after the
	// rotation, and clocks that disagree.
	PublishSlack = time.Minute
	// retryAfterFailure: a tenant whose keys could not be read again keeps
	// its cached key (still published: it was signing a moment ago) and is
	// read again this much later.
	retryAfterFailure = time.Second
)

// IssuerOptions configure an Issuer; zero values take the defaults.
type IssuerOptions struct {
	// Sealer seals new keys and opens stored ones (nil: new keys are kept
	// plain, sealed ones cannot be opened).
	Sealer   *Sealer
	CacheTTL time.Duration    // default DefaultCacheTTL
	Now      func() time.Time // default time.Now: iat, and the published keys
	Logger   *slog.Logger
	// Site, in locked mode, signs the certificates of the license file's
	// licenses with the site key, and the site tenant's list of returned
	// certificates (site.go). Nil: every certificate is signed by its
	// tenant's key.
	Site *Site
}

// Issuer signs lease certificates with each tenant's current key, and
// publishes the tenants' public keys: that key's, the next key's (which
// signs after the next rotation) and the retired keys' still needed. It
// keeps every tenant's keys in memory for a cache TTL; a tenant without a
// key that signs or a next key gets it on first need.
// It is safe for concurrent use.
type Issuer struct {
	store  KeyStore
	sealer *Sealer
	ttl    time.Duration
	now    func() time.Time
	log    *slog.Logger
	site   *Site // nil outside locked mode

	mu      sync.Mutex
	tenants map[string]*tenantEntry // only tenants that exist
}

// tenantEntry is one tenant's cached keys; its state is replaced whole.
type tenantEntry struct {
	mu      sync.Mutex
	st      *tenantState
	loading chan struct{} // non-nil while a load runs; closed when it ends
}

type tenantState struct {
	keys    []server.SigningKey // the next key, the one that signs, retired ones (server.SortSigningKeys)
	signer  *keySigner          // nil when openErr is set
	openErr error               // why the current key cannot be opened (configuration); no key material
	expires time.Time           // read the keys again from then on
}

// NewIssuer returns an Issuer over store.
func NewIssuer(store KeyStore, opts IssuerOptions) *Issuer {
	i := &Issuer{
		store:   store,
		sealer:  opts.Sealer,
		ttl:     cmp.Or(opts.CacheTTL, DefaultCacheTTL),
		now:     opts.Now,
		log:     cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		site:    opts.Site,
		tenants: map[string]*tenantEntry{},
	}
	if i.now == nil {
		i.now = time.Now
	}
	return i
}

// Certificate signs l's certificate (tenant l.TenantID) with b: the
// request's nonce, the hash of the license key (LicenseKeyHash), the
// grant's expiry for a lease of a grant. In locked mode a lease of a
// license of the file in force is signed by the site key and names the
// file (Site); any other by its tenant's key.
func (i *Issuer) Certificate(ctx context.Context, l server.Lease, b Binding) (string, error) {
	claims := LeaseClaims(l, b, i.now())
	if i.site != nil {
		token, ok, err := i.site.sign(claims)
		if err != nil {
			return "", &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
		}
		if ok {
			return token, nil
		}
	}
	st, err := i.state(ctx, l.TenantID)
	if err != nil {
		return "", err
	}
	if st.openErr != nil {
		return "", &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: st.openErr}
	}
	token, err := st.signer.sign(claims)
	if err != nil {
		return "", &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
	}
	return token, nil
}

// Published returns the tenant's keys a verifier needs now (Published),
// newest first. ErrTenantNotFound for an unknown tenant.
func (i *Issuer) Published(ctx context.Context, tenantID string) ([]server.SigningKey, error) {
	st, err := i.state(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return Published(st.keys, i.now(), PublishSlack), nil
}

// SiteKey is the site key's public half, which the site tenant's JWKS
// publishes before its own keys (ok false outside locked mode).
func (i *Issuer) SiteKey(tenantID string) (server.SigningKey, bool) {
	if i.site == nil || tenantID != SiteTenant {
		return server.SigningKey{}, false
	}
	return i.site.PublicKey(), true
}

// Keys returns all the tenant's keys as the store has them now (not the
// cache), giving it its first key and its next key if it lacks them.
func (i *Issuer) Keys(ctx context.Context, tenantID string) ([]server.SigningKey, error) {
	if _, err := i.state(ctx, tenantID); err != nil {
		return nil, err
	}
	return i.store.SigningKeys(ctx, tenantID)
}

// Ensure gives the tenant its first key and its next key if it lacks
// them, and checks that the key that signs for it can be opened (an error
// says why not: e.g. it is sealed and no encryption key is configured). It
// returns that key.
func (i *Issuer) Ensure(ctx context.Context, tenantID string) (server.SigningKey, error) {
	st, err := i.state(ctx, tenantID)
	if err != nil {
		return server.SigningKey{}, err
	}
	if st.openErr != nil {
		return server.SigningKey{}, st.openErr
	}
	return current(st.keys), nil
}

// Rotate retires the key that signs for the tenant, makes its next key
// (published since it was made) the one that signs, and makes a new next
// key, in one step of the store; it returns the key that signs now. This
// instance signs with it at once, others within their cache TTL.
func (i *Issuer) Rotate(ctx context.Context, tenantID string) (server.SigningKey, error) {
	// The tenant exists and has its next key. (A tenant from before next
	// keys that gets its next key only here has it signing at once, before
	// any product could embed it: docs/concepts/certificates.md, "Rotation".)
	if _, err := i.state(ctx, tenantID); err != nil {
		return server.SigningKey{}, err
	}
	next, err := NewKey(tenantID, i.now(), i.sealer)
	if err != nil {
		return server.SigningKey{}, &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
	}
	next.Next = true
	k, err := i.store.RotateSigningKey(ctx, next)
	if err != nil {
		return server.SigningKey{}, err
	}
	i.forget(tenantID)
	return k, nil
}

// forget drops a tenant's cached keys: the next call reads them again.
func (i *Issuer) forget(tenantID string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if e := i.tenants[tenantID]; e != nil {
		e.mu.Lock()
		if e.st != nil {
			st := *e.st
			st.expires = time.Time{}
			e.st = &st
		}
		e.mu.Unlock()
	}
}

// state returns the tenant's keys, from the cache while they are fresh. One
// caller at a time reads them again; the others meanwhile sign with the
// keys cached (a key retired a moment ago stays published long after).
func (i *Issuer) state(ctx context.Context, tenantID string) (*tenantState, error) {
	i.mu.Lock()
	e := i.tenants[tenantID]
	if e == nil {
		e = &tenantEntry{}
		i.tenants[tenantID] = e
	}
	i.mu.Unlock()
	for {
		e.mu.Lock()
		st := e.st
		if st != nil && (i.now().Before(st.expires) || e.loading != nil) {
			e.mu.Unlock()
			return st, nil
		}
		if wait := e.loading; wait != nil { // the first load: nothing to serve yet
			e.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		e.loading = done
		e.mu.Unlock()

		loaded, err := i.load(ctx, tenantID)

		e.mu.Lock()
		e.loading = nil
		close(done)
		switch {
		case err == nil:
			e.st = loaded
		case st != nil:
			i.log.WarnContext(ctx, "signing keys not read again; signing with the cached key", "tenant", tenantID, "err", err)
			stale := *st
			stale.expires = i.now().Add(retryAfterFailure)
			e.st = &stale
			loaded, err = e.st, nil
		}
		e.mu.Unlock()
		if err != nil {
			i.dropIfEmpty(tenantID, e)
			return nil, err
		}
		return loaded, nil
	}
}

// dropIfEmpty forgets an entry that never loaded (an unknown tenant, or a
// store that failed): only tenants that exist take memory.
func (i *Issuer) dropIfEmpty(tenantID string, e *tenantEntry) {
	i.mu.Lock()
	defer i.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.st == nil && e.loading == nil && i.tenants[tenantID] == e {
		delete(i.tenants, tenantID)
	}
}

// load reads the tenant's keys, giving it the key that signs and the next
// key if it lacks either (a new tenant both, a tenant from before next keys
// its next key), and opens the one that signs.
func (i *Issuer) load(ctx context.Context, tenantID string) (*tenantState, error) {
	keys, err := i.store.SigningKeys(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	if current(keys).ID == "" || nextKey(keys).ID == "" {
		if len(keys) == 0 { // an unknown tenant costs no key generation
			if _, err := i.store.GetTenant(ctx, tenantID); err != nil {
				return nil, err
			}
		}
		var signing, next server.SigningKey
		if current(keys).ID == "" {
			if signing, err = NewKey(tenantID, i.now(), i.sealer); err != nil {
				return nil, &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
			}
		}
		if nextKey(keys).ID == "" {
			if next, err = NewKey(tenantID, i.now(), i.sealer); err != nil {
				return nil, &server.Error{Code: server.EINTERNAL, Message: "internal error", Err: err}
			}
			next.Next = true
		}
		// Another instance may have added them first: the store keeps
		// what won and returns it.
		if keys, err = i.store.EnsureSigningKeys(ctx, tenantID, signing, next); err != nil {
			return nil, err
		}
		if current(keys).ID == "" || nextKey(keys).ID == "" {
			return nil, &server.Error{Code: server.EINTERNAL, Message: "internal error",
				Err: errors.New("signing keys ensured but not listed by the store")}
		}
	}
	st := &tenantState{keys: keys, expires: i.now().Add(i.ttl)}
	cur := current(keys)
	priv, err := i.sealer.Open(cur)
	if err == nil {
		st.signer, err = newKeySigner(cur.ID, priv)
	}
	st.openErr = err
	return st, nil
}

// current is the key that signs (zero if none).
func current(keys []server.SigningKey) server.SigningKey {
	return withState(keys, server.KeySigning)
}

// nextKey is the key that signs after the next rotation (zero if none).
func nextKey(keys []server.SigningKey) server.SigningKey {
	return withState(keys, server.KeyNext)
}

// withState is the newest key in state (zero if none).
func withState(keys []server.SigningKey, state server.SigningKeyState) server.SigningKey {
	for _, k := range keys {
		if k.State() == state {
			return k
		}
	}
	return server.SigningKey{}
}
