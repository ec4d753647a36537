package daemon

import (
	"io"
	"net/http"
	"os"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/server"
)

// backupPath is the hot backup of the embedded store, for the operator
// (docs/guides/backup.md); `seatd backup` calls it.
const backupPath = "/v1/admin/backup"

// backupper is a store that can copy itself while serving (embedded).
type backupper interface {
	Backup(w io.Writer) (int64, error)
}

// serveBackup adds the backup route to the HTTP port.
func (d *Daemon) serveBackup() {
	d.gateway.Handle("GET "+backupPath, d.api.OperatorOnly(http.HandlerFunc(d.backup)))
}

// backup answers a consistent copy of the database. The copy is spooled to
// a file in the data dir first: bbolt cannot remap a growing file while a
// read transaction is open, so streaming to a slow client could stall
// every write; a local copy keeps the transaction short.
//
// The spool's name is removed as soon as it is created, before anything is
// answered: the open file stays readable (POSIX), and no copy of the
// database (license keys, token hashes) lingers in the data dir while a
// slow client downloads it, nor after a crash or kill -9 meanwhile. Where
// an open file cannot be removed (Windows) it is removed once sent.
func (d *Daemon) backup(w http.ResponseWriter, r *http.Request) {
	b, ok := d.store.(backupper)
	if !ok {
		d.api.WriteHTTPError(w, r, status.Error(codes.Unimplemented, "backup is not supported in distributed mode: use pg_dump"))
		return
	}
	spool, err := os.CreateTemp(d.cfg.DataDir, "seatd.db.backup-*")
	if err != nil {
		d.api.WriteHTTPError(w, r, server.Unavailable(err))
		return
	}
	unlinked := os.Remove(spool.Name()) == nil
	defer func() {
		_ = spool.Close()
		if !unlinked {
			_ = os.Remove(spool.Name())
		}
	}()
	n, err := b.Backup(spool)
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		d.api.WriteHTTPError(w, r, server.Unavailable(err))
		return
	}
	d.log.Info("backup taken", "bytes", n, "remote", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10)) // lets the client tell a cut transfer
	w.Header().Set("Content-Disposition", `attachment; filename="seatd.db"`)
	if _, err := io.Copy(w, spool); err != nil {
		d.log.Warn("backup: the client did not take the whole copy", "err", err, "remote", r.RemoteAddr)
	}
}
