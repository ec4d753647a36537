package storetest

// memStore is a deliberately simple in-memory server.Store: one mutex, plain
// maps, linear scans. It exists to check the suite itself and to document
// the contract of store.go in executable form; it is not a backend. "Disk"
// is a JSON snapshot written by Close and read by the next open, so that
// the persistence tests exercise a real round trip (and heartbeats are
// write-behind in the extreme: nothing is durable until Close).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatd/seatd/server"
)

// TestMemStore runs the suite on its reference store, which keeps no
// webhook outbox (the embedded and distributed stores run those cases).
func TestMemStore(t *testing.T) {
	RunWith(t, func(t *testing.T) Opener {
		disk := &memDisk{}
		return func(t *testing.T) server.Store {
			s, err := openMem(disk)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			return s
		}
	}, Options{NoWebhooks: true})
}

type memDisk struct {
	mu    sync.Mutex
	data  []byte
	open  bool
	clock OffsetClock // the store's clock, kept across reopens
}

type memData struct {
	Tenants  map[string]server.Tenant
	APIKeys  map[string]server.APIKey
	Licenses map[string]server.License
	Deleted  map[string]bool // license ids
	Leases   map[string]server.Lease
	Usage    []server.UsageEvent
	Cleanup  []server.CleanupEvent
	Audit    []server.AuditEntry
	Seats    []server.SeatEvent
	Signing  []server.SigningKey // memsigningkeys_test.go
	Returned map[string]server.ReturnedCertificate
	Grants   map[string]server.Grant // features.go; deleted ones are removed
	Groups   map[string]server.Group // mempolicy_test.go, by groupID
	SiteKey  *server.SigningKey      // memlicensefile_test.go
	File     server.LicenseFileRecord
}

type memStore struct {
	mu      sync.Mutex
	d       memData
	disk    *memDisk
	closed  bool
	failing bool // SetFault: every call fails as a store that went away
}

var (
	_ server.Store = (*memStore)(nil)
	_ Faults       = (*memStore)(nil)
	_ Clock        = (*memStore)(nil)
)

func (s *memStore) Pass(ctx context.Context, at time.Time) error { return s.disk.clock.Pass(ctx, at) }

func (s *memStore) Moves() bool { return true }

func (s *memStore) Faults() []Fault { return []Fault{FaultRecord} }

func (s *memStore) SetFault(f Fault, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = on
}

func openMem(disk *memDisk) (*memStore, error) {
	disk.mu.Lock()
	defer disk.mu.Unlock()
	if disk.open {
		return nil, errors.New("data directory in use")
	}
	s := &memStore{disk: disk, d: memData{
		Tenants: map[string]server.Tenant{}, APIKeys: map[string]server.APIKey{},
		Licenses: map[string]server.License{}, Deleted: map[string]bool{}, Leases: map[string]server.Lease{},
		Grants: map[string]server.Grant{}, Groups: map[string]server.Group{},
	}}
	if disk.data != nil {
		if err := json.Unmarshal(disk.data, &s.d); err != nil {
			return nil, err
		}
		if s.d.Grants == nil {
			s.d.Grants = map[string]server.Grant{}
		}
		if s.d.Groups == nil {
			s.d.Groups = map[string]server.Group{}
		}
	}
	disk.open = true
	return s, nil
}

func (s *memStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("closed twice")
	}
	s.closed = true
	b, err := json.Marshal(s.d)
	if err != nil {
		return err
	}
	s.disk.mu.Lock()
	defer s.disk.mu.Unlock()
	s.disk.data, s.disk.open = b, false
	return nil
}

// lock takes the store's lock and returns its clock reading.
func (s *memStore) lock() (time.Time, error) {
	s.mu.Lock()
	if s.closed || s.failing {
		s.mu.Unlock()
		return time.Time{}, server.Unavailable(errors.New("store closed or failing"))
	}
	return s.disk.clock.Now().UTC(), nil
}

func page[T any](items []T, p server.Page) ([]T, string, error) {
	off := 0
	if p.Token != "" {
		n, err := strconv.Atoi(p.Token)
		if err != nil || n < 0 {
			return nil, "", server.Invalid("page_token", "bad page token")
		}
		off = n
	}
	if off >= len(items) {
		return nil, "", nil
	}
	end := min(off+p.PageSize(), len(items))
	next := ""
	if end < len(items) {
		next = strconv.Itoa(end)
	}
	return slices.Clone(items[off:end]), next, nil
}

func cloneLicense(l server.License) server.License {
	l.Metadata, l.Grants = maps.Clone(l.Metadata), slices.Clone(l.Grants)
	l.Policy = clonePolicy(l.Policy)
	return l
}
func cloneLease(l server.Lease) server.Lease { l.Metadata = maps.Clone(l.Metadata); return l }

// Tenants and keys.

func (s *memStore) CreateTenant(_ context.Context, t server.Tenant) (server.Tenant, error) {
	if _, err := s.lock(); err != nil {
		return server.Tenant{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[t.ID]; ok {
		return server.Tenant{}, server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "tenant exists")
	}
	s.d.Tenants[t.ID] = t
	return t, nil
}

func (s *memStore) GetTenant(_ context.Context, id string) (server.Tenant, error) {
	if _, err := s.lock(); err != nil {
		return server.Tenant{}, err
	}
	defer s.mu.Unlock()
	t, ok := s.d.Tenants[id]
	if !ok {
		return server.Tenant{}, server.ErrTenantNotFound
	}
	return t, nil
}

func (s *memStore) ListTenants(_ context.Context, p server.Page) ([]server.Tenant, string, error) {
	if _, err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	all := slices.SortedFunc(maps.Values(s.d.Tenants), func(a, b server.Tenant) int { return cmp.Compare(a.ID, b.ID) })
	return page(all, p)
}

func (s *memStore) CreateAPIKey(_ context.Context, k server.APIKey) (server.APIKey, error) {
	if _, err := s.lock(); err != nil {
		return server.APIKey{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[k.TenantID]; !ok {
		return server.APIKey{}, server.ErrTenantNotFound
	}
	if _, ok := s.d.APIKeys[k.ID]; ok {
		return server.APIKey{}, server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "api key exists")
	}
	s.d.APIKeys[k.ID] = k
	return k, nil
}

func (s *memStore) ListAPIKeys(_ context.Context, tenantID string, p server.Page) ([]server.APIKey, string, error) {
	if _, err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	var all []server.APIKey
	for _, k := range s.d.APIKeys {
		if k.TenantID == tenantID {
			all = append(all, k)
		}
	}
	slices.SortFunc(all, func(a, b server.APIKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return page(all, p)
}

func (s *memStore) RevokeAPIKey(_ context.Context, id string) (server.APIKey, error) {
	now, err := s.lock()
	if err != nil {
		return server.APIKey{}, err
	}
	defer s.mu.Unlock()
	k, ok := s.d.APIKeys[id]
	if !ok {
		return server.APIKey{}, server.ErrAPIKeyNotFound
	}
	if k.RevokedAt.IsZero() {
		k.RevokedAt = now
		s.d.APIKeys[id] = k
	}
	return k, nil
}

func (s *memStore) APIKeyBySecretHash(_ context.Context, hash string) (server.APIKey, error) {
	if _, err := s.lock(); err != nil {
		return server.APIKey{}, err
	}
	defer s.mu.Unlock()
	for _, k := range s.d.APIKeys {
		if k.SecretHash == hash {
			return k, nil
		}
	}
	return server.APIKey{}, server.ErrAPIKeyNotFound
}

// Licenses.

// license returns an undeleted license of the tenant. Caller holds mu.
func (s *memStore) license(tenantID, id string) (server.License, error) {
	l, ok := s.d.Licenses[id]
	if !ok || s.d.Deleted[id] || l.TenantID != tenantID {
		return server.License{}, server.ErrLicenseNotFound
	}
	return s.withGrants(l), nil
}

// withGrants is l with its grants. Caller holds mu.
func (s *memStore) withGrants(l server.License) server.License {
	l.Grants = nil
	for _, g := range s.d.Grants {
		if g.LicenseID == l.ID {
			l.Grants = append(l.Grants, g)
		}
	}
	server.SortGrants(l.Grants)
	return l
}

// pool is the License a pool's leases are counted under: a license, or a
// grant's pool (Grant.Pool), whether or not deleted since. Caller holds mu.
func (s *memStore) pool(id string) server.License {
	lic := s.d.Licenses[server.PoolLicense(id)]
	if !server.IsGrantID(id) {
		return lic
	}
	g, ok := s.d.Grants[id]
	if !ok {
		return server.License{ID: id, TenantID: lic.TenantID, LeaseTTL: lic.LeaseTTL} // deleted: its leases were revoked
	}
	return g.Pool(&lic)
}

// poolOf checks that a pool id (a license's or a grant's) is the tenant's
// and not deleted. Caller holds mu.
func (s *memStore) poolOf(tenantID, id string) error {
	if _, err := s.license(tenantID, server.PoolLicense(id)); err != nil {
		return err
	}
	if _, ok := s.d.Grants[id]; server.IsGrantID(id) && !ok {
		return server.ErrLicenseNotFound
	}
	return nil
}

// inLicense reports whether a pool id is a license's own or one of its
// grants', when licenseID is a license's id; the pool itself when it is a
// grant's.
func inLicense(poolID, licenseID string) bool {
	if server.IsGrantID(licenseID) {
		return poolID == licenseID
	}
	return server.PoolLicense(poolID) == licenseID
}

func (s *memStore) CreateLicense(_ context.Context, l server.License) (server.License, error) {
	if _, err := s.lock(); err != nil {
		return server.License{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[l.TenantID]; !ok {
		return server.License{}, server.ErrTenantNotFound
	}
	for _, o := range s.d.Licenses {
		if o.Key == l.Key && !s.d.Deleted[o.ID] {
			return server.License{}, &server.Error{Code: server.ECONFLICT, Reason: server.ReasonAlreadyExists, Field: "license.key", Message: "license key taken"}
		}
	}
	if _, ok := s.d.Licenses[l.ID]; ok {
		return server.License{}, &server.Error{Code: server.ECONFLICT, Reason: server.ReasonAlreadyExists, Field: "license.id", Message: "license id taken"}
	}
	l.Policy = nil // SetPolicy sets it, against the tenant's groups
	s.d.Licenses[l.ID] = cloneLicense(l)
	return cloneLicense(l), nil
}

func (s *memStore) GetLicense(_ context.Context, tenantID, id string) (server.License, error) {
	if _, err := s.lock(); err != nil {
		return server.License{}, err
	}
	defer s.mu.Unlock()
	l, err := s.license(tenantID, id)
	return cloneLicense(l), err
}

func (s *memStore) LicenseByKey(_ context.Context, key string) (server.License, error) {
	if _, err := s.lock(); err != nil {
		return server.License{}, err
	}
	defer s.mu.Unlock()
	for _, l := range s.d.Licenses {
		if l.Key == key && !s.d.Deleted[l.ID] {
			return cloneLicense(s.withGrants(l)), nil
		}
	}
	return server.License{}, server.ErrLicenseNotFound
}

func (s *memStore) ListLicenses(_ context.Context, tenantID string, p server.Page) ([]server.License, string, error) {
	if _, err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	var all []server.License
	for _, l := range s.d.Licenses {
		if l.TenantID == tenantID && !s.d.Deleted[l.ID] {
			all = append(all, cloneLicense(s.withGrants(l)))
		}
	}
	slices.SortFunc(all, func(a, b server.License) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return page(all, p)
}

func (s *memStore) UpdateLicense(_ context.Context, tenantID, id string, update func(*server.License) error) (server.License, error) {
	now, err := s.lock()
	if err != nil {
		return server.License{}, err
	}
	defer s.mu.Unlock()
	old, err := s.license(tenantID, id)
	if err != nil {
		return server.License{}, err
	}
	l := cloneLicense(old)
	if err := update(&l); err != nil {
		return server.License{}, err
	}
	l.ID, l.TenantID, l.Key, l.CreatedAt = old.ID, old.TenantID, old.Key, old.CreatedAt
	l.UpdatedAt, l.Grants, l.Policy = now, old.Grants, clonePolicy(old.Policy) // SetPolicy and PutGroup change it
	if err := old.Policy.CheckChange(&old, &l); err != nil {
		return server.License{}, err
	}
	stored := cloneLicense(l)
	stored.Grants = nil
	s.d.Licenses[id] = stored
	return l, nil
}

func (s *memStore) DeleteLicense(_ context.Context, tenantID, id string) (int, error) {
	now, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, err := s.license(tenantID, id); err != nil {
		return 0, err
	}
	n := 0
	for _, ls := range s.d.Leases {
		if ls.LicenseOf() == id && ls.State == server.LeaseActive {
			s.end(ls, server.LeaseRevoked, now)
			n++
		}
	}
	for gid, g := range s.d.Grants {
		if g.LicenseID == id {
			delete(s.d.Grants, gid)
		}
	}
	s.d.Deleted[id] = true
	return n, nil
}

// Leases.

// live counts the live leases of a license. Caller holds mu.
func (s *memStore) live(licenseID string, now time.Time) int {
	n := 0
	for _, ls := range s.d.Leases {
		if ls.LicenseID == licenseID && ls.Live(now) {
			n++
		}
	}
	return n
}

// end moves an active lease to a terminal state with its usage event.
func (s *memStore) end(ls server.Lease, state server.LeaseState, now time.Time) server.Lease {
	ls.State, ls.EndedAt = state, now
	s.d.Leases[ls.ID] = ls
	s.d.Usage = append(s.d.Usage, server.UsageEventOf(&ls))
	return ls
}

func (s *memStore) Acquire(_ context.Context, req server.AcquireRequest) (server.AcquireResult, error) {
	now, err := s.lock()
	if err != nil {
		return server.AcquireResult{}, err
	}
	defer s.mu.Unlock()
	var lic server.License
	found := false
	for _, l := range s.d.Licenses {
		if l.Key == req.LicenseKey && !s.d.Deleted[l.ID] {
			lic, found = s.withGrants(l), true
			break
		}
	}
	if !found {
		return server.AcquireResult{}, server.ErrLicenseNotFound
	}
	pools := []server.License{lic}
	var grants []server.Grant
	if req.Feature != "" {
		// The license's state first, as for the base pool.
		if err := lic.CheckUsable(now); err != nil {
			return server.AcquireResult{}, err
		}
		if grants, err = lic.GrantsFor(req.Feature, req.Version); err != nil {
			return server.AcquireResult{}, err
		}
		pools = pools[:0]
		for i := range grants {
			pools = append(pools, grants[i].Pool(&lic))
		}
	}
	result := func(ls server.Lease, i int, existing bool) server.AcquireResult {
		r := server.AcquireResult{Lease: cloneLease(ls), License: cloneLicense(lic), SeatsInUse: s.live(pools[i].ID, now), Existing: existing}
		if grants != nil {
			g := grants[i]
			r.Grant = &g
		}
		return r
	}
	borrowing := req.BorrowFor > 0
	dedupe := server.DedupeKey(lic.LeasingStrategy, req.Fingerprint, req.User, req.Hostname)
	if borrowing {
		dedupe = ""
	}
	// A live lease of the same keys in any of the pools is handed back;
	// one of a grant that can no longer keep it (expired) is not: a
	// renewal's grant may take over. On a license whose policy has rules
	// of the feature, only to its own user and host: another identity's
	// request is judged as a new lease that takes its seat (replaced).
	var replaced *server.Lease
	for i, p := range pools {
		if err := p.CheckUsable(now); err != nil {
			if req.Feature == "" {
				return server.AcquireResult{}, err
			}
			continue
		}
		var existing *server.Lease
		for _, ls := range s.d.Leases {
			if ls.LicenseID != p.ID || !ls.Live(now) || ls.Borrowed != borrowing {
				continue
			}
			if req.IdempotencyKey != "" && ls.IdempotencyKey == req.IdempotencyKey {
				existing = &ls
				break
			}
			if dedupe != "" && ls.DedupeKey == dedupe && existing == nil {
				existing = &ls
			}
		}
		if existing != nil && replaces(lic, *existing, req) {
			replaced = existing
			break
		}
		if existing != nil {
			ls := *existing
			ls.TokenHash, ls.LastHeartbeatAt = req.TokenHash, now
			if !ls.Borrowed {
				ls.ExpiresAt = now.Add(lic.LeaseTTL)
			}
			if ls.Lingering { // its client takes it back (server/linger.go)
				ls.Lingering = false
				s.d.Audit = append(s.d.Audit, server.AuditEntry{
					ID: server.NewID("aud_"), TenantID: ls.TenantID, Actor: "system", Action: server.AuditLeaseReclaim,
					Resource: "lease", ResourceID: ls.ID, Details: map[string]string{"license_id": ls.LicenseID}, At: now,
				})
			}
			s.d.Leases[ls.ID] = ls
			return result(ls, i, true), nil
		}
	}
	// The site policy judges a new lease over the pools it may take; its
	// SEATS_EXHAUSTED is the count's own, answered below.
	counts := liveAt(now)
	if replaced != nil {
		counts = func(ls server.Lease) bool { return ls.Live(now) && ls.ID != replaced.ID }
	}
	id := server.Identity{User: req.User, Host: req.Hostname}
	v, judged := s.judgePolicy(lic, req.Feature, id, pools, now, nil, counts)
	if judged && !v.Grant && v.Reason != server.ReasonSeatsExhausted {
		return server.AcquireResult{}, v.Err(req.Feature)
	}
	// Else the first usable pool with a free seat grants (a borrow: that
	// its pool allows).
	var firstRefusal, borrowRefusal error
	inUse, limit, usable := 0, 0, 0
	for i, p := range pools {
		if err := p.CheckUsable(now); err != nil {
			if firstRefusal == nil || server.ErrorReason(firstRefusal) == server.ReasonLicenseExpired {
				firstRefusal = err // a grant yet to start says more than an expired one
			}
			continue
		}
		usable++
		if borrowing {
			if err := s.checkBorrow(p, req.BorrowFor, now); err != nil {
				borrowRefusal = cmp.Or(borrowRefusal, err)
				continue
			}
		}
		n := s.live(p.ID, now)
		if replaced != nil && replaced.LicenseID == p.ID {
			n-- // its seat is the request's
		}
		if n >= p.SeatLimit() {
			inUse, limit = inUse+n, limit+p.SeatLimit()
			continue
		}
		if replaced != nil {
			s.replace(*replaced, req.LeaseID, now)
		}
		ls := s.grant(req, p, dedupe, v.Reservation, now, func() {
			if judged {
				s.policyEnds(lic, req.Feature, id, pools, p, v, now)
			}
		})
		return result(ls, i, false), nil
	}
	switch {
	case usable == 0:
		return server.AcquireResult{}, firstRefusal
	case borrowRefusal != nil && (req.Feature == "" || limit == 0):
		return server.AcquireResult{}, borrowRefusal
	case req.Feature != "":
		return server.AcquireResult{}, server.FeatureSeatsExhausted(req.Feature, inUse, limit)
	}
	return server.AcquireResult{}, server.SeatsExhausted(inUse, limit)
}

// checkBorrow judges a borrow from pool p. Caller holds mu.
func (s *memStore) checkBorrow(p server.License, d time.Duration, now time.Time) error {
	borrowed, returned := 0, 0
	for _, ls := range s.d.Leases {
		if ls.LicenseID == p.ID && ls.Borrowed && ls.Live(now) {
			borrowed++
		}
	}
	for _, rc := range s.d.Returned {
		if rc.LicenseID == p.ID && rc.ExpiresAt.After(now) {
			returned++
		}
	}
	return p.CheckBorrow(now, d, borrowed, returned)
}

// grant makes a new lease of pool p, which has a free seat; policyEnds
// expires the lapsed leases in the way of the site policy, once those of
// the same keys have. Caller holds mu.
func (s *memStore) grant(req server.AcquireRequest, p server.License, dedupe, reservation string, now time.Time, policyEnds func()) server.Lease {
	borrowing := req.BorrowFor > 0
	// A lapsed lease of the same idempotency or dedupe key ends for good:
	// it could otherwise revive beside the new one (invariant 4).
	for _, ls := range s.d.Leases {
		if ls.LicenseID == p.ID && ls.State == server.LeaseActive && !ls.Live(now) && ls.Borrowed == borrowing &&
			((req.IdempotencyKey != "" && ls.IdempotencyKey == req.IdempotencyKey) || (dedupe != "" && ls.DedupeKey == dedupe)) {
			s.expire(ls, now)
		}
	}
	policyEnds()
	// The earliest lapsed leases whose seats this grant needs end for good.
	var lapsed []server.Lease
	active := 0
	for _, ls := range s.d.Leases {
		if ls.LicenseID == p.ID && ls.State == server.LeaseActive {
			active++
			if !ls.Live(now) {
				lapsed = append(lapsed, ls)
			}
		}
	}
	slices.SortFunc(lapsed, func(a, b server.Lease) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	for i := 0; i < active+1-p.SeatLimit() && i < len(lapsed); i++ {
		s.expire(lapsed[i], now)
	}
	ls := server.Lease{
		ID: req.LeaseID, LicenseID: p.ID, TenantID: p.TenantID, TokenHash: req.TokenHash,
		Fingerprint: req.Fingerprint, User: req.User, Hostname: req.Hostname, Metadata: maps.Clone(req.Metadata),
		IdempotencyKey: req.IdempotencyKey, DedupeKey: dedupe, State: server.LeaseActive,
		AcquiredAt: now, LastHeartbeatAt: now, ExpiresAt: now.Add(p.LeaseTTL), Feature: req.Feature,
		Reservation: reservation,
	}
	if req.Feature != "" {
		ls.Version = req.Version
	}
	if borrowing {
		ls.Borrowed, ls.ExpiresAt = true, now.Add(req.BorrowFor)
	}
	s.d.Leases[ls.ID] = ls
	return ls
}

// authorized finds a lease by id and token hash. Caller holds mu.
func (s *memStore) authorized(leaseID, tokenHash string) (server.Lease, error) {
	ls, ok := s.d.Leases[leaseID]
	if !ok {
		return server.Lease{}, server.ErrLeaseNotFound
	}
	if ls.TokenHash != tokenHash {
		return server.Lease{}, server.ErrLeaseToken
	}
	return ls, nil
}

func (s *memStore) Heartbeat(_ context.Context, leaseID, tokenHash string) (server.Lease, error) {
	now, err := s.lock()
	if err != nil {
		return server.Lease{}, err
	}
	defer s.mu.Unlock()
	ls, err := s.authorized(leaseID, tokenHash)
	if err != nil {
		return server.Lease{}, err
	}
	switch ls.State {
	case server.LeaseReleased:
		return server.Lease{}, server.ErrLeaseReleased
	case server.LeaseRevoked:
		return server.Lease{}, server.ErrLeaseRevoked
	case server.LeaseExpired:
		return server.Lease{}, server.ErrLeaseExpired
	}
	if ls.Lingering {
		return server.Lease{}, server.ErrLeaseReleased // and never revived
	}
	lic := s.pool(ls.LicenseID)
	if !now.Before(ls.ExpiresAt) {
		revivable := !ls.Borrowed && now.Before(ls.ExpiresAt.Add(lic.RevivalWindow)) && s.live(lic.ID, now) < lic.SeatLimit() &&
			s.revivalAllowed(ls, now)
		if !revivable {
			s.expire(ls, now) // observed ends are final
			return server.Lease{}, server.ErrLeaseExpired
		}
	}
	if ls.Borrowed {
		return server.Lease{}, server.ErrLeaseBorrowed
	}
	if err := lic.CheckUsable(now); err != nil {
		return server.Lease{}, err
	}
	ls.LastHeartbeatAt, ls.ExpiresAt = now, now.Add(lic.LeaseTTL)
	s.d.Leases[ls.ID] = ls
	return cloneLease(ls), nil
}

func (s *memStore) Release(_ context.Context, leaseID, tokenHash string) (server.Lease, error) {
	now, err := s.lock()
	if err != nil {
		return server.Lease{}, err
	}
	defer s.mu.Unlock()
	ls, err := s.authorized(leaseID, tokenHash)
	if err != nil {
		return server.Lease{}, err
	}
	switch {
	case ls.State == server.LeaseReleased:
		return cloneLease(ls), nil
	case ls.State == server.LeaseRevoked:
		return server.Lease{}, server.ErrLeaseRevoked
	case ls.State == server.LeaseExpired:
		return server.Lease{}, server.ErrLeaseExpired
	case ls.Lingering && now.Before(ls.ExpiresAt):
		return cloneLease(ls), nil // released already: unchanged
	case ls.Lingering:
		return cloneLease(s.expire(ls, now)), nil // its linger lapsed: it ends, released
	case !now.Before(ls.ExpiresAt):
		s.expire(ls, now) // observed ends are final
		return server.Lease{}, server.ErrLeaseExpired
	case ls.Borrowed && !s.pool(ls.LicenseID).AllowEarlyReturn:
		return server.Lease{}, server.BorrowedNotReturnable(ls.ExpiresAt)
	case ls.Borrowed:
		if s.d.Returned == nil {
			s.d.Returned = map[string]server.ReturnedCertificate{}
		}
		s.d.Returned[ls.ID] = server.ReturnedCertificate{LeaseID: ls.ID, TenantID: ls.TenantID,
			LicenseID: ls.LicenseID, ExpiresAt: ls.ExpiresAt, ReturnedAt: now}
	default:
		lic := s.d.Licenses[server.PoolLicense(ls.LicenseID)]
		if d := lic.Policy.LingerFor(ls.Feature); d > 0 {
			ls.Lingering, ls.LastHeartbeatAt, ls.ExpiresAt = true, now, now.Add(d)
			s.d.Leases[ls.ID] = ls
			return cloneLease(ls), nil
		}
	}
	return cloneLease(s.end(ls, server.LeaseReleased, now)), nil
}

func (s *memStore) ReturnedCertificates(_ context.Context, tenantID string) ([]server.ReturnedCertificate, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []server.ReturnedCertificate
	for _, rc := range s.d.Returned {
		if rc.TenantID == tenantID {
			out = append(out, rc)
		}
	}
	slices.SortFunc(out, func(a, b server.ReturnedCertificate) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.LeaseID, b.LeaseID)
	})
	return out, nil
}

func (s *memStore) Revoke(_ context.Context, tenantID, leaseID string) (server.Lease, error) {
	now, err := s.lock()
	if err != nil {
		return server.Lease{}, err
	}
	defer s.mu.Unlock()
	ls, ok := s.d.Leases[leaseID]
	if !ok || ls.TenantID != tenantID {
		return server.Lease{}, server.ErrLeaseNotFound
	}
	if ls.State.Terminal() {
		return cloneLease(ls), nil
	}
	return cloneLease(s.end(ls, server.LeaseRevoked, now)), nil
}

func (s *memStore) RevokeUnconfirmed(_ context.Context, granted server.Lease) (server.Lease, bool, error) {
	now, err := s.lock()
	if err != nil {
		return server.Lease{}, false, err
	}
	defer s.mu.Unlock()
	ls, ok := s.d.Leases[granted.ID]
	if !ok || ls.TenantID != granted.TenantID {
		return server.Lease{}, false, server.ErrLeaseNotFound
	}
	if ls.State.Terminal() || ls.Lingering || !server.Unconfirmed(granted, ls) {
		return cloneLease(ls), false, nil
	}
	return cloneLease(s.end(ls, server.LeaseRevoked, now)), true, nil
}

func (s *memStore) GetLease(_ context.Context, tenantID, leaseID string) (server.Lease, error) {
	if _, err := s.lock(); err != nil {
		return server.Lease{}, err
	}
	defer s.mu.Unlock()
	ls, ok := s.d.Leases[leaseID]
	if !ok || ls.TenantID != tenantID {
		return server.Lease{}, server.ErrLeaseNotFound
	}
	return cloneLease(ls), nil
}

func (s *memStore) ListLeases(_ context.Context, tenantID, licenseID string, state server.LeaseState, p server.Page) ([]server.Lease, string, error) {
	if _, err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	if err := s.poolOf(tenantID, licenseID); err != nil {
		return nil, "", err
	}
	var all []server.Lease
	for _, ls := range s.d.Leases {
		if inLicense(ls.LicenseID, licenseID) && (state == "" || ls.State == state) {
			all = append(all, cloneLease(ls))
		}
	}
	slices.SortFunc(all, func(a, b server.Lease) int {
		return cmp.Or(b.AcquiredAt.Compare(a.AcquiredAt), cmp.Compare(b.ID, a.ID))
	})
	return page(all, p)
}

func (s *memStore) SeatsInUse(_ context.Context, tenantID, licenseID string) (int, error) {
	now, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if err := s.poolOf(tenantID, licenseID); err != nil {
		return 0, err
	}
	return s.live(licenseID, now), nil
}

func (s *memStore) SeatsInUseOf(_ context.Context, tenantID string, licenseIDs []string) (map[string]int, error) {
	now, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, id := range licenseIDs {
		if err := s.poolOf(tenantID, id); err == nil {
			out[id] = s.live(id, now)
		}
	}
	return out, nil
}

// Cleanup.

func (s *memStore) DueLeases(_ context.Context, after *server.LeaseRef, limit int) ([]server.LeaseRef, error) {
	now, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var due []server.LeaseRef
	for _, ls := range s.d.Leases {
		if ls.State != server.LeaseActive || now.Before(ls.ExpiresAt) {
			continue
		}
		ref := server.LeaseRef{LeaseID: ls.ID, LicenseID: ls.LicenseID, ExpiresAt: ls.ExpiresAt}
		if after != nil && compareRefs(ref, *after) <= 0 {
			continue
		}
		due = append(due, ref)
	}
	slices.SortFunc(due, compareRefs)
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	return due, nil
}

func (s *memStore) ExpireLeases(_ context.Context, refs []server.LeaseRef) ([]server.Lease, error) {
	now, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []server.Lease
	for _, ref := range refs {
		ls, ok := s.d.Leases[ref.LeaseID]
		if !ok || ls.State != server.LeaseActive || now.Before(ls.ExpiresAt) {
			continue // gone, ended, or renewed since it was found
		}
		ls = s.expire(ls, now)
		out = append(out, cloneLease(ls))
	}
	return out, nil
}

// expire records a lapsed lease as expired, with its usage and cleanup
// events; a lapsed linger as released, with its usage event only (no
// zombie). Caller holds mu.
func (s *memStore) expire(ls server.Lease, now time.Time) server.Lease {
	if ls.Lingering {
		return s.end(ls, server.LeaseReleased, now)
	}
	ls.State, ls.EndedAt = server.LeaseExpired, now
	s.d.Leases[ls.ID] = ls
	s.d.Usage = append(s.d.Usage, server.UsageEventOf(&ls))
	s.d.Cleanup = append(s.d.Cleanup, server.CleanupEvent{
		LeaseID: ls.ID, LicenseID: ls.LicenseID, TenantID: ls.TenantID, CleanupType: server.CleanupTypeZombie,
		LastHeartbeatAt: ls.LastHeartbeatAt, ExpiresAt: ls.ExpiresAt, CleanedAt: now, Feature: ls.Feature,
	})
	s.d.Audit = append(s.d.Audit, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: ls.TenantID, Actor: "system", Action: "lease.expire",
		Resource: "lease", ResourceID: ls.ID, At: now,
	})
	return ls
}

func (s *memStore) ZombieReport(_ context.Context, q server.ZombieQuery) (server.ZombieReport, error) {
	if _, err := s.lock(); err != nil {
		return server.ZombieReport{}, err
	}
	defer s.mu.Unlock()
	var rep server.ZombieReport
	days := map[string]map[string]int64{} // date -> license -> zombies
	type pool struct{ license, feature string }
	perLicense := map[pool]int64{} // a license's features ranked apart
	var minutes float64
	for _, e := range s.d.Cleanup {
		if e.TenantID != q.TenantID || e.CleanupType != server.CleanupTypeZombie || e.CleanedAt.Before(q.Start) || !e.CleanedAt.Before(q.End) ||
			(q.Feature != "" && e.Feature != q.Feature) {
			continue
		}
		d := e.CleanedAt.UTC().Format(time.DateOnly)
		if days[d] == nil {
			days[d] = map[string]int64{}
		}
		days[d][server.PoolLicense(e.LicenseID)]++
		perLicense[pool{server.PoolLicense(e.LicenseID), e.Feature}]++
		minutes += e.CleanedAt.Sub(e.LastHeartbeatAt).Minutes()
		rep.Total++
	}
	for _, d := range slices.Sorted(maps.Keys(days)) {
		var n int64
		for _, c := range days[d] {
			n += c
		}
		rep.Days = append(rep.Days, server.ZombieDay{Date: d, ZombiesCleaned: n, AffectedLicenses: int64(len(days[d]))})
	}
	for p, n := range perLicense {
		var leases int64
		for _, ls := range s.d.Leases {
			if ls.LicenseOf() == p.license && ls.Feature == p.feature {
				leases++
			}
		}
		lz := server.LicenseZombies{LicenseID: p.license, Feature: p.feature, LicenseName: s.d.Licenses[p.license].Name, ZombieCount: n, LeaseCount: leases}
		if leases > 0 {
			lz.Percentage = float64(n) / float64(leases) * 100
		}
		rep.TopLicenses = append(rep.TopLicenses, lz)
	}
	slices.SortFunc(rep.TopLicenses, func(a, b server.LicenseZombies) int {
		return cmp.Or(cmp.Compare(b.ZombieCount, a.ZombieCount), cmp.Compare(a.LicenseID, b.LicenseID), cmp.Compare(a.Feature, b.Feature))
	})
	top := q.TopLimit
	if top <= 0 {
		top = 20
	}
	if len(rep.TopLicenses) > top {
		rep.TopLicenses = rep.TopLicenses[:top]
	}
	if rep.Total > 0 {
		rep.MeanMinutesToCleanup = minutes / float64(rep.Total)
	}
	return rep, nil
}

// Records.

func (s *memStore) UsageEvents(_ context.Context, tenantID, licenseID string) ([]server.UsageEvent, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []server.UsageEvent
	for _, e := range s.d.Usage {
		if e.TenantID == tenantID && e.LicenseID == licenseID {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *memStore) CleanupEvents(_ context.Context, tenantID, licenseID string) ([]server.CleanupEvent, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []server.CleanupEvent
	for _, e := range s.d.Cleanup {
		if e.TenantID == tenantID && e.LicenseID == licenseID {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *memStore) AppendAudit(_ context.Context, e server.AuditEntry) error {
	if _, err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	e.Details = maps.Clone(e.Details)
	s.d.Audit = append(s.d.Audit, e)
	return nil
}

func (s *memStore) AuditLog(_ context.Context, tenantID string, p server.Page) ([]server.AuditEntry, string, error) {
	if _, err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	var all []server.AuditEntry
	for _, e := range s.d.Audit {
		if e.TenantID == tenantID {
			e.Details = maps.Clone(e.Details)
			all = append(all, e)
		}
	}
	slices.SortStableFunc(all, func(a, b server.AuditEntry) int { return a.At.Compare(b.At) })
	return page(all, p)
}

func (s *memStore) ActiveLeases(context.Context) (int64, error) {
	if _, err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var n int64
	for _, l := range s.d.Leases {
		if l.State == server.LeaseActive {
			n++
		}
	}
	return n, nil
}

// Event lists.

// memRange filters items of r's tenant (and license) with their time in r,
// sorts them by (time, id) and cuts the page. ErrLicenseNotFound for a
// license that was never the tenant's.
func memRange[T any](s *memStore, r server.EventRange, p server.Page, items func() []T, of func(T) (tenant, license, feature string, at time.Time, id string)) ([]T, string, error) {
	if _, err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	if r.LicenseID != "" {
		if l, ok := s.d.Licenses[server.PoolLicense(r.LicenseID)]; !ok || l.TenantID != r.TenantID {
			return nil, "", server.ErrLicenseNotFound
		}
	}
	var all []T
	for _, e := range items() {
		tenant, license, feature, at, _ := of(e)
		if tenant == r.TenantID && (r.LicenseID == "" || inLicense(license, r.LicenseID)) && (r.Feature == "" || feature == r.Feature) && r.Contains(at) {
			all = append(all, e)
		}
	}
	slices.SortStableFunc(all, func(a, b T) int {
		_, _, _, ta, ia := of(a)
		_, _, _, tb, ib := of(b)
		return cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
	})
	return page(all, p)
}

func (s *memStore) ListUsageEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.UsageEvent, string, error) {
	return memRange(s, r, p, func() []server.UsageEvent { return s.d.Usage }, func(e server.UsageEvent) (string, string, string, time.Time, string) {
		return e.TenantID, e.LicenseID, e.Feature, e.EndedAt, e.LeaseID
	})
}

func (s *memStore) ListCleanupEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.CleanupEvent, string, error) {
	return memRange(s, r, p, func() []server.CleanupEvent { return s.d.Cleanup }, func(e server.CleanupEvent) (string, string, string, time.Time, string) {
		return e.TenantID, e.LicenseID, e.Feature, e.CleanedAt, e.LeaseID
	})
}

func (s *memStore) ListAuditEvents(_ context.Context, r server.EventRange, p server.Page) ([]server.AuditEntry, string, error) {
	r.LicenseID = ""
	r.Feature = ""
	return memRange(s, r, p, func() []server.AuditEntry { return s.d.Audit }, func(e server.AuditEntry) (string, string, string, time.Time, string) {
		return e.TenantID, "", "", e.At, e.ID
	})
}

// Usage report.

func (s *memStore) RecordSeatEvent(_ context.Context, e server.SeatEvent) error {
	if _, err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.d.Seats = append(s.d.Seats, e)
	return nil
}

func (s *memStore) UsageReport(_ context.Context, q server.UsageQuery) (server.UsageReport, error) {
	now, err := s.lock()
	if err != nil {
		return server.UsageReport{}, err
	}
	defer s.mu.Unlock()
	if q.LicenseID != "" {
		if l, ok := s.d.Licenses[q.LicenseID]; !ok || l.TenantID != q.TenantID {
			return server.UsageReport{}, server.ErrLicenseNotFound
		}
	}
	var leases []server.Lease
	for _, l := range s.d.Leases {
		if l.TenantID == q.TenantID && (q.LicenseID == "" || l.LicenseOf() == q.LicenseID) {
			leases = append(leases, l)
		}
	}
	return server.BuildUsageReport(q, leases, slices.Clone(s.d.Seats), now)
}

func (s *memStore) CreateGrant(_ context.Context, g server.Grant) (server.Grant, error) {
	if _, err := s.lock(); err != nil {
		return server.Grant{}, err
	}
	defer s.mu.Unlock()
	if _, err := s.license(g.TenantID, g.LicenseID); err != nil {
		return server.Grant{}, err
	}
	if _, ok := s.d.Grants[g.ID]; ok {
		return server.Grant{}, server.AlreadyExists("grant.id", "grant")
	}
	s.d.Grants[g.ID] = g
	return g, nil
}

// grantOf returns a grant of the tenant's license. Caller holds mu.
func (s *memStore) grantOf(tenantID, licenseID, grantID string) (server.Grant, error) {
	if _, err := s.license(tenantID, licenseID); err != nil {
		return server.Grant{}, err
	}
	g, ok := s.d.Grants[grantID]
	if !ok || g.LicenseID != licenseID {
		return server.Grant{}, server.ErrGrantNotFound
	}
	return g, nil
}

func (s *memStore) UpdateGrant(_ context.Context, tenantID, licenseID, grantID string, update func(*server.Grant) error) (server.Grant, error) {
	now, err := s.lock()
	if err != nil {
		return server.Grant{}, err
	}
	defer s.mu.Unlock()
	old, err := s.grantOf(tenantID, licenseID, grantID)
	if err != nil {
		return server.Grant{}, err
	}
	g := old
	if err := update(&g); err != nil {
		return server.Grant{}, err
	}
	g.ID, g.LicenseID, g.TenantID, g.Feature, g.CreatedAt, g.UpdatedAt = old.ID, old.LicenseID, old.TenantID, old.Feature, old.CreatedAt, now
	if err := s.checkGrantChange(licenseID, grantID, &g); err != nil {
		return server.Grant{}, err
	}
	s.d.Grants[grantID] = g
	return g, nil
}

// checkGrantChange refuses to replace the license's grant grantID by g
// (nil: delete it) if its policy would no longer be valid. Caller holds
// mu.
func (s *memStore) checkGrantChange(licenseID, grantID string, g *server.Grant) error {
	prev := s.withGrants(s.d.Licenses[licenseID])
	next := prev
	next.Grants = nil
	for _, old := range prev.Grants {
		switch {
		case old.ID != grantID:
			next.Grants = append(next.Grants, old)
		case g != nil:
			next.Grants = append(next.Grants, *g)
		}
	}
	return prev.Policy.CheckChange(&prev, &next)
}

func (s *memStore) DeleteGrant(_ context.Context, tenantID, licenseID, grantID string) (int, error) {
	now, err := s.lock()
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if _, err := s.grantOf(tenantID, licenseID, grantID); err != nil {
		return 0, err
	}
	if err := s.checkGrantChange(licenseID, grantID, nil); err != nil {
		return 0, err
	}
	n := 0
	for _, ls := range s.d.Leases {
		if ls.LicenseID == grantID && ls.State == server.LeaseActive {
			s.end(ls, server.LeaseRevoked, now)
			n++
		}
	}
	delete(s.d.Grants, grantID)
	return n, nil
}
