package server

import (
	"context"
	"time"
)

// Store is everything seatd keeps. Two implementations exist: embedded (one
// node, a local data directory) and distributed (PostgreSQL record + Redis
// live leases). Both pass the conformance suite in server/storetest, and a
// client cannot tell them apart.
//
// All methods are safe for concurrent use. Time comes from the store itself
// (its clock, or Redis TIME), never from the caller, so that every instance
// judges deadlines by one clock. Errors are *Error values (ErrorCode tells the
// kind); a backend failure is EUNAVAILABLE and changes nothing.
type Store interface {
	TenantStore
	LicenseStore
	LeaseStore
	CleanupStore
	RecordStore
	UsageStore
	SigningKeyStore
	RetentionStore
	LicenseFileStore
	// Close flushes buffered writes (heartbeat write-behind) and releases the
	// store's resources. A closed store must not be used again.
	Close() error
}

// TenantStore keeps tenants and their API keys.
type TenantStore interface {
	// CreateTenant stores t as given (ID and CreatedAt set by the caller).
	// Returns ECONFLICT if the id is taken.
	CreateTenant(ctx context.Context, t Tenant) (Tenant, error)
	// GetTenant returns ENOTFOUND (ErrTenantNotFound) if absent.
	GetTenant(ctx context.Context, id string) (Tenant, error)
	// ListTenants lists tenants by id, ascending.
	ListTenants(ctx context.Context, p Page) ([]Tenant, string, error)
	// CreateAPIKey stores k (ID, SecretHash, CreatedAt set by the caller).
	// Returns ErrTenantNotFound if k.TenantID does not exist.
	CreateAPIKey(ctx context.Context, k APIKey) (APIKey, error)
	// ListAPIKeys lists a tenant's keys (revoked ones too), oldest first.
	ListAPIKeys(ctx context.Context, tenantID string, p Page) ([]APIKey, string, error)
	// RevokeAPIKey sets RevokedAt (once; revoking again returns the key
	// unchanged). Returns ErrAPIKeyNotFound.
	RevokeAPIKey(ctx context.Context, id string) (APIKey, error)
	// APIKeyBySecretHash finds a key, revoked or not, by the hash of its
	// secret. Returns ErrAPIKeyNotFound.
	APIKeyBySecretHash(ctx context.Context, hash string) (APIKey, error)
}

// LicenseStore keeps licenses. Every method is scoped to one tenant: a
// license of another tenant is ErrLicenseNotFound, exactly as a missing one.
type LicenseStore interface {
	// CreateLicense stores l as given: the caller has validated it and set
	// ID, Key, TenantID, CreatedAt and UpdatedAt. Returns ErrTenantNotFound
	// if the tenant does not exist, ECONFLICT (field "license.key") if the
	// key is taken by any license of any tenant.
	CreateLicense(ctx context.Context, l License) (License, error)
	GetLicense(ctx context.Context, tenantID, id string) (License, error)
	// LicenseByKey returns the (undeleted) license a client's license key
	// opens, of whatever tenant, or ErrLicenseNotFound. It says nothing of
	// seats: Acquire judges those.
	LicenseByKey(ctx context.Context, key string) (License, error)
	// ListLicenses lists a tenant's licenses, oldest first (by CreatedAt, ID).
	ListLicenses(ctx context.Context, tenantID string, p Page) ([]License, string, error)
	// UpdateLicense loads the license, calls update on a copy, and stores the
	// result atomically with respect to acquisitions on that license.
	// update may return an error (e.g. EINVALID), which is returned as is
	// and changes nothing. ID, TenantID, Key and CreatedAt cannot change;
	// UpdatedAt is set by the store.
	UpdateLicense(ctx context.Context, tenantID, id string, update func(*License) error) (License, error)
	// DeleteLicense revokes every active lease of the license (each gets
	// its usage event) and removes the license: its key stops working and
	// Get/List no longer show it. Lease history and events are kept.
	// Returns the number of leases revoked.
	DeleteLicense(ctx context.Context, tenantID, id string) (int, error)

	GrantStore
	PolicyStore
}

// PolicyStore keeps the site policies of licenses and the tenants' groups
// (policy.go). A license's policy is judged in the same atomic step as its
// seat count (invariant 13): Acquire decides the request with the policy
// (CompiledPolicy.Decide) and grants only what Judge grants, with
//   - a cap's count: the live leases of the pool (the base pool, or all of
//     a feature's grants) whose user/host the cap's subject names under
//     the policy and groups as they are now (a change of either applies to
//     the leases already held, from the next acquisition on);
//   - a reservation's count: the live leases that took one of its seats
//     (Lease.Reservation, set when granted and never changed: a lease held
//     before a reservation existed counts as a shared seat).
//
// A policy change never ends a lease. GetLicense, LicenseByKey,
// ListLicenses and UpdateLicense return each license with its Policy
// (nil: none), its Groups filled. GetLicense and LicenseByKey may share
// the Policy with the store and other answers (a store replaces a
// policy, never changes one in place, so that reading a license costs
// nothing of the size of its groups): callers treat it as read-only.
//
// On a license whose policy has rules of the pool (the base pool, or the
// request's feature), Acquire also:
//   - hands a live lease of the request's idempotency or dedupe key back
//     only to a request that claims the lease's user and host (hosts
//     without case). A request of another identity is judged as a new
//     lease of its own, with that lease's seat counted free: refused,
//     the lease is left as it was; granted, the new lease takes its place
//     and the old one ends in the same step, revoked, with an audit entry
//     (actor "system", action "lease.replace", details "replaced_by": the
//     new lease's id). A borrowed lease is handed back as without a
//     policy: it cannot be revoked;
//   - ends (expired, as a displaced lease: observed ends are final) the
//     lapsed leases that, were they live, would make Judge refuse the
//     grant (judged with the reservation it takes, or none, as the only
//     one it may take): a lapsed lease may come back without being
//     judged (a revival judges it, but a crash's write-behind slack gives
//     every active lease time back), so the grant must hold with them
//     counted (borrowed ones aside: they never come back). While that
//     judgment refuses, the earliest (by deadline,
//     then id) lapsed lease that counts in the refusing figure ends: under
//     the refusing cap; for a reservation, a shared lease of the pools (or
//     one of a reservation over its seats, or of the reservation the
//     grant takes), else any of them; for the seat count, one of the pool
//     that grants, else of the pools. The others keep their chance to
//     revive.
//
// A policy's lingers (Policy.Linger, server/linger.go) judge releases:
// Release of an active, live, unborrowed lease of a pool whose license's
// policy has a linger d > 0 for the pool's feature (Policy.LingerFor, the
// policy as it is at the release) does not end it: it stays active with
// Lingering set, LastHeartbeatAt = now and ExpiresAt = now + d, written
// at once (a restart, or a rebuild of a live state, brings it back as it
// is, with no write-behind slack), and Release returns it. While live it
// counts as any live lease (seats, caps, its reservation). On it:
//   - Heartbeat answers ErrLeaseReleased and changes nothing (never a
//     revival, before or after its deadline);
//   - Release answers it unchanged while live; past its deadline it ends
//     it, as ExpireLeases does, and answers the ended lease;
//   - Acquire hands it back (its keys, its identity, as any lease) as an
//     active lease no longer Lingering, with an audit entry (actor
//     "system", action AuditLeaseReclaim, details "license_id") written
//     with the renewal;
//   - Revoke ends it revoked, at once; RevokeUnconfirmed leaves it alone;
//   - every step that ends a lapsed lease (ExpireLeases, observed ends,
//     displacements) ends it as released, with its usage event (to its
//     deadline) and no cleanup event or lease.expire audit entry; an ended
//     lease keeps Lingering.
//
// UpdateLicense, UpdateGrant and DeleteGrant refuse, changing nothing, a
// change of the license's seats or grants that its policy would no longer
// pass (Policy.CheckChange: INVALID_ARGUMENT naming the rule as
// "policy.rules[i]...", e.g. the only grant of a feature a rule names, or
// seats under the pool's reservations), in the same atomic step as the
// change.
type PolicyStore interface {
	// SetPolicy replaces the license's policy (nil, or one without rules:
	// none) and returns the license. The store validates p against the
	// license's grants and the tenant's groups (Policy.Validate) in the
	// same atomic step, so that a group deleted meanwhile cannot slip in.
	// ErrLicenseNotFound if the license is not the tenant's.
	SetPolicy(ctx context.Context, tenantID, licenseID string, p *Policy) (License, error)
	// PutGroup creates the tenant's group g.Name, or replaces its kind and
	// members (the caller validated g: Group.Validate); the policies that
	// name it judge by it from the next acquisition on. A change of kind
	// that a policy naming the group would refuse is refused (Validate's
	// error). QuotaExceeded past MaxTenantGroups; ErrTenantNotFound.
	PutGroup(ctx context.Context, g Group) (Group, error)
	// DeleteGroup removes a group. ErrGroupNotFound; GroupInUse (naming
	// the licenses) if a policy names it.
	DeleteGroup(ctx context.Context, tenantID, name string) error
	// ListGroups lists the tenant's groups by name.
	ListGroups(ctx context.Context, tenantID string) ([]Group, error)
}

// GrantStore keeps the feature grants of licenses (grants.go). A store
// counts a grant's leases exactly as a license's, under the grant's id
// (Grant.Pool gives its settings): a grant is a pool of its own
// (invariant 12) in every step that counts, rebuilds or cleans up.
// GetLicense, LicenseByKey, ListLicenses and UpdateLicense return each
// license with its Grants (SortGrants order); a license's settings that a
// grant's pool takes from it (TTL, revival window, strategy, active,
// expiry, early return) apply to its grants' pools as soon as
// UpdateLicense returns.
type GrantStore interface {
	// CreateGrant stores g as given: the caller has validated it and set
	// ID (NewGrantID), LicenseID, TenantID, CreatedAt and UpdatedAt.
	// ErrLicenseNotFound if the license is not the tenant's (or deleted).
	CreateGrant(ctx context.Context, g Grant) (Grant, error)
	// UpdateGrant is UpdateLicense for a grant: update is called on a copy
	// and the result stored atomically with respect to acquisitions on it.
	// ID, LicenseID, TenantID, Feature and CreatedAt cannot change;
	// UpdatedAt is set by the store. ErrGrantNotFound if the license has
	// no such grant (ErrLicenseNotFound: no such license).
	UpdateGrant(ctx context.Context, tenantID, licenseID, grantID string, update func(*Grant) error) (Grant, error)
	// DeleteGrant revokes every active lease of the grant (each gets its
	// usage event) and removes it, as DeleteLicense does for a license;
	// its leases' next heartbeat is refused as a deleted license's is.
	// Returns the number of leases revoked.
	DeleteGrant(ctx context.Context, tenantID, licenseID, grantID string) (int, error)
}

// AcquireRequest asks for a seat. The caller has validated the fields and
// generated LeaseID and TokenHash; the store uses them only if a new lease
// is created (or, for TokenHash, when it hands back an existing lease).
type AcquireRequest struct {
	LicenseKey     string
	Fingerprint    string
	User           string
	Hostname       string
	Metadata       map[string]string
	IdempotencyKey string
	LeaseID        string
	TokenHash      string
	// BorrowFor > 0 borrows the seat (License.CheckBorrow): a new lease
	// with Borrowed set and ExpiresAt = now+BorrowFor, never handed back
	// by dedupe key; an idempotency key hands back only a borrowed lease,
	// with its deadline kept. 0: a normal lease.
	BorrowFor time.Duration
	// Feature != "" takes a seat of one of the license's grants of that
	// feature that covers Version ("" any), License.GrantsFor, instead of
	// the base pool. Version is valid dotted numbers or "".
	Feature string
	Version string
}

// AcquireResult is a granted (or re-found) lease.
type AcquireResult struct {
	Lease      Lease
	License    License
	SeatsInUse int  // live leases on the license after this call, this one included
	Existing   bool // an existing lease was handed back (token rotated, deadline renewed)
	// Grant is the grant the seat is of (a request with a Feature), nil
	// for the base pool; SeatsInUse then counts the grant's live leases.
	Grant *Grant
}

// LeaseStore is the hot path: acquire, heartbeat, release. Each method is
// atomic per license: the seat count is checked and changed in one step
// (invariant 1), never by a read-then-write across round trips.
type LeaseStore interface {
	// Acquire grants a seat on the license whose key is req.LicenseKey:
	//   - ErrLicenseNotFound if no (undeleted) license has that key;
	//   - ErrLicenseInactive / ErrLicenseExpired (License.CheckUsable);
	//   - if a live lease of the license has the same IdempotencyKey (when
	//     non-empty), or the same DedupeKey per the license's leasing strategy
	//     (when non-empty), that lease is returned with Existing=true, its
	//     TokenHash replaced by req.TokenHash, LastHeartbeatAt=now and its
	//     deadline renewed to now+TTL; no second seat is taken (invariant 4)
	//     (on a license with a site policy, only to the lease's own user
	//     and host: PolicyStore);
	//   - otherwise, if fewer than SeatLimit() leases are live (Lease.Live:
	//     leases past their deadline do not count, cleaned up or not), a new
	//     active lease with ID req.LeaseID, AcquiredAt=LastHeartbeatAt=now and
	//     ExpiresAt=now+TTL;
	//   - else SeatsExhausted(inUse, limit).
	// The new lease is durable before Acquire returns.
	//
	// With req.Feature, the same in the grants License.GrantsFor returns
	// (its errors as they are), in one atomic step over all of them
	// (invariant 12): a live lease of the same idempotency or dedupe key
	// in any of them is handed back; else the first of them (pick order)
	// that is usable now (Grant.Pool's CheckUsable at the store's clock)
	// and has a free seat grants, and the lease's LicenseID is that
	// grant's id, its Feature and Version the request's; else, if some of
	// them are usable, FeatureSeatsExhausted summed over those; else the
	// first one's CheckUsable error (ErrLicenseInactive,
	// ErrLicenseExpired when all have expired, GrantNotStarted with the
	// earliest start when some have yet to start). A borrow passes over
	// a grant whose pool's CheckBorrow refuses it; when no grant grants,
	// that refusal is the answer unless some usable grant was only full.
	// A live lease of a grant that is no longer usable (expired) is not
	// handed back: a current grant grants instead.
	Acquire(ctx context.Context, req AcquireRequest) (AcquireResult, error)

	// Heartbeat renews an active lease to now+TTL and sets LastHeartbeatAt.
	//   - ErrLeaseNotFound if no lease has that id;
	//   - ErrLeaseToken if SHA-256(token) != the lease's TokenHash (checked
	//     before anything else about the lease is revealed);
	//   - ErrLeaseReleased / ErrLeaseRevoked for those end states (and
	//     ErrLeaseReleased for a lingering lease: PolicyStore);
	//   - ErrLeaseExpired when the lease is in state expired, or when now is
	//     at or past its deadline (strict expiry, invariant 3), except: if
	//     the lease is still in state active, now < deadline+RevivalWindow,
	//     and a seat is free (live leases < SeatLimit), it is revived;
	//   - ErrLicenseInactive / ErrLicenseExpired if the license can no longer
	//     keep seats (the lease then runs out at its deadline).
	// Heartbeats may reach durable storage in batches (write-behind); Close
	// flushes them.
	Heartbeat(ctx context.Context, leaseID, tokenHash string) (Lease, error)

	// Release ends an active lease as released (EndedAt=now) and writes its
	// usage event. Same id/token checks as Heartbeat. Releasing a released
	// lease returns it unchanged (idempotent). Under a linger of the
	// license's site policy the lease lingers instead (PolicyStore). A lease past its deadline, or
	// expired or revoked, returns ErrLeaseExpired / ErrLeaseRevoked and
	// changes nothing (cleanup records the expiry). A live borrowed lease
	// is refused (BorrowedNotReturnable) unless its license
	// AllowEarlyReturn; then it ends as released and, in the same write, is
	// recorded as a ReturnedCertificate.
	Release(ctx context.Context, leaseID, tokenHash string) (Lease, error)
	// ReturnedCertificates lists the tenant's borrowed leases returned
	// early (a Release of a live borrowed lease of a license that
	// AllowEarlyReturn) that retention has not removed yet, by ExpiresAt.
	ReturnedCertificates(ctx context.Context, tenantID string) ([]ReturnedCertificate, error)

	// Revoke ends an active lease (even one past its deadline but not yet
	// cleaned up) as revoked, with its usage event. A lease already in an
	// end state is returned unchanged (idempotent). ErrLeaseNotFound if the
	// lease does not exist or belongs to another tenant.
	Revoke(ctx context.Context, tenantID, leaseID string) (Lease, error)

	// RevokeUnconfirmed revokes an active lease only while it is as
	// granted (Unconfirmed: not heartbeated, its deadline not moved), and
	// judges that in the same atomic step that stops its heartbeats, so
	// that a heartbeat acknowledged before it keeps the lease and one after
	// it is refused. revoked is false, with nothing changed, when the lease
	// was confirmed or has ended (the lease is then as the store holds it),
	// or when the store cannot tell (its live state is being rebuilt).
	// ErrLeaseNotFound as Revoke.
	RevokeUnconfirmed(ctx context.Context, granted Lease) (l Lease, revoked bool, err error)

	// GetLease returns a lease of the tenant, or ErrLeaseNotFound.
	GetLease(ctx context.Context, tenantID, leaseID string) (Lease, error)

	// ListLeases lists a license's leases newest first (AcquiredAt desc, ID
	// desc), only those in state when state != "". ErrLicenseNotFound if the
	// license is not the tenant's (deleted licenses too). A license's
	// leases are those of its base pool and of all its grants; licenseID
	// may also be a grant's id, for that grant's leases only.
	ListLeases(ctx context.Context, tenantID, licenseID string, state LeaseState, p Page) ([]Lease, string, error)

	// SeatsInUse counts the live leases of a license (not past deadline),
	// of its base pool only (a grant id: of that grant).
	SeatsInUse(ctx context.Context, tenantID, licenseID string) (int, error)

	// SeatsInUseOf counts, as SeatsInUse does, the live leases of each of
	// the tenant's licenses named (at most MaxPageSize). A license that is
	// not the tenant's, deleted or missing is left out of the map. A
	// license's count is its base pool's; an id may be a grant's, for the
	// grant's count.
	SeatsInUseOf(ctx context.Context, tenantID string, licenseIDs []string) (map[string]int, error)
}

// LeaseRef names a lease found by the expiry index.
type LeaseRef struct {
	LeaseID   string
	LicenseID string
	ExpiresAt time.Time
}

// CleanupStore is what the cleaner needs. Cost grows with the number of
// expired leases, not with all leases: stores keep an index by deadline.
type CleanupStore interface {
	// DueLeases returns up to limit active leases whose deadline is at or
	// before now (the store's clock), ordered by (ExpiresAt, LeaseID), and
	// strictly after the cursor `after` when it is non-nil (so a pass never
	// sees the same lease twice). It changes nothing.
	DueLeases(ctx context.Context, after *LeaseRef, limit int) ([]LeaseRef, error)

	// ExpireLeases ends the given leases as expired, in one transaction, but
	// only those still active and still past their deadline when checked
	// under the store's lock/transaction (a heartbeat may have won the
	// race). For each one it sets State=expired and EndedAt=now, writes one
	// usage event (AcquiredAt to LastHeartbeatAt), one CleanupEvent of type
	// "zombie" and an audit entry (actor "system", action "lease.expire");
	// a lingering lease (its linger lapsed) ends released instead, with its
	// usage event only (PolicyStore). It returns the leases it ended. Calling it twice, or from two
	// cleaners at once, records each lease once (invariant 5). On a backend
	// error nothing is removed (invariant 6).
	ExpireLeases(ctx context.Context, refs []LeaseRef) ([]Lease, error)

	// ZombieReport answers the seed's analytics over cleanup events of the
	// tenant with CleanedAt in [q.Start, q.End).
	ZombieReport(ctx context.Context, q ZombieQuery) (ZombieReport, error)

	// ActiveLeases counts the leases of every tenant that have not ended
	// (state active). Right after a cleanup pass that is the seats in use.
	ActiveLeases(ctx context.Context) (int64, error)
}

// ZombieQuery selects a report window.
type ZombieQuery struct {
	TenantID string
	Start    time.Time
	End      time.Time
	TopLimit int
	Feature  string // "": every zombie; else only those of that feature's grants
}

// ZombieReport answers the three analytics queries of the zombie-cleanup seed.
type ZombieReport struct {
	Days                 []ZombieDay      // ascending by date (UTC)
	TopLicenses          []LicenseZombies // by ZombieCount desc, then LicenseID
	MeanMinutesToCleanup float64          // mean of CleanedAt - LastHeartbeatAt, minutes; 0 if none
	Total                int64
}

// ZombieDay is zombies cleaned on one UTC date.
type ZombieDay struct {
	Date             string // YYYY-MM-DD
	ZombiesCleaned   int64
	AffectedLicenses int64
}

// LicenseZombies ranks one license by zombies in the window.
type LicenseZombies struct {
	LicenseID   string // the license's id (never a grant's)
	Feature     string // "" for the base pool: a license's features are ranked apart, each one all its grants
	LicenseName string
	ZombieCount int64
	LeaseCount  int64   // all leases ever acquired on the license
	Percentage  float64 // ZombieCount / LeaseCount * 100
}

// RecordStore reads the exactly-once records and writes the audit log.
type RecordStore interface {
	// UsageEvents returns the usage events of a pool (any state), oldest
	// first: of a license's base pool, or of a grant (its id).
	UsageEvents(ctx context.Context, tenantID, licenseID string) ([]UsageEvent, error)
	// CleanupEvents returns the cleanup events of a pool (as UsageEvents),
	// oldest first.
	CleanupEvents(ctx context.Context, tenantID, licenseID string) ([]CleanupEvent, error)
	// AppendAudit stores an audit entry (ID and At set by the caller).
	AppendAudit(ctx context.Context, e AuditEntry) error
	// AuditLog lists a tenant's audit entries, oldest first.
	AuditLog(ctx context.Context, tenantID string, p Page) ([]AuditEntry, string, error)

	// ListUsageEvents pages through the usage events of r.TenantID (of
	// r.LicenseID only, when set) with EndedAt in r, by (EndedAt, LeaseID).
	// A deleted license's events stay listed. ErrLicenseNotFound if
	// r.LicenseID is set and was never the tenant's.
	ListUsageEvents(ctx context.Context, r EventRange, p Page) ([]UsageEvent, string, error)
	// ListCleanupEvents is ListUsageEvents for cleanup events, by
	// (CleanedAt, LeaseID).
	ListCleanupEvents(ctx context.Context, r EventRange, p Page) ([]CleanupEvent, string, error)
	// ListAuditEvents pages through the audit entries of r.TenantID with At
	// in r, by (At, ID); r.LicenseID is not used.
	ListAuditEvents(ctx context.Context, r EventRange, p Page) ([]AuditEntry, string, error)
}

// LicenseFileStore keeps what locked mode needs beyond licenses
// (docs/concepts/license-files.md): the site key a license file names, and
// which file is in force. Both live with the data, not beside it, so that
// every instance of a distributed seatd holds the one site key and agrees
// on the file in force.
type LicenseFileStore interface {
	// EnsureSiteKey stores k as the site key unless one is stored, in one
	// step, and returns the site key stored: instances that ensure one at
	// once all get the same key. k is kept as given (its private half as
	// the caller sealed it); one with an empty ID is never stored, so
	// EnsureSiteKey(ctx, SigningKey{}) reads the key (ID "": none yet).
	EnsureSiteKey(ctx context.Context, k SigningKey) (SigningKey, error)
	// FileInForce returns the license file in force (Serial 0: none yet).
	FileInForce(ctx context.Context) (LicenseFileRecord, error)
	// SetFileInForce records f (Serial, Hash) as in force and returns the
	// record, its SetAt the store's clock, in one step: unless the record
	// holds a higher serial, or f's serial with another hash, when it is
	// FileNotNewer and nothing changes. f as in force already is returned
	// unchanged. So a restart, a restore or another instance with an older
	// file can never put it back.
	SetFileInForce(ctx context.Context, f LicenseFileRecord) (LicenseFileRecord, error)
}

// LicenseFileRecord names the license file in force.
type LicenseFileRecord struct {
	Serial int64     `json:"serial"`
	Hash   string    `json:"hash"`   // hex SHA-256 of its signed token: same serial, same file
	SetAt  time.Time `json:"set_at"` // when it was first put in force
}

// RetentionStore removes old history (retention.go says what each kind is).
type RetentionStore interface {
	// PruneRecords removes, in one transaction, at most limit records of
	// kind that are older than before (an ended lease by its EndedAt, an
	// event by its time), oldest first where the backend can order them.
	// It returns how many it removed: fewer than limit means none of that
	// kind older than before is left. Active leases are never removed.
	// On a backend error nothing is removed (EUNAVAILABLE).
	PruneRecords(ctx context.Context, kind RecordKind, before time.Time, limit int) (int, error)
}

// UsageStore keeps what the usage report counts beyond the leases, and
// answers the report.
type UsageStore interface {
	// RecordSeatEvent stores e (ID and At set by the caller); it is durable
	// when RecordSeatEvent returns.
	RecordSeatEvent(ctx context.Context, e SeatEvent) error
	// UsageReport answers q over the leases of the tenant's licenses
	// (deleted ones too) and the seat events (UsageReport says what counts).
	// ErrLicenseNotFound if q.LicenseID is set and was never the tenant's;
	// EINVALID (ErrUsageReportTooLarge) past q.MaxRows rows.
	UsageReport(ctx context.Context, q UsageQuery) (UsageReport, error)
}

// Page sizes.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// PageSize returns the effective size of p.
func (p Page) PageSize() int {
	switch {
	case p.Size <= 0:
		return DefaultPageSize
	case p.Size > MaxPageSize:
		return MaxPageSize
	}
	return p.Size
}

// BackgroundStats are counts a store keeps of its own background work, for
// /metrics. A store that has none of it need not report them. A store that
// keeps its live leases apart from its record (distributed mode: the live
// state) reports how the two are kept in step.
type BackgroundStats struct {
	HeartbeatsFlushed    int64 // heartbeat timestamps written behind to the record
	FlushFailures        int64 // write-behind passes that failed (their heartbeats are retried)
	LiveStateRebuilds    int64 // live states rebuilt from the record after the live copy was lost
	OrphansAdopted       int64 // leases active in the record that the live state had lost, handed to cleanup
	SettingsCopiesBehind int64 // now: license settings not yet copied into the live state (retried)
	HintsRederived       int64 // expiry hints found lost (later than the deadlines they point at) and lowered
	// Leases whose end (release, revoke) is recorded that the live state
	// still held, removed by the reconciliation; the recorded ends it
	// could not remove at its last pass (retried at the next); and its
	// bound, how many it removes a batch.
	EndedLeasesDropped, EndedLeasesBehind, EndRepairBatch int64
	// The cache of leases' fixed fields, when the store keeps one apart
	// from its record (distributed mode): leases it holds now, its bound,
	// and the lookups it could not answer (each a read of the record).
	LeaseCacheEntries, LeaseCacheSize, LeaseCacheMisses int64
	// DataFileDamaged is 1 once the store met a damaged page of its data
	// file (embedded): it refuses writes until restored from a backup.
	DataFileDamaged int64
}

// BackgroundReporter is implemented by stores that report BackgroundStats.
type BackgroundReporter interface {
	BackgroundStats() BackgroundStats
}

// ReadyChecker is implemented by stores that can tell whether they can
// take writes now; the daemon asks it every --readiness-interval and
// reports not ready (gRPC health NOT_SERVING, /readyz 503) while it says
// no. reason is a few words safe to show anyone ("the data file is
// damaged"); err is the detail, for the log. Both are empty when ready.
type ReadyChecker interface {
	CheckReady(ctx context.Context) (reason string, err error)
}
