package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryReasonHasItsCodes: the error reference finds, for every reason
// the server declares, where it is raised and with which gRPC code, so that a
// new way of raising one cannot leave a reason without its code in the docs.
func TestEveryReasonHasItsCodes(t *testing.T) {
	g := &generator{root: filepath.Join("..", ".."), files: map[string][]byte{}}
	reasons, err := g.errorSource()
	require.NoError(t, err)
	for _, want := range []string{"SEATS_EXHAUSTED", "LEASE_EXPIRED", "SERVER_SHUTTING_DOWN", "TOO_MANY_STREAMS", "QUOTA_EXCEEDED", "MESSAGE_TOO_LARGE"} {
		require.Contains(t, reasons, want)
	}
	for name, r := range reasons {
		require.NotEmpty(t, r.files, "reason %s is declared but raised nowhere the generator looks", name)
		if !r.restOnly {
			require.NotEmpty(t, r.codes, "reason %s has no gRPC code", name)
		}
	}
	require.Equal(t, map[string]bool{"ResourceExhausted": true}, reasons["SEATS_EXHAUSTED"].codes)
	require.Equal(t, map[string]bool{"Unavailable": true}, reasons["SERVER_SHUTTING_DOWN"].codes)
	require.True(t, reasons["MESSAGE_TOO_LARGE"].restOnly)
}

func TestParseFlagDefaults(t *testing.T) {
	flags := parseFlagDefaults("Flags:\n  -auto-migrate\n    \tapply migrations (default true)\n" +
		"  -data-dir string\n    \tembedded mode: the data\n    \tdirectory (default \"./seatd-data\")\n  -pg-max-conns int\n    \tpool size\n")
	require.Equal(t, []seatdFlag{
		{name: "auto-migrate", kind: "bool", usage: "apply migrations", def: "true"},
		{name: "data-dir", kind: "string", usage: "embedded mode: the data directory", def: `"./seatd-data"`},
		{name: "pg-max-conns", kind: "int", usage: "pool size"},
	}, flags)
}

// TestConfigurationPageCheck: a flag missing from the hand-written table,
// or a table row for a flag seatd lacks, fails the check, naming it.
func TestConfigurationPageCheck(t *testing.T) {
	root := t.TempDir()
	page := filepath.Join(root, "docs", "operations", "configuration.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(page), 0o755))
	g := &generator{root: root, files: map[string][]byte{}}
	flags := []seatdFlag{{name: "grpc-addr"}, {name: "pg-max-conns"}, {name: "pg-min-conns"}}

	write := func(rows ...string) {
		require.NoError(t, os.WriteFile(page, []byte("| flag | env |\n|---|---|\n"+strings.Join(rows, "\n")+"\n"), 0o644))
	}
	write("| `--grpc-addr` | `SEATD_GRPC_ADDR` |", "| `--pg-max-conns`, `--pg-min-conns` | … |")
	require.NoError(t, g.checkConfigurationPage(flags))

	write("| `--grpc-addr` | `SEATD_GRPC_ADDR` |", "| `--pg-max-conns` | … |", "| `--gone` | … |")
	err := g.checkConfigurationPage(flags)
	require.ErrorContains(t, err, "--pg-min-conns")
	require.ErrorContains(t, err, "--gone")
}

func TestCellEscapesOutsideCode(t *testing.T) {
	require.Equal(t, "a &lt;key&gt; \\| `<key> | x` \\*", cell("a <key> | `<key> | x` *"))
}
