package leader

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/pgbouncertest"
)

// TestLeaderElectedThroughSessionPgBouncer: the README allows a
// session-pooling PgBouncer in front of PostgreSQL. PgBouncer refuses
// startup parameters it does not know (FATAL: unsupported startup
// parameter), so the elector must send none beyond what PgBouncer passes
// on: a leader is elected through it, and every instance agrees which.
func TestLeaderElectedThroughSessionPgBouncer(t *testing.T) {
	t.Parallel()
	base := os.Getenv("SEATD_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	bouncer := pgbouncertest.Start(t, base, 5)
	var ca, cb counting
	a, b := newElector(t, bouncer.URL, "a", &ca), newElector(t, bouncer.URL, "b", &cb)
	a.Start(context.Background())
	b.Start(context.Background())
	if !waitFor(waitLong, func() bool { n, _ := leaders(a, b); return n == 1 }) {
		t.Fatalf("no leader elected through PgBouncer: %v; its log:\n%s", a.Health().Err, bouncer.Log())
	}
	_, who := leaders(a, b)
	for _, e := range []*Elector{a, b} {
		id, err := e.LeaderID(t.Context())
		require.NoError(t, err)
		require.Equal(t, who, id, "instance %s sees another leader", e.InstanceID())
		require.Zero(t, e.Health().Failures, "instance %s could not reach the lock: %v", e.InstanceID(), e.Health().Err)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
