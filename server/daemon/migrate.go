package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seatd/seatd/server/distributed/record"
)

// migrateMain is `seatd migrate [up|status] --postgres-url URL`: operators
// apply the schema before a rollout instead of letting instances do it.
func migrateMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newCommand("migrate", stdout, stderr)
	url := c.flags.String("postgres-url", os.Getenv(EnvName("postgres-url")), "PostgreSQL URL (SEATD_POSTGRES_URL)")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "Usage: seatd migrate [up|status] --postgres-url URL\n\n  up      apply pending migrations (the default)\n  status  list migrations and whether each is applied")
	}
	cmd := "up"
	if len(args) > 0 && (args[0] == "up" || args[0] == "status") {
		cmd, args = args[0], args[1:]
	}
	// The command comes first, and nothing after the flags (not c.parse).
	if err := c.flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		return c.badFlags(err)
	}
	if c.flags.NArg() > 0 {
		return c.fail(2, "unknown command %q (up or status)", c.flags.Arg(0))
	}
	if *url == "" {
		return c.fail(2, "--postgres-url (or SEATD_POSTGRES_URL) is required")
	}
	db, err := record.OpenSQL(*url)
	if err != nil {
		return c.fail(2, "PostgreSQL URL: %v", err)
	}
	defer func() { _ = db.Close() }()
	if err := db.PingContext(ctx); err != nil {
		return c.fail(1, "cannot reach PostgreSQL: %v", err)
	}
	switch cmd {
	case "status":
		states, err := record.MigrationStatus(ctx, db)
		if err != nil {
			return c.fail(1, "%v", err)
		}
		for _, m := range states {
			applied := "pending"
			if m.Applied {
				applied = "applied " + m.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(stdout, "%05d  %-40s %s\n", m.Version, m.Name, applied)
		}
	default:
		done, err := record.Migrate(ctx, db, nil)
		for _, m := range done {
			fmt.Fprintf(stdout, "applied %05d %s (%s)\n", m.Version, m.Name, m.Duration)
		}
		if err != nil {
			return c.fail(1, "%v", err)
		}
		if len(done) == 0 {
			fmt.Fprintln(stdout, "schema is up to date")
		}
	}
	return 0
}
