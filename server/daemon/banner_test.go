package daemon

import (
	"io"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/syncbuffer"
)

// TestConsoleURL: the console's address as the start-up line prints it.
func TestConsoleURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:8080", false, "http://127.0.0.1:8080/ui/"},
		{"127.0.0.1:8443", true, "https://127.0.0.1:8443/ui/"},
		{"0.0.0.0:8080", false, "http://localhost:8080/ui/"},
		{"[::]:8080", true, "https://localhost:8080/ui/"},
		{":8080", false, "http://localhost:8080/ui/"},
		{"[::1]:8080", false, "http://[::1]:8080/ui/"},
		{"seatd.example.com:443", true, "https://seatd.example.com:443/ui/"},
	} {
		require.Equal(t, tt.want, consoleURL(tt.addr, tt.tls), "%s tls=%v", tt.addr, tt.tls)
	}
}

// TestBannerNamesTheConsole: the "seatd serving" line says where the
// console is (issue 25: it named the operator key's file, not the console).
func TestBannerNamesTheConsole(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]string{
		"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--drain-delay", "0s",
	}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	out := &syncbuffer.Buffer{}
	d, err := Start(t.Context(), cfg, out)
	require.NoError(t, err)
	addr := d.HTTPAddr()
	require.NoError(t, d.Shutdown())
	require.Regexp(t, `msg="seatd serving" .*\bconsole=`+regexp.QuoteMeta("http://"+addr+"/ui/")+`(\s|$)`, out.String())
}
