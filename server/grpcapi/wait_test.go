package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestUnconfirmedWaiterGrant: a waiter's grant is revoked after the hold
// window only when the store shows it exactly as granted. A store that
// lost recent heartbeats (Redis lost, or a restart after a crash) gives
// the write-behind interval back: the deadline moved without a heartbeat,
// and the seat stays with the waiter, who may well have confirmed it.
func TestUnconfirmedWaiterGrant(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	granted := server.Lease{LastHeartbeatAt: t0, ExpiresAt: t0.Add(time.Minute)}
	for name, c := range map[string]struct {
		hb, deadline time.Time
		want         bool
	}{
		"as granted":               {t0, t0.Add(time.Minute), true},
		"heartbeated":              {t0.Add(time.Second), t0.Add(time.Minute + time.Second), false},
		"deadline given back only": {t0, t0.Add(time.Minute + 11*time.Second), false},
	} {
		now := server.Lease{LastHeartbeatAt: c.hb, ExpiresAt: c.deadline}
		require.Equal(t, c.want, unconfirmed(granted, now), name)
	}
}
