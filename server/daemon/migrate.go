package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/seatd/seatd/server/distributed"
)

// migrateMain is `seatd migrate [up|status] --postgres-url URL`: operators
// apply the schema before a rollout instead of letting instances do it.
func migrateMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seatd migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("postgres-url", os.Getenv(EnvName("postgres-url")), "PostgreSQL URL (SEATD_POSTGRES_URL)")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "Usage: seatd migrate [up|status] --postgres-url URL\n\n  up      apply pending migrations (the default)\n  status  list migrations and whether each is applied")
	}
	cmd := "up"
	if len(args) > 0 && (args[0] == "up" || args[0] == "status") {
		cmd, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "seatd migrate: %v (see seatd migrate -h)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "seatd migrate: unknown command %q (up or status)\n", fs.Arg(0))
		return 2
	}
	if *url == "" {
		fmt.Fprintln(stderr, "seatd migrate: --postgres-url (or SEATD_POSTGRES_URL) is required")
		return 2
	}
	// Parsed as the daemon's pool parses it: pool_* parameters are the
	// pool's, not PostgreSQL settings.
	pcfg, err := pgxpool.ParseConfig(*url)
	if err != nil {
		fmt.Fprintf(stderr, "seatd migrate: PostgreSQL URL: %v\n", err)
		return 2
	}
	db := stdlib.OpenDB(*pcfg.ConnConfig)
	defer func() { _ = db.Close() }()
	if err := db.PingContext(ctx); err != nil {
		fmt.Fprintf(stderr, "seatd migrate: cannot reach PostgreSQL: %v\n", err)
		return 1
	}
	switch cmd {
	case "status":
		states, err := distributed.MigrationStatus(ctx, db)
		if err != nil {
			fmt.Fprintf(stderr, "seatd migrate: %v\n", err)
			return 1
		}
		for _, m := range states {
			applied := "pending"
			if m.Applied {
				applied = "applied " + m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(stdout, "%05d  %-40s %s\n", m.Version, m.Name, applied)
		}
	default:
		done, err := distributed.Migrate(ctx, db, nil)
		for _, m := range done {
			fmt.Fprintf(stdout, "applied %05d %s (%s)\n", m.Version, m.Name, m.Duration)
		}
		if err != nil {
			fmt.Fprintf(stderr, "seatd migrate: %v\n", err)
			return 1
		}
		if len(done) == 0 {
			fmt.Fprintln(stdout, "schema is up to date")
		}
	}
	return 0
}
