package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestDistributedCleanupLeaderFailover: three instances agree on one
// cleanup leader; when it is killed (kill -9) another takes over and cleans
// a zombie that expired after the kill; when the leader's lock connection
// is terminated in PostgreSQL it steps down (at its next ping; the time is
// logged, not judged), and the instances settle on exactly one leader again.
func TestDistributedCleanupLeaderFailover(t *testing.T) {
	t.Parallel()
	const (
		interval     = 2 * time.Second
		pingInterval = 500 * time.Millisecond
	)
	b := sharedBackend(t, "")
	procs := b.startCluster(t, 3, "leader",
		"--cleanup-interval", interval.String(),
		"--leader-ping-interval", pingInterval.String(),
		"--leader-retry-interval", "500ms")
	ctx := t.Context()

	first := waitForOneLeader(t, procs, eventTimeout)
	oldLeader := procs[first]
	oldID := mustStatus(t, oldLeader).GetInstanceId()
	var followers []*proc
	for i, p := range procs {
		if i != first {
			followers = append(followers, p)
		}
	}
	t.Logf("first leader: %s", oldID)

	oldLeader.kill9()
	killedAt := time.Now()

	// A zombie: a lease with a 1s TTL that nobody heartbeats, acquired after
	// the leader is gone, so that it expires after the kill however slow
	// the machine.
	lic := newLicense(t, followers[0], 5, time.Second, "failover")
	zombie, err := followers[0].acquire(ctx, lic.GetKey(), "zombie")
	require.NoError(t, err)
	deadline := zombie.GetLease().GetExpiresAt().AsTime()

	second := waitForOneLeader(t, followers, eventTimeout)
	newLeader := followers[second]
	newID := mustStatus(t, newLeader).GetInstanceId()
	require.NotEqual(t, oldID, newID)
	t.Logf("new leader %s agreed on %s after the kill", newID, time.Since(killedAt).Round(time.Millisecond))

	// The new leader's scheduled passes clean the zombie (one interval
	// after its deadline, on a machine that keeps up: logged, not judged).
	var cleaned *seatdv1.Lease
	eventually(t, time.Until(deadline)+interval+30*time.Second, "the new leader's scheduled passes clean the zombie", func() bool {
		for _, l := range newLeader.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_EXPIRED) {
			if l.GetId() == zombie.GetLease().GetId() && l.GetEndedAt() != nil {
				cleaned = l
			}
		}
		return cleaned != nil
	})
	t.Logf("zombie cleaned %s after its deadline (cleanup interval %s)", cleaned.GetEndedAt().AsTime().Sub(deadline).Round(time.Millisecond), interval)
	st := mustStatus(t, newLeader)
	require.NotNil(t, st.GetLastRun(), "the new leader ran a pass")
	require.Equal(t, "schedule", st.GetLastRun().GetTrigger())
	require.NotNil(t, st.GetNextRunAt(), "the new leader has a next run")
	require.Equal(t, interval, st.GetInterval().AsDuration())
	recs := leaseRecords(t, b.db(t), lic.GetId())
	require.Equal(t, 1, recs[zombie.GetLease().GetId()].CleanupEvents, "one cleanup event")
	require.Equal(t, 1, recs[zombie.GetLease().GetId()].UsageEvents, "one usage event")
	require.Equal(t, 1.0, newLeader.metricSum(t, "seatd_leader"))

	// Cut the leader's lock connection from the PostgreSQL side.
	pg, _ := sharedServers(t)
	var terminated int
	require.NoError(t, pg.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1) t`, "seatd-leader "+newID).Scan(&terminated))
	require.Equal(t, 1, terminated, "one lock connection named %q", "seatd-leader "+newID)
	cutAt := time.Now()
	eventually(t, eventTimeout, "the leader steps down after its lock connection was terminated", func() bool {
		st, err := newLeader.cleanupStatus(ctx)
		if err == nil && !st.GetIsLeader() {
			return true
		}
		// Also accept the step-down seen in the log (the instance may
		// have re-acquired the free lock between two polls).
		return strings.Contains(newLeader.Output(), "stepped down") && strings.Contains(newLeader.Output(), "lock connection failed")
	})
	t.Logf("leader stepped down %s after pg_terminate_backend (ping interval %s)", time.Since(cutAt).Round(time.Millisecond), pingInterval)

	settled := waitForOneLeader(t, followers, eventTimeout)
	t.Logf("after the cut, %s leads", mustStatus(t, followers[settled]).GetInstanceId())
	var leaders float64
	for _, p := range followers {
		leaders += p.metricSum(t, "seatd_leader")
	}
	require.Equal(t, 1.0, leaders, "seatd_leader summed over the live instances")
	stopAllOK(t, procs...)
}

func mustStatus(t testing.TB, p *proc) *seatdv1.GetCleanupStatusResponse {
	t.Helper()
	st, err := p.cleanupStatus(t.Context())
	require.NoError(t, err)
	return st
}
