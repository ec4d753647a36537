package service

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestRevokeEndedLeaseIsRefused: revoking a lease that has ended already
// (revoked, released, or expired by the cleaner) answers FAILED_PRECONDITION
// with the reason of its end, says when it ended, changes nothing and
// audits nothing (issue 25: a second revocation answered "revoked").
func TestRevokeEndedLeaseIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	l := e.license(t, 3)
	revokes := func(leaseID string) int {
		n := 0
		for _, entry := range e.audit(t, server.DefaultTenantID) {
			if entry.Action == "lease.revoke" && entry.ResourceID == leaseID {
				n++
			}
		}
		return n
	}
	requireEnded := func(err error, ended server.Lease, reason string) {
		t.Helper()
		require.Equal(t, server.EPRECONDITION, server.ErrorCode(err), "%v", err)
		require.Equal(t, reason, server.ErrorReason(err))
		var se *server.Error
		require.True(t, errors.As(err, &se))
		require.Equal(t, string(ended.State), se.Metadata["state"])
		require.Equal(t, ended.EndedAt.UTC().Format(time.RFC3339), se.Metadata["ended_at"])
		require.Contains(t, se.Message, "already "+string(ended.State))
		got, gerr := e.store.GetLease(ctx, server.DefaultTenantID, ended.ID)
		require.NoError(t, gerr)
		require.Equal(t, ended.State, got.State, "nothing changed")
		require.True(t, ended.EndedAt.Equal(got.EndedAt), "nothing changed")
	}

	revoked := e.acquire(t, l.Key, "revoked")
	first, err := e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, revoked.Lease.ID, "once")
	require.NoError(t, err)
	require.Equal(t, server.LeaseRevoked, first.State)
	e.clock.Advance(time.Second)
	_, err = e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, revoked.Lease.ID, "twice")
	requireEnded(err, first, server.ReasonLeaseRevoked)
	require.Equal(t, 1, revokes(revoked.Lease.ID), "the refused revocation is not audited")

	released := e.acquire(t, l.Key, "released")
	rel, err := e.svc.Release(ctx, released.Lease.ID, released.Token)
	require.NoError(t, err)
	_, err = e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, released.Lease.ID, "late")
	requireEnded(err, rel, server.ReasonLeaseReleased)
	require.Zero(t, revokes(released.Lease.ID))

	expired := e.acquire(t, l.Key, "expired")
	e.clock.Advance(2 * time.Minute) // past its deadline
	e.svc.RunCleanup(ctx, "operator")
	exp, err := e.store.GetLease(ctx, server.DefaultTenantID, expired.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseExpired, exp.State)
	_, err = e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, expired.Lease.ID, "late")
	requireEnded(err, exp, server.ReasonLeaseExpired)
	require.Zero(t, revokes(expired.Lease.ID))
}
