package record

import (
	"time"

	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// ErrDeleted is RebuildSnapshot's answer for a deleted license.
var ErrDeleted = errors.New("license deleted")

// Snapshot is what a rebuild of a license's live state reads from the
// record under the license's row lock.
type Snapshot struct {
	License  LicenseRow
	Epoch    int64 // the new live epoch; 0 if current said the live state is current
	Sessions []Session
	Returned []Returned // borrowed leases returned early, before their deadline
}

// Returned is a borrowed lease returned early (returned_certificates).
type Returned struct {
	LeaseID   string
	ExpiresAt time.Time
}

// RebuildSnapshot locks the license row (FOR UPDATE) and, while holding
// it, asks current whether the live state is current for the row; if not,
// it bumps the license's live epoch and reads its active sessions, and
// commits. The lock waits for the acquisitions in the middle of recording
// a lease, and their inserts require the epoch they were granted in: a
// lease granted by an older live state can never be recorded after this.
// ErrLicenseNotFound if there is no such license; ErrDeleted (with the
// row) if it is deleted.
func (pg *Postgres) RebuildSnapshot(ctx context.Context, licenseID string, current func(LicenseRow) (bool, error)) (Snapshot, error) {
	var snap Snapshot
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		lic, err := scanLicense(tx.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses WHERE id = $1 FOR UPDATE`, licenseID))
		if errors.Is(err, pgx.ErrNoRows) {
			return server.ErrLicenseNotFound
		}
		if err != nil {
			return err
		}
		snap.License = lic
		if lic.Deleted {
			return ErrDeleted
		}
		if ok, err := current(lic); err != nil || ok {
			return err
		}
		snap.Epoch = lic.Epoch + 1
		if _, err := tx.Exec(ctx, `UPDATE licenses SET live_epoch = $2 WHERE id = $1`, licenseID, snap.Epoch); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+sessionCols("")+` FROM sessions
			WHERE license_id = $1 AND state = 'active' ORDER BY acquired_at, id`, licenseID)
		snap.Sessions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
		if err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT lease_id, expires_at FROM returned_certificates
			WHERE license_id = $1 AND expires_at > clock_timestamp()`, licenseID)
		snap.Returned, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Returned, error) {
			var x Returned
			err := r.Scan(&x.LeaseID, &x.ExpiresAt)
			return x, err
		})
		return err
	})
	return snap, err
}

// IsUniqueViolation reports whether PostgreSQL refused a write because an
// id or key is taken.
func IsUniqueViolation(err error) bool { return isCode(err, pgUniqueViolation) }
