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
//
// Its pings are frequent, so that a lost lock connection is noticed soon,
// but each may take as long as it needs (pingTimeout): a ping slowed by a
// busy machine must not step a leader down while a test counts leaders.
// TestPingTimeoutStepsDownAStalledLeader tests the timeout on its own.
func newElector(t *testing.T, pgURL, id string, c *counting) *Elector {
	e := New(Config{
		PostgresURL: pgURL, InstanceID: fmt.Sprintf("%s-%08x", id, rand.Uint32()),
		PingInterval: 200 * time.Millisecond, PingTimeout: pingTimeout, RetryInterval: 200 * time.Millisecond,
		OnElected: func(context.Context) { c.elected.Add(1) },
		OnDemoted: func() { c.demoted.Add(1) },
	})
	t.Cleanup(e.Stop)
	return e
}

// pingTimeout is the tests' ping timeout: far beyond any ping on a loaded
// machine, and never reached by a ping that fails (a terminated connection
// fails at once).
const pingTimeout = time.Minute

// waitLong bounds the waits for something that happens within a few ping
// or retry intervals; only a stuck elector reaches it.
const waitLong = 30 * time.Second

// terminate ends the lock connection of e's instance from PostgreSQL's
// side, as pg_terminate_backend by an operator or a failover would.
func terminate(t *testing.T, pg string, e *Elector) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	require.NoError(t, err)
	defer func() { _ = admin.Close(ctx) }()
	var killed bool
	require.NoError(t, admin.QueryRow(ctx,
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
		applicationPrefix+e.InstanceID()).Scan(&killed))
	require.True(t, killed)
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
	elections := func() int32 { return ca.elected.Load() + cb.elected.Load() + cc.elected.Load() }
	// (OnElected runs just after IsLeader turns true: wait for both.)
	require.Eventually(t, func() bool { n, _ := leaders(a, b, c); return n == 1 && elections() == 1 }, waitLong, 20*time.Millisecond)
	// Stays at one while the followers campaign again and again.
	before := elections()
	for range 10 {
		n, _ := leaders(a, b, c)
		require.Equal(t, 1, n)
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, before, elections(), "leadership changed hands with nothing failing")
	_, who := leaders(a, b, c)
	for _, e := range []*Elector{a, b, c} {
		id, err := e.LeaderID(context.Background())
		require.NoError(t, err)
		require.Equal(t, who, id, "instance %s sees another leader", e.InstanceID())
		// A follower that finds the lock held reached it: not failing.
		require.Zero(t, e.Health().Failures, "instance %s: %v", e.InstanceID(), e.Health().Err)
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
	require.Eventually(t, a.IsLeader, waitLong, 20*time.Millisecond)
	b.Start(context.Background())

	terminate(t, pg, a)

	// The old leader notices at its next ping and steps down; then one
	// instance leads again and both agree which. (a, back on a new
	// connection, may win the lock again: both campaign.)
	require.Eventually(t, func() bool { return ca.demoted.Load() >= 1 }, waitLong, 10*time.Millisecond,
		"the leader did not step down after its lock connection was terminated")
	require.Eventually(t, func() bool { n, _ := leaders(a, b); return n == 1 }, waitLong, 20*time.Millisecond)
	_, who := leaders(a, b)
	ctx := context.Background()
	for _, e := range []*Elector{a, b} {
		id, err := e.LeaderID(ctx)
		require.NoError(t, err)
		require.Equal(t, who, id, "instance %s sees another leader", e.InstanceID())
	}
}

// TestElectedContextEndsOnDemotion: the context OnElected gets is the
// leadership's own: it ends when the instance loses the lock, while the
// elector goes on campaigning (not only when it is stopped), and it has
// ended by the time OnDemoted runs, so that cleanup started under it stops.
func TestElectedContextEndsOnDemotion(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	elected := make(chan context.Context, 10)
	demoted := make(chan bool, 10) // whether the elected context had ended
	var current context.Context
	e := New(Config{PostgresURL: pg, InstanceID: fmt.Sprintf("solo-%08x", rand.Uint32()),
		PingInterval: 100 * time.Millisecond, PingTimeout: pingTimeout, RetryInterval: 100 * time.Millisecond,
		OnElected: func(ctx context.Context) { current = ctx; elected <- ctx },
		OnDemoted: func() { demoted <- current.Err() != nil },
	})
	t.Cleanup(e.Stop)
	e.Start(context.Background())
	var first context.Context
	select {
	case first = <-elected:
	case <-time.After(waitLong):
		t.Fatal("never elected")
	}

	terminate(t, pg, e) // demoted by losing the lock's connection, not by Stop
	select {
	case ended := <-demoted:
		require.True(t, ended, "OnDemoted ran while the leadership's context was still live")
	case <-time.After(waitLong):
		t.Fatal("the leader did not step down after its lock connection was terminated")
	}
	require.ErrorIs(t, first.Err(), context.Canceled, "the leadership's context ends with it")
	require.True(t, e.run.Running(), "the elector campaigns on")

	// It leads again (alone), under a new context that is live.
	select {
	case again := <-elected:
		require.NotSame(t, first, again)
		require.NoError(t, again.Err())
	case <-time.After(waitLong):
		t.Fatal("not elected again after a lost lock")
	}
	e.Stop()
	require.True(t, <-demoted, "stopping ends the leadership's context before OnDemoted")
}

// TestPingTimeoutStepsDownAStalledLeader: a leader whose lock connection
// stops answering (a network that drops packets, not a closed socket)
// steps down when a ping takes longer than PingTimeout, and, while it
// cannot reach PostgreSQL, its Health says so after FailingAfter
// campaigns; once the network is back it reaches the lock and leads
// again. The stall is a proxy that stops forwarding: nothing here depends
// on how fast the machine is.
func TestPingTimeoutStepsDownAStalledLeader(t *testing.T) {
	t.Parallel()
	pg := testSchema(t)
	proxy := newStallingProxy(t, pg)
	var c counting
	var lastHealth atomic.Pointer[Health]
	e := New(Config{
		PostgresURL: withParams(t, proxy.url, "connect_timeout", "1"), InstanceID: fmt.Sprintf("stalled-%08x", rand.Uint32()),
		PingInterval: 50 * time.Millisecond, PingTimeout: 300 * time.Millisecond, RetryInterval: 50 * time.Millisecond,
		FailingAfter: 2,
		OnElected:    func(context.Context) { c.elected.Add(1) },
		OnDemoted:    func() { c.demoted.Add(1) },
		OnHealth:     func(h Health) { lastHealth.Store(&h) },
	})
	t.Cleanup(e.Stop)
	e.Start(context.Background())
	require.Eventually(t, e.IsLeader, waitLong, 10*time.Millisecond)
	require.False(t, e.Health().Failing)

	proxy.stall()
	require.Eventually(t, func() bool { return !e.IsLeader() }, waitLong, 10*time.Millisecond,
		"a ping that never answers must step the leader down after PingTimeout")
	require.GreaterOrEqual(t, c.demoted.Load(), int32(1))
	// (OnHealth runs just after Health changes: wait for both.)
	require.Eventually(t, func() bool { h := lastHealth.Load(); return e.Health().Failing && h != nil && h.Failing }, waitLong, 10*time.Millisecond,
		"campaigns that cannot reach PostgreSQL must make the election failing, and OnHealth told so")
	h := e.Health()
	require.GreaterOrEqual(t, h.Failures, 2)
	require.Error(t, h.Err)
	require.False(t, h.Since.IsZero())
	require.False(t, e.IsLeader())

	proxy.resume()
	require.Eventually(t, e.IsLeader, waitLong, 10*time.Millisecond, "leads again once PostgreSQL answers")
	require.Zero(t, e.Health().Failures)
	require.False(t, lastHealth.Load().Failing, "OnHealth was told of the recovery")
}
