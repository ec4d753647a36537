package distributed

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server/storetest"
)

// TestCheckReadyFollowsTheServers: an instance that cannot reach
// PostgreSQL or Redis says so, and is ready again once it can (issue 24,
// item 14: /readyz stayed ready with PostgreSQL down).
func TestCheckReadyFollowsTheServers(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s := loc.openFaulty(t, nil)
	t.Cleanup(func() { _ = s.Close() })
	ready := func() string {
		reason, err := s.CheckReady(t.Context())
		require.Equal(t, reason == "", err == nil, "a reason goes with an error: %q %v", reason, err)
		return reason
	}
	require.Empty(t, ready())
	s.SetFault(storetest.FaultRecord, true)
	require.Equal(t, "PostgreSQL unreachable", ready())
	s.SetFault(storetest.FaultRecord, false)
	s.SetFault(storetest.FaultLive, true)
	require.Equal(t, "Redis unreachable", ready())
	s.SetFault(storetest.FaultLive, false)
	require.Empty(t, ready())
}
