package record

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// TestEndsAreNoted: every statement that records a release or a revoke
// (the group release, EndLease) notes the lease for the live state in the
// same statement, once; PendingEnds pages through the notes in lease id
// order and ClearEnds removes them.
func TestEndsAreNoted(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	lic := r.license(t, tn.ID)
	a, b, c, d := r.active(t, lic, tn.ID), r.active(t, lic, tn.ID), r.active(t, lic, tn.ID), r.active(t, lic, tn.ID)
	now := time.Now().UTC().Truncate(time.Microsecond)

	outs := make([]server.Lease, 2)
	rels := []*groupcommit.Call[releaseReq, bool]{ // two at once: the group statement
		{Ctx: t.Context(), Req: releaseReq{leaseID: a, now: now, hb: now, deadline: now.Add(time.Hour), out: &outs[0]}},
		{Ctx: t.Context(), Req: releaseReq{leaseID: b, now: now, hb: now, deadline: now.Add(time.Hour), out: &outs[1]}},
	}
	r.pg.runReleases(rels)
	for _, c := range rels {
		require.NoError(t, c.Err)
		require.True(t, c.Res)
	}
	_, ok, err := r.pg.EndLease(t.Context(), c, server.LeaseRevoked, now, nil, nil)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = r.pg.EndLease(t.Context(), c, server.LeaseReleased, now, nil, nil)
	require.NoError(t, err)
	require.False(t, ok, "ended already: nothing written, nothing noted again")

	want := []string{a, b, c}
	slices.Sort(want)
	var got []string
	after := ""
	for {
		page, err := r.pg.PendingEnds(t.Context(), after, 2)
		require.NoError(t, err)
		for _, e := range page {
			require.Equal(t, lic.ID, e.LicenseID)
			got = append(got, e.LeaseID)
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].LeaseID
	}
	require.Equal(t, want, got, "the ended leases, each once, in id order; not the active one %s", d)

	require.NoError(t, r.pg.ClearEnds(t.Context(), want[:2]))
	left, err := r.pg.PendingEnds(t.Context(), "", 10)
	require.NoError(t, err)
	require.Equal(t, []PendingEnd{{LeaseID: want[2], LicenseID: lic.ID}}, left)
}
