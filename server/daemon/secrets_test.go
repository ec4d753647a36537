package daemon

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/syncbuffer"
)

// TestStartSaysWhatIsUnprotected: a first start without --operator-key
// keeps the generated key in the data dir (0600) and logs where, never the
// key (issue 24, item 14: it landed in container logs); without an
// encryption key for the signing keys it warns, naming what to set (item
// 7: the log said only sealed=false at Info), and with one it does not.
func TestStartSaysWhatIsUnprotected(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, env map[string]string) (log, dir string) {
		dir = t.TempDir()
		cfg, err := ParseConfig([]string{
			"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data-dir", dir, "--drain-delay", "0s",
		}, func(k string) string { return env[k] }, io.Discard)
		require.NoError(t, err)
		out := &syncbuffer.Buffer{}
		d, err := Start(t.Context(), cfg, out)
		require.NoError(t, err)
		require.NoError(t, d.Shutdown())
		return out.String(), dir
	}

	log, dir := run(t, nil)
	keyFile := filepath.Join(dir, operatorKeyFile)
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	st, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.NotContains(t, log, strings.TrimSpace(string(key)), "the operator key is printed nowhere")
	require.Contains(t, log, "level=WARN msg=\"seatd generated an operator key and kept it in the data dir")
	require.Contains(t, log, "file="+keyFile)
	require.Contains(t, log, "level=WARN msg=\"signing keys are stored plain")
	require.Contains(t, log, "SEATD_SIGNING_KEY_ENCRYPTION_KEY")

	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	log, _ = run(t, map[string]string{"SEATD_SIGNING_KEY_ENCRYPTION_KEY": base64.StdEncoding.EncodeToString(raw)})
	require.NotContains(t, log, "signing keys are stored plain", "sealed: nothing to warn about")
}
