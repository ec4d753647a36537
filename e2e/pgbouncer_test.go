package e2e

import (
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
