package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server/leader"
	"github.com/seatd/seatd/server/metrics"
)

// TestElectionFailingIsVisible: while the elector cannot reach the lock,
// /readyz names the state (without the error, which may name hosts: the
// log has it), ready unless --leader-failing-unready; the metrics count
// each try that could not reach it and show the state; a recovery clears
// both.
func TestElectionFailingIsVisible(t *testing.T) {
	t.Parallel()
	problem, unready := electionProblem(leader.Health{}, true)
	require.Empty(t, problem, "a follower or a leader has no problem")
	require.False(t, unready)

	since := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	h := leader.Health{Failures: 3, Failing: true, Since: since, Err: errors.New("dial tcp db.internal:5432: refused")}
	problem, unready = electionProblem(h, false)
	require.Contains(t, problem, "no cleanup leader can be elected from this instance")
	require.Contains(t, problem, "3 tries since 2026-11-28T06:00:00Z")
	require.NotContains(t, problem, "db.internal", "no internals on an unauthenticated endpoint")
	require.False(t, unready, "ready by default")
	_, unready = electionProblem(h, true)
	require.True(t, unready, "--leader-failing-unready")

	m := metrics.New(prometheus.NewRegistry())
	electionMetrics(m, leader.Health{Failures: 1, Err: h.Err})
	require.Zero(t, value(t, m.LeaderElectionFailing))
	electionMetrics(m, leader.Health{Failures: 2, Err: h.Err})
	electionMetrics(m, h)
	require.Equal(t, 1.0, value(t, m.LeaderElectionFailing))
	require.Equal(t, 3.0, value(t, m.LeaderElectionErrors))
	electionMetrics(m, leader.Health{}) // reached again
	require.Zero(t, value(t, m.LeaderElectionFailing))
	require.Equal(t, 3.0, value(t, m.LeaderElectionErrors), "a recovery is no error")
}

func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetGauge().GetValue() + m.GetCounter().GetValue()
}
