package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEndError(t *testing.T) {
	t.Parallel()
	require.Equal(t, ErrLeaseReleased, LeaseReleased.EndError())
	require.Equal(t, ErrLeaseRevoked, LeaseRevoked.EndError())
	require.Equal(t, ErrLeaseExpired, LeaseExpired.EndError())
	require.Equal(t, ErrLeaseExpired, LeaseActive.EndError(), "an active lease without a seat counts as expired")
}
