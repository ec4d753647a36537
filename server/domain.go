// Package server holds seatd's domain: licenses, leases, tenants, the errors
// callers see and the store interfaces every storage backend implements. It
// has no dependencies; backends (embedded, postgres+redis) and transports
// (grpcapi, gateway) live in subpackages.
package server

import (
	"time"
)

// Defaults (docs/concepts/seats.md, docs/operations/configuration.md).
const (
	DefaultLeaseTTL      = 360 * time.Second
	MinLeaseTTL          = time.Second
	MaxLeaseTTL          = 7 * 24 * time.Hour
	DefaultTenantID      = "default"
	HeartbeatDivisor     = 6 // suggested heartbeat interval = TTL / 6
	MaxSeats             = 1_000_000
	MaxFingerprintLength = 256
	MaxLabelLength       = 256 // user, hostname, names, idempotency keys
	MaxMetadataEntries   = 32
	MaxMetadataValue     = 1024
	// MaxBorrowDuration bounds License.MaxBorrowDuration: the longest a
	// seat may be borrowed for offline use.
	MaxBorrowDuration = 30 * 24 * time.Hour
)

// LeasingStrategy decides which acquisitions share one lease.
type LeasingStrategy string

const (
	PerFingerprint LeasingStrategy = "fingerprint" // the default
	PerUser        LeasingStrategy = "user"
	PerHostname    LeasingStrategy = "hostname"
	PerAcquisition LeasingStrategy = "acquisition" // no dedupe but idempotency keys
)

// License grants Seats (+ Overdraft) concurrent leases.
type License struct {
	ID              string            `json:"id"`
	TenantID        string            `json:"tenant_id"`
	Key             string            `json:"key"`
	Name            string            `json:"name,omitempty"`
	Seats           int               `json:"seats"`
	Overdraft       int               `json:"overdraft,omitempty"`
	LeaseTTL        time.Duration     `json:"lease_ttl"`
	RevivalWindow   time.Duration     `json:"revival_window,omitempty"`
	LeasingStrategy LeasingStrategy   `json:"leasing_strategy"`
	Active          bool              `json:"active"`
	ExpiresAt       time.Time         `json:"expires_at,omitzero"` // zero: never
	Metadata        map[string]string `json:"metadata,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	// Borrowing (offline use): the longest one borrow may last (0: no
	// borrowing) and how many borrowed leases may be live at once (0: as
	// many as the seat limit allows).
	MaxBorrowDuration time.Duration `json:"max_borrow_duration,omitempty"`
	MaxBorrowedSeats  int           `json:"max_borrowed_seats,omitempty"`
	// AllowEarlyReturn lets a borrowed lease be released before its
	// deadline (docs/concepts/borrowing.md): the seat is freed, the
	// certificate listed as returned (ReturnedCertificate), and the
	// borrow still counts against the borrow cap until its deadline.
	AllowEarlyReturn bool `json:"allow_early_return,omitempty"`
	// Grants are the license's feature grants (grants.go), in the order
	// SortGrants gives; the stores fill them in every License they return.
	Grants []Grant `json:"grants,omitempty"`
	// Policy is the license's site policy (policy.go): who may use its
	// seats and how many. nil: none, every client alike.
	Policy *Policy `json:"policy,omitempty"`

	// Set only on a grant's pool (Grant.Pool), never on a license: the
	// grant's start, feature and version. CheckUsable judges StartsAt.
	StartsAt     time.Time `json:"starts_at,omitzero"`
	Feature      string    `json:"feature,omitempty"`
	GrantVersion string    `json:"grant_version,omitempty"`
}

// ReturnedCertificate is a borrowed lease returned before its deadline: its
// certificate (sub LeaseID, exp ExpiresAt) would stay valid offline until
// then, so the tenant's signed list of returned certificates names it, and
// it counts against its license's borrow cap until ExpiresAt.
type ReturnedCertificate struct {
	LeaseID    string
	TenantID   string
	LicenseID  string
	ExpiresAt  time.Time // the lease's deadline: the certificate's exp
	ReturnedAt time.Time
}

// SeatLimit is the most live leases the license allows.
func (l *License) SeatLimit() int { return l.Seats + l.Overdraft }

// HeartbeatInterval is the interval suggested to clients.
func (l *License) HeartbeatInterval() time.Duration { return l.LeaseTTL / HeartbeatDivisor }

// WriteBehindSlack is what a store adds to the recorded deadlines of a
// license's active leases once it has lost the heartbeats it writes behind
// every flush interval (a crash of the embedded store, a Redis loss in
// distributed mode). A lost heartbeat is at most a flush interval old, but
// the one recorded before it may be a heartbeat interval older still:
// with at least that much back, and a second for the flush itself, a
// client that heartbeats on time loses at most a flush interval of any
// deadline it was told. The price: a lease that lapsed that recently,
// unknown to anyone, counts again for at most as long.
func WriteBehindSlack(flushEvery time.Duration, l *License) time.Duration {
	return max(flushEvery+time.Second, l.HeartbeatInterval())
}

// CheckBorrow judges a request at now to borrow a seat for d (d > 0) when
// borrowed leases of the license are live: ErrBorrowNotAllowed, EINVALID
// on borrow_duration past MaxBorrowDuration or ending after ExpiresAt
// (BorrowPastExpiry: a borrowed certificate must not outlive its pool,
// a grant's or the license's), or BorrowLimit. The seat limit is judged
// apart, as for any acquisition.
//
// returned is how many borrowed leases of the license were returned early
// and have not reached their deadline: their certificates may still be
// valid on a machine that never comes online, so they count against the
// borrow cap (MaxBorrowedSeats, or the seat limit when it is 0) as if
// still borrowed. They hold no seat.
func (l *License) CheckBorrow(now time.Time, d time.Duration, borrowed, returned int) error {
	if l.MaxBorrowDuration <= 0 {
		return ErrBorrowNotAllowed
	}
	if d > l.MaxBorrowDuration {
		return Invalid("borrow_duration", "must be at most the license's max_borrow_duration (%s)", l.MaxBorrowDuration)
	}
	if !l.ExpiresAt.IsZero() && now.Add(d).After(l.ExpiresAt) {
		return BorrowPastExpiry(l.ExpiresAt)
	}
	if n := borrowed + returned; l.MaxBorrowedSeats > 0 && n >= l.MaxBorrowedSeats {
		return BorrowLimit(n, l.MaxBorrowedSeats)
	} else if l.MaxBorrowedSeats == 0 && returned > 0 && n >= l.SeatLimit() {
		return BorrowLimit(n, l.SeatLimit())
	}
	return nil
}

// CheckUsable returns ErrLicenseInactive or ErrLicenseExpired when the license
// may not grant or keep seats at now; for a grant's pool (Grant.Pool), also
// GrantNotStarted before its StartsAt.
func (l *License) CheckUsable(now time.Time) error {
	if !l.Active {
		return ErrLicenseInactive
	}
	if !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt) {
		return ErrLicenseExpired
	}
	if !l.StartsAt.IsZero() && now.Before(l.StartsAt) {
		return GrantNotStarted(l.Feature, l.StartsAt)
	}
	return nil
}

// LeaseState is where a lease is in its life.
type LeaseState string

const (
	LeaseActive   LeaseState = "active"
	LeaseReleased LeaseState = "released"
	LeaseExpired  LeaseState = "expired"
	LeaseRevoked  LeaseState = "revoked"
)

// Terminal reports whether s is an end state.
func (s LeaseState) Terminal() bool {
	return s == LeaseReleased || s == LeaseExpired || s == LeaseRevoked
}

// Lease is one seat held by one client.
type Lease struct {
	ID              string            `json:"id"`
	LicenseID       string            `json:"license_id"`
	TenantID        string            `json:"tenant_id"`
	TokenHash       string            `json:"token_hash"` // hex SHA-256 of the lease token
	Fingerprint     string            `json:"fingerprint"`
	User            string            `json:"user,omitempty"`
	Hostname        string            `json:"hostname,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	IdempotencyKey  string            `json:"idempotency_key,omitempty"`
	DedupeKey       string            `json:"dedupe_key,omitempty"` // per the leasing strategy; "" = none
	State           LeaseState        `json:"state"`
	AcquiredAt      time.Time         `json:"acquired_at"`
	LastHeartbeatAt time.Time         `json:"last_heartbeat_at"`
	ExpiresAt       time.Time         `json:"expires_at"` // the deadline
	EndedAt         time.Time         `json:"ended_at,omitzero"`
	// Borrowed: taken for offline use (AcquireRequest.BorrowFor). It keeps
	// its deadline (no heartbeats, no renewal) and cannot be revoked.
	Borrowed bool `json:"borrowed,omitempty"`
	// Feature and Version are what the acquisition asked for
	// (AcquireRequest); a lease of a feature has the grant's id as its
	// LicenseID (GrantID, LicenseOf).
	Feature string `json:"feature,omitempty"`
	Version string `json:"version,omitempty"`
	// Reservation is the key (Reservation.Key) of the site-policy
	// reservation whose seat the lease took when granted, "" a shared
	// seat (PolicyStore).
	Reservation string `json:"reservation,omitempty"`
	// Lingering: its client released it under a site policy's linger
	// (Policy.LingerFor). Still active, it holds its seat until ExpiresAt
	// (the release + the linger) for the same client to take back, and
	// its heartbeats are answered as a released lease's; ended, it ended
	// in its linger (lapsed: released; or revoked). LastHeartbeatAt is
	// then when its client released it.
	Lingering bool `json:"lingering,omitempty"`
}

// GrantID is the id of the grant the lease holds a seat of, "" for the
// license's base pool.
func (l *Lease) GrantID() string {
	if IsGrantID(l.LicenseID) {
		return l.LicenseID
	}
	return ""
}

// LicenseOf is the id of the license the lease holds a seat of (its
// grant's license for a lease of a feature).
func (l *Lease) LicenseOf() string { return PoolLicense(l.LicenseID) }

// Live reports whether the lease holds a seat at now: active and before its
// deadline (invariant 2: an expired lease stops counting at its deadline).
func (l *Lease) Live(now time.Time) bool {
	return l.State == LeaseActive && now.Before(l.ExpiresAt)
}

// Unconfirmed reports whether a lease is, as far as the store can tell,
// still as it was granted: neither heartbeated nor given a later deadline.
// A later deadline without a later heartbeat is a store that lost recent
// heartbeats and gave the write-behind interval back (a Redis loss, or a
// restart after a crash): whether the holder heartbeated is then unknown,
// and a seat is never taken on a guess.
func Unconfirmed(granted, now Lease) bool {
	return !now.LastHeartbeatAt.After(granted.LastHeartbeatAt) && !now.ExpiresAt.After(granted.ExpiresAt)
}

// DedupeKey is the key under which acquisitions share a lease for the given
// strategy, or "" when every acquisition gets its own seat.
func DedupeKey(s LeasingStrategy, fingerprint, user, hostname string) string {
	switch s {
	case PerUser:
		if user == "" {
			return "fp:" + fingerprint
		}
		return "user:" + user
	case PerHostname:
		if hostname == "" {
			return "fp:" + fingerprint
		}
		return "host:" + hostname
	case PerAcquisition:
		return ""
	default:
		return "fp:" + fingerprint
	}
}

// UsageEvent records how long a lease held its seat; exactly one per ended
// lease, made by UsageEventOf.
type UsageEvent struct {
	LeaseID   string        `json:"lease_id"`
	LicenseID string        `json:"license_id"`
	TenantID  string        `json:"tenant_id"`
	EndState  LeaseState    `json:"end_state"`
	StartedAt time.Time     `json:"started_at"`
	EndedAt   time.Time     `json:"ended_at"`          // the end of its seat time: SeatHeldUntil (its deadline, if that came before its end)
	Duration  time.Duration `json:"duration"`          // EndedAt - StartedAt
	Feature   string        `json:"feature,omitempty"` // the lease's (LicenseID is then its grant's id)
}

// CleanupEvent records one zombie reclaimed; exactly one per expired lease.
type CleanupEvent struct {
	LeaseID         string    `json:"lease_id"`
	LicenseID       string    `json:"license_id"`
	TenantID        string    `json:"tenant_id"`
	CleanupType     string    `json:"cleanup_type"` // "zombie"
	LastHeartbeatAt time.Time `json:"last_heartbeat_at"`
	ExpiresAt       time.Time `json:"expires_at"`
	CleanedAt       time.Time `json:"cleaned_at"`
	Feature         string    `json:"feature,omitempty"` // the lease's (LicenseID is then its grant's id)
}

// AuditEntry records an administrative or system action.
type AuditEntry struct {
	ID         string            `json:"id"`
	TenantID   string            `json:"tenant_id"`
	Actor      string            `json:"actor"`  // "operator", "apikey:<id>", "system"
	Action     string            `json:"action"` // e.g. "license.create", "lease.expire"
	Resource   string            `json:"resource"`
	ResourceID string            `json:"resource_id"`
	Details    map[string]string `json:"details,omitempty"`
	At         time.Time         `json:"at"`
}

// Tenant owns licenses and API keys.
type Tenant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey administers one tenant. Only the hash of its secret is stored.
type APIKey struct {
	ID         string    `json:"id"`
	TenantID   string    `json:"tenant_id"`
	Name       string    `json:"name,omitempty"`
	SecretHash string    `json:"secret_hash"`
	CreatedAt  time.Time `json:"created_at"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	// Role is what the key may do in its tenant ("" in a key stored
	// before roles: KeyRole reads it as RoleAdmin).
	Role Role `json:"role,omitempty"`
}

// Page asks for one page of a list. Token is opaque, from a previous answer.
type Page struct {
	Size  int
	Token string
}

// Usage notes how CleanupEvent.CleanupType is spelled for zombies.
const CleanupTypeZombie = "zombie"
