package daemon

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, &out, &errOut)
		require.Equal(t, 0, code, "seatd %v: %s", args, errOut.String())
		line := strings.TrimSpace(out.String())
		require.Regexp(t, `^seatd \S+ \(revision \S+, go\S+\)$`, line, "seatd %v", args)
		require.Contains(t, line, runtime.Version())
		require.Equal(t, Build().String(), line)
		require.Empty(t, errOut.String())
	}
}

func TestBuildInfoFromLinkerFlags(t *testing.T) {
	t.Parallel()
	got := readBuildInfo("v9.8.7", "0123abc")
	require.Equal(t, BuildInfo{Version: "v9.8.7", Revision: "0123abc", GoVersion: runtime.Version()}, got)
	// Without them, the go command's stamp; a test binary has no VCS stamp.
	got = readBuildInfo("", "")
	require.NotEmpty(t, got.Version)
	require.NotEmpty(t, got.Revision)
}

func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main(context.Background(), []string{"-h"}, &out, &errOut))
	for _, cmd := range []string{"seatd migrate", "seatd backup", "seatd restore", "seatd version", "--version", "--grpc-addr"} {
		require.Contains(t, out.String(), cmd, "seatd -h")
	}
}
