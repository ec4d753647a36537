package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatd/seatd/server"
)

// PostgreSQL error codes the store tells apart.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
)

// pgError returns the PostgreSQL error in err, or nil.
func pgError(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

func isCode(err error, code string) bool {
	pe := pgError(err)
	return pe != nil && pe.Code == code
}

// jsonMap encodes a string map for a jsonb column ({} for none).
func jsonMap(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return string(b)
}

// nilIfEmpty gives an empty map the shape it has after a round trip.
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// optTime is a nullable timestamp: NULL for the zero time.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func fromOpt(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// licenseCols are the columns scanLicense reads.
const licenseCols = `id, tenant_id, key, name, seats, overdraft, lease_ttl_us, revival_window_us,
	leasing_strategy, active, expires_at, metadata, created_at, updated_at, version, live_epoch, deleted_at,
	max_borrow_us, max_borrowed_seats, allow_early_return, parent_id, feature, grant_version, starts_at,
	grant_expires_at, policy, policy_gen, linger_us`

// LicenseRow is a license with its bookkeeping columns, or a grant's pool
// (ParentID set: License is then Grant.Pool of the grant).
type LicenseRow struct {
	server.License
	Version int64 // bumped by every change of the settings
	Epoch   int64 // of the live state built from it (live_epoch)
	Deleted bool
	// A grant's row: its license, and its own expiry (License.ExpiresAt
	// is the pool's, the earlier of it and the license's).
	ParentID       string
	GrantExpiresAt time.Time
	// PolicyGen is the settings version at which the license's site
	// policy was last switched on, 0 without one; a grant's row carries
	// its license's (migration 00011).
	PolicyGen int64
	// Linger is how long a released seat of the row's pool lingers under
	// the license's policy (0: none; migration 00013): a license's row
	// its base pool's, a grant's its feature's.
	Linger time.Duration
}

// IsGrant reports whether the row is a grant's pool.
func (r *LicenseRow) IsGrant() bool { return r.ParentID != "" }

// Grant is a grant's row as a server.Grant.
func (r *LicenseRow) Grant() server.Grant {
	return server.Grant{
		ID: r.ID, LicenseID: r.ParentID, TenantID: r.TenantID, Feature: r.Feature, Version: r.GrantVersion,
		Seats: r.Seats, Overdraft: r.Overdraft, StartsAt: r.StartsAt, ExpiresAt: r.GrantExpiresAt,
		MaxBorrowDuration: r.MaxBorrowDuration, MaxBorrowedSeats: r.MaxBorrowedSeats,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func scanLicense(row pgx.Row) (LicenseRow, error) {
	var (
		r                LicenseRow
		ttlUS, revivalUS int64
		maxBorrowUS      int64
		strategy         string
		expires, deleted *time.Time
		meta             map[string]string
		created, updated time.Time
		parent, feature  *string
		grantVersion     *string
		starts, grantExp *time.Time
		policy           []byte
		lingerUS         int64
	)
	err := row.Scan(&r.ID, &r.TenantID, &r.Key, &r.Name, &r.Seats, &r.Overdraft, &ttlUS, &revivalUS,
		&strategy, &r.Active, &expires, &meta, &created, &updated, &r.Version, &r.Epoch, &deleted,
		&maxBorrowUS, &r.MaxBorrowedSeats, &r.AllowEarlyReturn, &parent, &feature, &grantVersion, &starts, &grantExp,
		&policy, &r.PolicyGen, &lingerUS)
	if err != nil {
		return LicenseRow{}, err
	}
	if policy != nil {
		r.Policy = &server.Policy{}
		if err := json.Unmarshal(policy, r.Policy); err != nil {
			return LicenseRow{}, fmt.Errorf("license %s: stored policy: %w", r.ID, err)
		}
	}
	r.Linger = time.Duration(lingerUS) * time.Microsecond
	r.LeaseTTL = time.Duration(ttlUS) * time.Microsecond
	r.RevivalWindow = time.Duration(revivalUS) * time.Microsecond
	r.MaxBorrowDuration = time.Duration(maxBorrowUS) * time.Microsecond
	r.LeasingStrategy = server.LeasingStrategy(strategy)
	r.ExpiresAt = fromOpt(expires)
	r.Metadata = nilIfEmpty(meta)
	r.CreatedAt, r.UpdatedAt = created.UTC(), updated.UTC()
	r.Deleted = deleted != nil
	if parent != nil {
		r.ParentID, r.Feature, r.GrantVersion = *parent, deref(feature), deref(grantVersion)
		r.StartsAt, r.GrantExpiresAt = fromOpt(starts), fromOpt(grantExp)
	}
	return r, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// sessionCols are the columns scanSession reads, for a table alias ("" for
// none).
func sessionCols(alias string) string {
	cols := []string{"id", "license_id", "tenant_id", "token_hash", "token_seq", "fingerprint", `"user"`,
		"hostname", "metadata", "idempotency_key", "dedupe_key", "state", "acquired_at",
		"last_heartbeat_at", "expires_at", "ended_at", "borrowed", "feature", "version", "reservation", "lingering"}
	if alias != "" {
		for i, c := range cols {
			cols[i] = alias + "." + c
		}
	}
	return strings.Join(cols, ", ")
}

// Session is a lease with its token sequence.
type Session struct {
	server.Lease
	TokenSeq int64
}

func scanSession(row pgx.Row) (Session, error) {
	var (
		r                    Session
		state                string
		meta                 map[string]string
		acquired, hb, expire time.Time
		ended                *time.Time
		reservation          []byte
	)
	err := row.Scan(&r.ID, &r.LicenseID, &r.TenantID, &r.TokenHash, &r.TokenSeq, &r.Fingerprint, &r.User,
		&r.Hostname, &meta, &r.IdempotencyKey, &r.DedupeKey, &state, &acquired, &hb, &expire, &ended, &r.Borrowed,
		&r.Feature, &r.Version, &reservation, &r.Lingering)
	if err != nil {
		return Session{}, err
	}
	r.State, r.Reservation = server.LeaseState(state), string(reservation)
	r.Metadata = nilIfEmpty(meta)
	r.AcquiredAt, r.LastHeartbeatAt, r.ExpiresAt = acquired.UTC(), hb.UTC(), expire.UTC()
	r.EndedAt = fromOpt(ended)
	return r, nil
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
