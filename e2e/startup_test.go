package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// failTimeout bounds how long a seatd that cannot start (or a backup or
// restore run) may take to say so: it tells a hang from an answer, on a
// machine however busy.
const failTimeout = eventTimeout

// TestStartupErrors: seatd refuses to start with a short, one-line message
// naming what is wrong, and never hangs.
func TestStartupErrors(t *testing.T) {
	t.Parallel()

	// base returns working flags on a fresh data dir; later flags win.
	base := func(t *testing.T) []string {
		return []string{
			"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
			"--data-dir", t.TempDir(), "--operator-key", testOperatorKey, "--drain-delay", "0s",
		}
	}
	busy := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		return ln.Addr().String()
	}

	for _, tc := range []struct {
		name string
		// setup returns the arguments, the environment, and the strings the
		// error message must contain.
		setup    func(t *testing.T) (args, env, want []string)
		wantCode int // 0: any non-zero code
	}{
		{
			name: "busy grpc port",
			setup: func(t *testing.T) ([]string, []string, []string) {
				addr := busy(t)
				return append(base(t), "--grpc-addr", addr), nil, []string{"--grpc-addr", addr}
			},
		},
		{
			name: "busy http port",
			setup: func(t *testing.T) ([]string, []string, []string) {
				addr := busy(t)
				return append(base(t), "--http-addr", addr), nil, []string{"--http-addr", addr}
			},
		},
		{
			name: "invalid duration flag",
			setup: func(t *testing.T) ([]string, []string, []string) {
				return append(base(t), "--cleanup-interval=abc"), nil, []string{"cleanup-interval", "abc"}
			},
			wantCode: 2,
		},
		{
			name: "out of range flag",
			setup: func(t *testing.T) ([]string, []string, []string) {
				return append(base(t), "--cleanup-interval=10ms"), nil, []string{"--cleanup-interval"}
			},
			wantCode: 2,
		},
		{
			name: "short operator key",
			setup: func(t *testing.T) ([]string, []string, []string) {
				return append(base(t), "--operator-key=short"), nil, []string{"--operator-key"}
			},
			wantCode: 2,
		},
		{
			name: "unknown flag",
			setup: func(t *testing.T) ([]string, []string, []string) {
				return append(base(t), "--no-such-flag"), nil, []string{"no-such-flag"}
			},
			wantCode: 2,
		},
		{
			name: "invalid env value",
			setup: func(t *testing.T) ([]string, []string, []string) {
				return base(t), []string{"SEATD_CLEANUP_INTERVAL=abc"}, []string{"SEATD_CLEANUP_INTERVAL"}
			},
			wantCode: 2,
		},
		{
			name: "data dir under a regular file",
			setup: func(t *testing.T) ([]string, []string, []string) {
				file := filepath.Join(t.TempDir(), "plain-file")
				require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
				dir := filepath.Join(file, "data")
				return append(base(t), "--data-dir", dir), nil, []string{dir}
			},
		},
		{
			name: "data dir in use by another seatd",
			setup: func(t *testing.T) ([]string, []string, []string) {
				first := start(t, options{})
				return append(base(t), "--data-dir", first.DataDir), nil, []string{first.DataDir, "in use"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, env, want := tc.setup(t)
			began := time.Now()
			code, out := runToExit(t, failTimeout, args, env)
			t.Logf("exit %d after %s: %s", code, time.Since(began).Round(time.Millisecond), strings.TrimSpace(out))
			if tc.wantCode != 0 {
				require.Equal(t, tc.wantCode, code, "exit code; output:\n%s", out)
			} else {
				require.NotEqual(t, 0, code, "seatd must fail; output:\n%s", out)
			}
			require.NotContains(t, out, "goroutine ", "no panic or stack trace")
			require.NotContains(t, out, "seatd serving")

			// Exactly one error line, "seatd: ...", and it is the last.
			var errLines []string
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, l := range lines {
				if strings.HasPrefix(l, "seatd: ") {
					errLines = append(errLines, l)
				}
			}
			require.Len(t, errLines, 1, "one error line; output:\n%s", out)
			require.Equal(t, errLines[0], lines[len(lines)-1], "the error line is the last")
			for _, w := range want {
				require.Contains(t, errLines[0], w, "the message names what is wrong")
			}
		})
	}
}

// TestEnvironment: every flag has an environment variable; a flag given on
// the command line wins over it.
func TestEnvironment(t *testing.T) {
	t.Parallel()

	t.Run("env only", func(t *testing.T) {
		t.Parallel()
		grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
		const key = "e2e-key-from-the-environment"
		dir := t.TempDir()
		p := start(t, options{rawArgs: true, dataDir: dir, operatorKey: key, env: []string{
			"SEATD_GRPC_ADDR=" + grpcAddr,
			"SEATD_HTTP_ADDR=" + httpAddr,
			"SEATD_OPERATOR_KEY=" + key,
			"SEATD_DATA_DIR=" + dir,
			"SEATD_DRAIN_DELAY=0s",
			"SEATD_LOG_FORMAT=json",
		}})
		ctx := testContext(t)
		require.Equal(t, grpcAddr, p.GRPCAddr, "SEATD_GRPC_ADDR")
		require.Equal(t, httpAddr, p.HTTPAddr, "SEATD_HTTP_ADDR")
		require.Contains(t, p.Output(), `"msg":"seatd serving"`, "SEATD_LOG_FORMAT=json")

		_, err := p.admin().ListLicenses(bearer(ctx, key), &seatdv1.ListLicensesRequest{})
		require.NoError(t, err, "SEATD_OPERATOR_KEY is the operator key")
		_, err = p.admin().ListLicenses(bearer(ctx, testOperatorKey), &seatdv1.ListLicensesRequest{})
		requireStatus(t, err, codes.Unauthenticated, "")
		p.do(t, "GET", "/readyz", "", nil).requireCode(t, 200)

		require.NotContains(t, p.Output(), "generated an operator key")
		_, err = os.Stat(filepath.Join(dir, "operator.key"))
		require.ErrorIs(t, err, os.ErrNotExist, "no key is generated when one is given")
		_, err = os.Stat(filepath.Join(dir, "seatd.db"))
		require.NoError(t, err, "SEATD_DATA_DIR holds the data")
		p.stopOK()
	})

	t.Run("flags win", func(t *testing.T) {
		t.Parallel()
		const envKey, flagKey = "e2e-key-from-the-environment", "e2e-key-from-the-flag-000"
		p := start(t, options{operatorKey: flagKey, env: []string{
			"SEATD_OPERATOR_KEY=" + envKey,
			"SEATD_GRPC_ADDR=" + "127.0.0.1:1", // overridden by --grpc-addr
			"SEATD_CLEANUP_INTERVAL=abc",       // overridden by --cleanup-interval
		}})
		ctx := testContext(t)
		_, err := p.admin().ListLicenses(bearer(ctx, flagKey), &seatdv1.ListLicensesRequest{})
		require.NoError(t, err, "--operator-key wins over SEATD_OPERATOR_KEY")
		_, err = p.admin().ListLicenses(bearer(ctx, envKey), &seatdv1.ListLicensesRequest{})
		requireStatus(t, err, codes.Unauthenticated, "")
		// SIGINT stops seatd as cleanly as SIGTERM.
		p.signal(syscall.SIGINT)
		require.Equal(t, 0, p.wait(), "exit code after SIGINT")
	})
}
