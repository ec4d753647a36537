package daemon

import (
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

type fakeFDLimits struct {
	soft, hard uint64
	raiseErr   error
}

func (f *fakeFDLimits) get() (uint64, uint64, error) { return f.soft, f.hard, nil }

func (f *fakeFDLimits) raise(soft uint64) error {
	if f.raiseErr != nil {
		return f.raiseErr
	}
	f.soft = soft
	return nil
}

// TestFileLimitFitsBothListeners: two listeners' --max-connections and the
// reserve must fit RLIMIT_NOFILE (issue 24, item 12: 2 × 10000 at a limit
// of 20000 left no descriptor for anything else). The soft limit is raised
// when the hard one allows; a default is lowered; a given value refuses.
func TestFileLimitFitsBothListeners(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reserve := uint64(fdReserve)

	t.Run("raised", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 1024, hard: 1 << 20}
		cfg := Config{MaxConnections: 10000}
		require.NoError(t, fitFileLimit(&cfg, lim, log))
		require.Equal(t, 10000, cfg.MaxConnections)
		require.Equal(t, 20000+reserve, lim.soft)
	})
	t.Run("default lowered", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 20000, hard: 20000}
		cfg := Config{MaxConnections: 10000}
		require.NoError(t, fitFileLimit(&cfg, lim, log))
		require.Equal(t, int(20000-reserve)/2, cfg.MaxConnections)
		require.LessOrEqual(t, 2*uint64(cfg.MaxConnections)+reserve, lim.hard)
	})
	t.Run("given refused", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 20000, hard: 20000}
		cfg := Config{MaxConnections: 10000, MaxConnectionsGiven: true}
		err := fitFileLimit(&cfg, lim, log)
		require.ErrorContains(t, err, "--max-connections 10000 needs 21024 file descriptors")
		require.ErrorContains(t, err, "at most 9488")
	})
	t.Run("pool counted", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 20000, hard: 20000}
		cfg := Config{MaxConnections: 9488, MaxConnectionsGiven: true, PGMaxConns: 100}
		require.ErrorContains(t, fitFileLimit(&cfg, lim, log), "+ 1124 for the store and pools")
	})
	t.Run("fits", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 30000, hard: 30000, raiseErr: errors.New("not called")}
		cfg := Config{MaxConnections: 10000, MaxConnectionsGiven: true}
		require.NoError(t, fitFileLimit(&cfg, lim, log))
	})
	t.Run("raise refused", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 1024, hard: 1 << 20, raiseErr: errors.New("operation not permitted")}
		cfg := Config{MaxConnections: 10000}
		require.ErrorContains(t, fitFileLimit(&cfg, lim, log), "cannot raise the file descriptor limit")
	})
	t.Run("nothing fits", func(t *testing.T) {
		lim := &fakeFDLimits{soft: 512, hard: 512}
		cfg := Config{MaxConnections: 10000}
		require.ErrorContains(t, fitFileLimit(&cfg, lim, log), "over the process limit of 512")
	})
	// A limit of 1024 (ulimit -n 1024) leaves no connection beside the
	// reserve: the advice was "lower --max-connections to at most 0".
	t.Run("nothing fits says how high to raise", func(t *testing.T) {
		for _, given := range []bool{false, true} {
			lim := &fakeFDLimits{soft: 1024, hard: 1024}
			cfg := Config{MaxConnections: 10000, MaxConnectionsGiven: given}
			err := fitFileLimit(&cfg, lim, log)
			require.ErrorContains(t, err, "needs at least 1026 file descriptors")
			require.ErrorContains(t, err, "raise the limit to 1026 or more, 21024 for --max-connections 10000")
			require.NotContains(t, err.Error(), "at most 0")
		}
	})
}

// TestMaxConnectionsGiven: only a value the operator gave is kept as is.
func TestMaxConnectionsGiven(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	cfg, err := ParseConfig(nil, none, io.Discard)
	require.NoError(t, err)
	require.False(t, cfg.MaxConnectionsGiven)
	cfg, err = ParseConfig([]string{"--max-connections", "500"}, none, io.Discard)
	require.NoError(t, err)
	require.True(t, cfg.MaxConnectionsGiven)
	cfg, err = ParseConfig(nil, func(k string) string {
		if k == "SEATD_MAX_CONNECTIONS" {
			return "500"
		}
		return ""
	}, io.Discard)
	require.NoError(t, err)
	require.True(t, cfg.MaxConnectionsGiven)
	for _, bad := range [][]string{
		{"--max-connections-per-address", "0"}, {"--grpc-max-header-bytes", "100"},
		{"--max-streams-per-address", "0"}, {"--stream-idle-timeout", "10ms"},
	} {
		_, err := ParseConfig(bad, none, io.Discard)
		require.ErrorContains(t, err, bad[0], "%v", bad)
	}
}
