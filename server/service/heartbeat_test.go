package service

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/notify"
)

// published records what a Publisher was told, then delivers it locally.
type published struct {
	notify.Local
	mu  sync.Mutex
	ids []string
}

func (p *published) Revoked(ctx context.Context, leaseID string) {
	p.mu.Lock()
	p.ids = append(p.ids, leaseID)
	p.mu.Unlock()
	p.Local.Revoked(ctx, leaseID)
}

func TestHeartbeatRenewsTheLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.acquire(t, e.license(t, 1).Key, "laptop")
	e.clock.Advance(10 * time.Second)
	l, err := e.svc.Heartbeat(t.Context(), g.Lease.ID, g.Token)
	require.NoError(t, err)
	require.Equal(t, e.clock.Now(), l.LastHeartbeatAt)
	require.Equal(t, e.clock.Now().Add(time.Minute), l.ExpiresAt)

	_, err = e.svc.Heartbeat(t.Context(), g.Lease.ID, "slt_wrong")
	require.Equal(t, server.ReasonLeaseTokenWrong, server.ErrorReason(err))
}

func TestRevokeReachesTheKeepAlive(t *testing.T) {
	t.Parallel()
	pub := &published{}
	e := newEnv(t, func(c *Config) {
		pub.Local = notify.Local{Hub: c.Hub}
		c.Revocations = pub
	})
	g := e.acquire(t, e.license(t, 1).Key, "laptop")
	ka := e.svc.KeepAlive()
	defer ka.Close()

	_, err := ka.Beat(t.Context(), g.Lease.ID, "slt_wrong")
	require.Error(t, err)
	require.Nil(t, ka.Revoked(), "a caller without the token hears nothing of the lease")
	_, err = ka.Beat(t.Context(), g.Lease.ID, g.Token)
	require.NoError(t, err)
	require.NotNil(t, ka.Revoked())

	_, err = e.svc.RevokeLease(t.Context(), "operator", server.DefaultTenantID, g.Lease.ID, "moved to another team")
	require.NoError(t, err)
	within(t, ka.Revoked(), "the revocation")
	pub.mu.Lock()
	require.Equal(t, []string{g.Lease.ID}, pub.ids, "the revocation is published for other instances' streams")
	pub.mu.Unlock()

	_, err = ka.Beat(t.Context(), g.Lease.ID, g.Token)
	require.Equal(t, server.ReasonLeaseRevoked, server.ErrorReason(err))
}
