package leader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testSchema makes a fresh schema (so each test elects on its own lock) and
// returns a URL whose search_path selects it.
func testSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SEATD_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err, "PostgreSQL is needed for this test: run scripts/services.sh (or set SEATD_TEST_POSTGRES_URL)")
	defer conn.Close(ctx)
	schema := fmt.Sprintf("seatd_leader_%d", rand.Uint32())
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

type counting struct {
	elected, demoted atomic.Int32
}

// newElector names its instance id+"-"+a random tag: tests run in parallel
// on one PostgreSQL, and a test that terminates "seatd-leader a" by
// application_name must not hit another test's "a".
func newElector(t *testing.T, pgURL, id string, c *counting) *Elector {
	e := New(Config{
		PostgresURL: pgURL, InstanceID: fmt.Sprintf("%s-%08x", id, rand.Uint32()),
		PingInterval: 200 * time.Millisecond, RetryInterval: 200 * time.Millisecond,
		OnElected: func(context.Context) { c.elected.Add(1) },
		OnDemoted: func() { c.demoted.Add(1) },
	})
	t.Cleanup(e.Stop)
	return e
}

func leaders(es ...*Elector) (n int, who string) {
	for _, e := range es {
		if e.IsLeader() {
			n++
			who = e.InstanceID()
		}
	}
	return n, who
}

func TestOneLeaderAndEveryoneAgreesWhoItIs(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	var ca, cb, cc counting
	a, b, c := newElector(t, pg, "a", &ca), newElector(t, pg, "b", &cb), newElector(t, pg, "c", &cc)
	for _, e := range []*Elector{a, b, c} {
		e.Start(context.Background())
	}
	require.Eventually(t, func() bool { n, _ := leaders(a, b, c); return n == 1 }, 10*time.Second, 20*time.Millisecond)
	// Stays at one for a while.
	for range 10 {
		n, _ := leaders(a, b, c)
		require.Equal(t, 1, n)
		time.Sleep(50 * time.Millisecond)
	}
	_, who := leaders(a, b, c)
	for _, e := range []*Elector{a, b, c} {
		id, err := e.LeaderID(context.Background())
		require.NoError(t, err)
		require.Equal(t, who, id, "instance %s sees another leader", e.InstanceID())
	}
}

func TestStopHandsOverAtOnce(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	var ca, cb counting
	a, b := newElector(t, pg, "a", &ca), newElector(t, pg, "b", &cb)
	a.Start(context.Background())
	require.Eventually(t, a.IsLeader, 10*time.Second, 20*time.Millisecond)
	b.Start(context.Background())
	a.Stop()
	require.False(t, a.IsLeader())
	require.EqualValues(t, 1, ca.demoted.Load(), "stopping the leader demotes it")
	require.Eventually(t, b.IsLeader, 5*time.Second, 20*time.Millisecond)
	a.Stop() // second stop is a no-op
}

func TestTerminatedLockConnectionStepsDownAndOneLeadsAgain(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	var ca, cb counting
	a, b := newElector(t, pg, "a", &ca), newElector(t, pg, "b", &cb)
	a.Start(context.Background())
	require.Eventually(t, a.IsLeader, 10*time.Second, 20*time.Millisecond)
	b.Start(context.Background())

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	require.NoError(t, err)
	defer admin.Close(ctx)
	var killed bool
	require.NoError(t, admin.QueryRow(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
		applicationPrefix+a.InstanceID()).Scan(&killed))
	require.True(t, killed)

	// The old leader notices within a ping interval (plus slack) and steps
	// down; then one instance leads again and both agree which. (a, back on
	// a new connection, may win the lock again: both campaign.)
	require.Eventually(t, func() bool { return ca.demoted.Load() >= 1 }, 2*time.Second, 10*time.Millisecond,
		"the leader did not step down after its lock connection was terminated")
	require.Eventually(t, func() bool { n, _ := leaders(a, b); return n == 1 }, 5*time.Second, 20*time.Millisecond)
	_, who := leaders(a, b)
	for _, e := range []*Elector{a, b} {
		id, err := e.LeaderID(ctx)
		require.NoError(t, err)
		require.Equal(t, who, id, "instance %s sees another leader", e.InstanceID())
	}
}

func TestElectedContextEndsOnDemotion(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	ended := make(chan struct{})
	e := New(Config{PostgresURL: pg, InstanceID: "solo", PingInterval: 100 * time.Millisecond,
		OnElected: func(ctx context.Context) { go func() { <-ctx.Done(); close(ended) }() }})
	e.Start(context.Background())
	require.Eventually(t, e.IsLeader, 10*time.Second, 20*time.Millisecond)
	e.Stop()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's context did not end when it stepped down")
	}
}
