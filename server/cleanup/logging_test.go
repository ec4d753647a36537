package cleanup

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// logRecords keeps what a logger was given.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// levelOf returns the level of the first record with msg, or false.
func (l *logRecords) levelOf(msg string) (slog.Level, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Message == msg {
			return r.Level, true
		}
	}
	return 0, false
}

// countingStore answers ActiveLeases with n or err; nothing is ever due.
type countingStore struct {
	n   int64
	err error
}

func (c countingStore) DueLeases(context.Context, *server.LeaseRef, int) ([]server.LeaseRef, error) {
	return nil, c.err
}
func (c countingStore) ExpireLeases(context.Context, []server.LeaseRef) ([]server.Lease, error) {
	return nil, c.err
}
func (c countingStore) ZombieReport(context.Context, server.ZombieQuery) (server.ZombieReport, error) {
	return server.ZombieReport{}, c.err
}
func (c countingStore) ActiveLeases(context.Context) (int64, error) { return c.n, c.err }

// TestPassLogsAtTheLevelOfItsResult: an operator's log shows a failed pass
// as a warning and a good one as information.
func TestPassLogsAtTheLevelOfItsResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		store countingStore
		want  slog.Level
	}{
		{countingStore{}, slog.LevelInfo},
		{countingStore{err: errors.New("down")}, slog.LevelWarn},
	} {
		logs := &logRecords{}
		NewCleaner(tc.store, Config{}, slog.New(logs), nil).Pass(t.Context(), TriggerManual)
		level, ok := logs.levelOf("cleanup pass")
		require.True(t, ok)
		require.Equal(t, tc.want, level, "store error: %v", tc.store.err)
	}
}

// TestCountActiveWarnsOnlyWhenTheStoreFails: counting fails -> a warning;
// a count cut short because the process is stopping is not worth one.
func TestCountActiveWarnsOnlyWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	logs := &logRecords{}
	c := NewCleaner(countingStore{err: errors.New("down")}, Config{}, slog.New(logs), nil)
	c.CountActive(t.Context())
	_, ok := logs.levelOf("cleanup: counting active leases failed")
	require.True(t, ok, "a failed count is logged")

	logs = &logRecords{}
	c = NewCleaner(countingStore{err: context.Canceled}, Config{}, slog.New(logs), nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c.CountActive(ctx)
	_, ok = logs.levelOf("cleanup: counting active leases failed")
	require.False(t, ok, "a count cut short by shutdown is not logged")
}
