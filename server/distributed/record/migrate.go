package record

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/seatd/seatd/migrations"
)

// MigrationResult is one migration applied by Migrate.
type MigrationResult struct {
	Version  int64
	Name     string
	Duration time.Duration
}

// MigrationState is one migration as MigrationStatus sees it.
type MigrationState struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time // zero when pending
}

// Migrate applies the pending migrations of package migrations to the
// schema db works in (its search_path), under a PostgreSQL session-level
// advisory lock named after that schema, so that two seatd instances
// starting at once never race and stores in different schemas never wait
// for each other. It returns the migrations it applied (none when the
// schema is up to date). logger may be nil.
func Migrate(ctx context.Context, db *sql.DB, logger *slog.Logger) ([]MigrationResult, error) {
	p, err := newMigrator(ctx, db, logger)
	if err != nil {
		return nil, err
	}
	res, err := p.Up(ctx)
	out := make([]MigrationResult, 0, len(res))
	for _, r := range res {
		if r.Error != nil {
			continue
		}
		out = append(out, MigrationResult{Version: r.Source.Version, Name: baseName(r.Source.Path), Duration: r.Duration})
	}
	if err != nil {
		return out, fmt.Errorf("apply migrations: %w", err)
	}
	return out, nil
}

// MigrationStatus lists every known migration and whether the schema db
// works in has it.
func MigrationStatus(ctx context.Context, db *sql.DB) ([]MigrationState, error) {
	p, err := newMigrator(ctx, db, nil)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	out := make([]MigrationState, 0, len(st))
	for _, m := range st {
		out = append(out, MigrationState{
			Version:   m.Source.Version,
			Name:      baseName(m.Source.Path),
			Applied:   m.State == goose.StateApplied,
			AppliedAt: m.AppliedAt,
		})
	}
	return out, nil
}

func newMigrator(ctx context.Context, db *sql.DB, logger *slog.Logger) (*goose.Provider, error) {
	var schema string
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, fmt.Errorf("read current schema: %w", err)
	}
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(migrationLockID(schema)),
		lock.WithLockTimeout(1, 300), // poll every second, for up to 5 minutes
	)
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true),
	}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, opts...)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}

// migrationLockID is the advisory lock of the schema's migrations.
func migrationLockID(schema string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("seatd.migrate:" + cmp.Or(schema, "public")))
	return int64(h.Sum64() &^ (1 << 63))
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// OpenSQL opens a database/sql handle on a seatd PostgreSQL URL, parsed as
// Open's pool parses it (pool_* parameters are the pool's, not
// PostgreSQL's): for `seatd migrate`.
func OpenSQL(url string) (*sql.DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	return stdlib.OpenDB(*cfg.ConnConfig), nil
}
