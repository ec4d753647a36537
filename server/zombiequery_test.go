package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestZombieQueryWithDefaults(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	q, err := ZombieQuery{TenantID: "t", Start: start}.WithDefaults()
	require.NoError(t, err)
	require.Equal(t, ZombieQuery{TenantID: "t", Start: start, TopLimit: DefaultZombieTopLimit}, q, "an open end; the default top limit")
	q, err = ZombieQuery{Start: start, End: start, TopLimit: 3}.WithDefaults()
	require.NoError(t, err)
	require.Equal(t, 3, q.TopLimit, "an empty window is valid; a given limit is kept")
	_, err = ZombieQuery{Start: start, End: start.Add(-time.Second)}.WithDefaults()
	require.Equal(t, EINVALID, ErrorCode(err))
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "end", e.Field)
}
