package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/pgbouncertest"
)

// TestDistributedThroughSessionPgBouncer: the README allows a
// session-pooling PgBouncer between seatd and PostgreSQL. Through one (a
// real pgbouncer, started here), instances migrate, serve, and elect a
// cleanup leader that every instance names; none reports the election
// failing. (The elector once sent keepalive startup parameters, which
// PgBouncer refuses: instances served and nobody ever led.)
func TestDistributedThroughSessionPgBouncer(t *testing.T) {
	t.Parallel()
	b := sharedBackend(t, "")
	bouncer := pgbouncertest.Start(t, sharedPostgresURL(), 12)
	b.PGURL = bouncer.URL
	procs := b.startCluster(t, 2, "bouncer", "--pg-max-conns", "4",
		"--leader-ping-interval", "500ms", "--leader-retry-interval", "500ms")
	waitForOneLeader(t, procs, time.Minute)

	lic := newLicense(t, procs[0], 1, time.Minute, "through-bouncer")
	_, err := procs[1].acquire(t.Context(), lic.GetKey(), "fp")
	require.NoError(t, err, "a seat through PgBouncer")
	var leaders float64
	for _, p := range procs {
		r := p.do(t, "GET", "/readyz", "", nil).requireCode(t, 200)
		require.Equal(t, "ready\n", string(r.Raw), "no degraded line: the election reaches its lock")
		require.Zero(t, p.metricSum(t, "seatd_leader_election_failing"))
		leaders += p.metricSum(t, "seatd_leader")
	}
	require.Equal(t, 1.0, leaders, "one leader")
	stopAllOK(t, procs...)
	if t.Failed() {
		t.Logf("PgBouncer's log:\n%s", bouncer.Log())
	}
}

// TestDistributedElectionFailingIsVisible: an instance that cannot reach
// the leader lock (here: its database stops accepting new connections,
// while the store's pool keeps the ones it has) says so after
// --leader-failing-after tries: /readyz answers ready with a degraded
// line (503 with --leader-failing-unready), seatd_leader_election_failing
// is 1 and the tries are counted; once the lock is reachable again it
// leads again and all of that clears.
func TestDistributedElectionFailingIsVisible(t *testing.T) {
	t.Parallel()
	b := sharedBackend(t, "")
	pg, _ := sharedServers(t)
	db := "e2e_elect_" + randomHex(4)
	_, err := pg.Exec(t.Context(), "CREATE DATABASE "+db)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = pg.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	})
	u, err := url.Parse(sharedPostgresURL())
	require.NoError(t, err)
	u.Path = "/" + db
	b.PGURL = u.String()
	allow := func(yes bool) {
		_, err := pg.Exec(t.Context(), fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", db, yes))
		require.NoError(t, err)
	}

	common := []string{"--pg-min-conns", "4", "--pg-max-conns", "4",
		"--leader-ping-interval", "200ms", "--leader-retry-interval", "200ms", "--leader-failing-after", "2"}
	base := "elect-" + randomHex(3)
	ready := b.startSeatd(t, base+"-ready", common...)
	unready := b.startSeatd(t, base+"-unready", append(common, "--leader-failing-unready")...)
	procs := []*proc{ready, unready}
	waitForOneLeader(t, procs, time.Minute)

	allow(false)
	// The leader's lock connection ends; so does every try after.
	_, err = pg.Exec(t.Context(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'seatd-leader %'", db)
	require.NoError(t, err)
	waitUntil(t, time.Minute, "both instances report the election failing", func() (bool, string) {
		r1 := ready.do(t, "GET", "/readyz", "", nil)
		r2 := unready.do(t, "GET", "/readyz", "", nil)
		saw := fmt.Sprintf("%d %q / %d %q", r1.Code, r1.Raw, r2.Code, r2.Raw)
		return r1.Code == http.StatusOK && strings.HasPrefix(string(r1.Raw), "ready\ndegraded: no cleanup leader can be elected from this instance") &&
			r2.Code == http.StatusServiceUnavailable && strings.HasPrefix(string(r2.Raw), "not ready: no cleanup leader can be elected from this instance"), saw
	})
	for _, p := range procs {
		require.Equal(t, 1.0, p.metricSum(t, "seatd_leader_election_failing"))
		require.GreaterOrEqual(t, p.metricSum(t, "seatd_leader_election_errors_total"), 2.0)
		require.Zero(t, p.metricSum(t, "seatd_leader"))
	}

	allow(true)
	waitForOneLeader(t, procs, time.Minute)
	waitUntil(t, time.Minute, "both ready again, plainly", func() (bool, string) {
		r1 := ready.do(t, "GET", "/readyz", "", nil)
		r2 := unready.do(t, "GET", "/readyz", "", nil)
		return string(r1.Raw) == "ready\n" && string(r2.Raw) == "ready\n", fmt.Sprintf("%q / %q", r1.Raw, r2.Raw)
	})
	for _, p := range procs {
		require.Zero(t, p.metricSum(t, "seatd_leader_election_failing"))
	}
	stopAllOK(t, procs...)
}
