package daemon

import (
	"fmt"
	"io"
	"time"

	"github.com/seatd/seatd/server/embedded"
)

// restoreMain is `seatd restore FILE [--data-dir DIR]`: offline, it puts a
// backup in place of DIR's database after checking it, keeping the
// database it replaces.
func restoreMain(args []string, stdout, stderr io.Writer) int {
	c := newCommand("restore", stdout, stderr)
	dataDir := c.flags.String("data-dir", envOr("data-dir", flagDefault("data-dir")), "the data dir to restore into (SEATD_DATA_DIR)")
	files, code, ok := c.parse(args, "Usage: seatd restore FILE [--data-dir DIR]\n\n  With seatd stopped, replaces DIR/seatd.db by the backup FILE (checked first);\n  the database it replaces is kept as DIR/seatd.db.before-restore-<time>.")
	if !ok {
		return code
	}
	if len(files) != 1 {
		return c.fail(2, "name one backup FILE (see seatd restore -h)")
	}
	if err := embedded.CheckBackup(files[0]); err != nil {
		return c.fail(1, "%v", err)
	}
	kept, err := embedded.Restore(*dataDir, files[0], time.Now())
	if err != nil {
		return c.fail(1, "%v", err)
	}
	if kept != "" {
		fmt.Fprintf(stdout, "seatd restore: restored %s into %s; the database it replaced is kept as %s\n", files[0], *dataDir, kept)
	} else {
		fmt.Fprintf(stdout, "seatd restore: restored %s into %s\n", files[0], *dataDir)
	}
	return 0
}
