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
// 401, and the spool file is gone afterwards.
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

	resp, body = getBackup(t, url, backupTestKey)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	file := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.WriteFile(file, body, 0o600))
	require.NoError(t, embedded.CheckBackup(file))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NotContains(t, e.Name(), "backup", "the spool file is removed")
	}
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
