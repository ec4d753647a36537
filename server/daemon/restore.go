package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/seatd/seatd/server/embedded"
)

// restoreMain is `seatd restore FILE [--data-dir DIR]`: offline, it puts a
// backup in place of DIR's database after checking it, keeping the
// database it replaces.
func restoreMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("seatd restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data-dir", envOr("data-dir", flagDefault("data-dir")), "the data dir to restore into (SEATD_DATA_DIR)")
	files, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "Usage: seatd restore FILE [--data-dir DIR]\n\n  With seatd stopped, replaces DIR/seatd.db by the backup FILE (checked first);\n  the database it replaces is kept as DIR/seatd.db.before-restore-<time>.")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "seatd restore: %v (see seatd restore -h)\n", err)
		return 2
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "seatd restore: name one backup FILE (see seatd restore -h)")
		return 2
	}
	if err := embedded.CheckBackup(files[0]); err != nil {
		fmt.Fprintf(stderr, "seatd restore: %v\n", err)
		return 1
	}
	kept, err := embedded.Restore(*dataDir, files[0], time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "seatd restore: %v\n", err)
		return 1
	}
	if kept != "" {
		fmt.Fprintf(stdout, "seatd restore: restored %s into %s; the database it replaced is kept as %s\n", files[0], *dataDir, kept)
	} else {
		fmt.Fprintf(stdout, "seatd restore: restored %s into %s\n", files[0], *dataDir)
	}
	return 0
}
