package daemon

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/grpcapi"
)

const backupTestKey = "backup-test-operator-key-0123"

func getBackup(t *testing.T, url, key string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, body
}

// TestBackupRoute: the operator gets a sound copy of a running embedded
// server's database from its HTTP port; anyone else gets the REST API's
// 401, and the spool file is gone from the data dir by the time the copy
// is answered (it failed about 1 run in 8 under load when the spool was
// removed only after the answer: the check raced the handler's return).
func TestBackupRoute(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := ParseConfig([]string{
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data-dir", dir,
		"--operator-key", backupTestKey, "--drain-delay", "0s",
	}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	d, err := Start(t.Context(), cfg, io.Discard)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Shutdown()) }()
	url := "http://" + d.HTTPAddr() + backupPath

	resp, body := getBackup(t, url, "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	resp, body = getBackup(t, url, "not-the-operator-key-0123")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)

	// The headers are in, the body not yet read: the handler is still
	// sending, and no spool file may be in the data dir.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+backupTestKey)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), "backup", "no spool file in the data dir while the copy is answered")
	}
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.EqualValues(t, resp.ContentLength, len(body), "the whole copy")
	file := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.WriteFile(file, body, 0o600))
	require.NoError(t, embedded.CheckBackup(file))
}

// spoolWatch is a ResponseWriter that looks into the data dir at each
// write of the answer, for spool files left there.
type spoolWatch struct {
	*httptest.ResponseRecorder
	t   *testing.T
	dir string
	saw []string
}

func (w *spoolWatch) Write(p []byte) (int, error) {
	entries, err := os.ReadDir(w.dir)
	require.NoError(w.t, err)
	for _, e := range entries {
		if strings.Contains(e.Name(), "backup") {
			w.saw = append(w.saw, e.Name())
		}
	}
	return w.ResponseRecorder.Write(p)
}

// TestBackupSpoolIsGoneWhileAnswered: while the copy is being sent, no
// spool file is in the data dir (a kill -9 during a slow download would
// have left a copy of the database there), and what is sent is whole.
func TestBackupSpoolIsGoneWhileAnswered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := embedded.Open(dir, embedded.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	d := &Daemon{store: st, cfg: Config{DataDir: dir}, log: slog.New(slog.DiscardHandler)}
	w := &spoolWatch{ResponseRecorder: httptest.NewRecorder(), t: t, dir: dir}
	d.backup(w, httptest.NewRequestWithContext(t.Context(), http.MethodGet, backupPath, nil))
	require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	require.Empty(t, w.saw, "spool files in the data dir while the copy was sent")
	require.Equal(t, w.Header().Get("Content-Length"), strconv.Itoa(w.Body.Len()))
	file := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.WriteFile(file, w.Body.Bytes(), 0o600))
	require.NoError(t, embedded.CheckBackup(file))
}

// TestBackupRouteDistributed: a store that cannot copy itself answers
// that backup is not supported there and what to use instead.
func TestBackupRouteDistributed(t *testing.T) {
	t.Parallel()
	d := &Daemon{
		store: struct{ server.Store }{}, // PostgreSQL's store: no Backup
		api:   grpcapi.New(grpcapi.Config{OperatorKey: backupTestKey}),
		log:   slog.New(slog.DiscardHandler),
	}
	srv := httptest.NewServer(d.api.OperatorOnly(http.HandlerFunc(d.backup)))
	defer srv.Close()
	resp, body := getBackup(t, srv.URL, backupTestKey)
	require.Equal(t, http.StatusNotImplemented, resp.StatusCode, "%s", body)
	var st struct{ Message string }
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, "backup is not supported in distributed mode: use pg_dump", st.Message)
}

// TestParseInterleaved: flags may follow the file, as in
// `seatd restore FILE --data-dir DIR`.
func TestParseInterleaved(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"FILE", "--data-dir", "DIR"},
		{"--data-dir", "DIR", "FILE"},
		{"--data-dir=DIR", "FILE"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		dir := fs.String("data-dir", "", "")
		files, err := parseInterleaved(fs, args)
		require.NoError(t, err)
		require.Equal(t, []string{"FILE"}, files, "%q", args)
		require.Equal(t, "DIR", *dir, "%q", args)
	}
}
