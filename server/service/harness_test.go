package service

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/notify"
	"github.com/seatd/seatd/server/waitqueue"
)

// clock is a time that moves only when a test moves it. The store and the
// service both read it, so that "later" is the test's to decide.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a Service over the embedded store (in t.TempDir()) with the memory
// wait queue and the local notify hub, as one node runs it.
type env struct {
	svc     *Service
	store   server.Store
	clock   *clock
	metrics *metrics.Metrics
}

// newEnv starts an env; configure changes its Config (short holds and
// polls, quotas).
func newEnv(t testing.TB, configure ...func(*Config)) *env {
	t.Helper()
	clk := &clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	log := slog.New(slog.DiscardHandler)
	st, err := embedded.Open(t.TempDir(), embedded.Options{Clock: clk.Now, Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.CreateTenant(context.Background(), server.Tenant{ID: server.DefaultTenantID, Name: "Default", CreatedAt: clk.Now()})
	require.NoError(t, err)
	m := metrics.Discard()
	hub := notify.NewHub()
	cfg := Config{
		Store: st, Cleaner: cleanup.NewCleaner(st, cleanup.Config{}, log, m), Leadership: cleanup.Solo{ID: "test"},
		Logger: log, Metrics: m, Now: clk.Now,
		WaitQueue: waitqueue.NewMemory(DefaultWaitQueueLength), Hub: hub, Revocations: notify.Local{Hub: hub},
		WaitPoll: 5 * time.Millisecond, WaitHold: time.Hour,
	}
	for _, c := range configure {
		c(&cfg)
	}
	svc := New(cfg)
	// Runs before the store closes: no hold outlives the test.
	t.Cleanup(func() {
		svc.BeginShutdown()
		svc.holds.Wait()
	})
	return &env{svc: svc, store: st, clock: clk, metrics: m}
}

// license creates a license of the default tenant.
func (e *env) license(t testing.TB, seats int64) server.License {
	t.Helper()
	ttl := time.Minute
	l, err := e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{Name: "test", Seats: seats, LeaseTTL: &ttl})
	require.NoError(t, err)
	return l
}

func (e *env) acquire(t testing.TB, key, fingerprint string) Grant {
	t.Helper()
	g, err := e.svc.Acquire(t.Context(), SeatRequest{LicenseKey: key, Fingerprint: fingerprint})
	require.NoError(t, err)
	return g
}

// audit returns a tenant's audit log.
func (e *env) audit(t *testing.T, tenant string) []server.AuditEntry {
	t.Helper()
	entries, _, err := e.store.AuditLog(t.Context(), tenant, server.Page{Size: server.MaxPageSize})
	require.NoError(t, err)
	return entries
}

// auditOf returns the one entry of a tenant's audit log with that action
// on that resource.
func (e *env) auditOf(t *testing.T, tenant, action, resourceID string) server.AuditEntry {
	t.Helper()
	var found []server.AuditEntry
	for _, entry := range e.audit(t, tenant) {
		if entry.Action == action && entry.ResourceID == resourceID {
			found = append(found, entry)
		}
	}
	require.Len(t, found, 1, "%s of %s", action, resourceID)
	return found[0]
}

// within fails the test unless ch is ready within a generous deadline.
// eventTimeout bounds a wait for something that must happen: long, so that
// only a lost event fails it, never a busy machine (a drain of 60 waiters
// once took over 10 s at load 25).
const eventTimeout = 2 * time.Minute

func within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(eventTimeout):
		t.Fatalf("timed out after %s waiting for %s", eventTimeout, what)
		var zero T
		return zero
	}
}
