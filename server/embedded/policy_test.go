package embedded

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// acquireAs asks for a seat of feature ("": the base pool) as user on host.
func (b *bundle) acquireAs(t testing.TB, l server.License, feature, fingerprint, user, host string) (server.AcquireResult, string, error) {
	t.Helper()
	hash := server.HashSecret(server.NewSecret(server.PrefixLeaseToken))
	res, err := b.s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: fingerprint, User: user, Hostname: host, Feature: feature,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: hash,
	})
	return res, hash, err
}

func (b *bundle) putGroup(t testing.TB, name string, members ...string) {
	t.Helper()
	_, err := b.s.PutGroup(t.Context(), server.Group{TenantID: b.tenant, Name: name, Kind: server.SubjectGroup, Members: members})
	require.NoError(t, err)
}

func (b *bundle) setPolicy(t testing.TB, l server.License, rules ...server.PolicyRule) {
	t.Helper()
	_, err := b.s.SetPolicy(t.Context(), b.tenant, l.ID, &server.Policy{Rules: rules})
	require.NoError(t, err)
}

// holdersOf is a copy of the license's policy holders: by feature, the
// lease ids filed under each user, host and reservation.
func (b *bundle) holdersOf(l server.License) map[string]map[string][]string {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	ps := b.s.idx.licenses[l.ID].policy
	if ps == nil {
		return nil
	}
	out := map[string]map[string][]string{}
	for feature, h := range ps.holders {
		m := map[string][]string{}
		for prefix, by := range map[string]map[string][]ref{"u:": h.users, "h:": h.hosts, "r:": h.reserved} {
			for k, rs := range by {
				for _, r := range rs {
					m[prefix+k] = append(m[prefix+k], textID(b.s.idx.slots.text(r)))
				}
				slices.Sort(m[prefix+k])
			}
		}
		if len(m) > 0 {
			out[feature] = m
		}
	}
	return out
}

// requireGroupCounts checks the count of leases each group's members
// hold (holders.inGroup, the bound a cap on a group as a whole reads)
// against the lists it stands for: the sum over the group's members.
func (b *bundle) requireGroupCounts(t testing.TB, l server.License) {
	t.Helper()
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	ps := b.s.idx.licenses[l.ID].policy
	if ps == nil {
		return
	}
	for feature, h := range ps.holders {
		want := map[string]int{}
		for g, members := range ps.members {
			for m := range members {
				if slices.Contains(ps.groupsOfUser[m], g) {
					want[g] += len(h.users[m])
				}
				if slices.Contains(ps.groupsOfHost[m], g) {
					want[g] += len(h.hosts[m])
				}
			}
			if want[g] == 0 {
				delete(want, g)
			}
		}
		got := maps.Clone(h.inGroup)
		maps.DeleteFunc(got, func(_ string, n int) bool { return n == 0 })
		require.Equal(t, want, got, "feature %q: leases held by each group's members", feature)
	}
}

func (b *bundle) compiled(l server.License) *server.CompiledPolicy {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	if ps := b.s.idx.licenses[l.ID].policy; ps != nil {
		return ps.compiled
	}
	return nil
}

// TestPolicyHoldersFollowTheLeases: the index of a license's leases by
// user, host and reservation holds exactly its active leases, whatever
// ended them, is built for leases held before the policy, and is built
// again at Open.
func TestPolicyHoldersFollowTheLeases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putGroup(t, "night", "ann")
	l := b.license(t, func(l *server.License) { l.Seats = 5 })
	g := b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 3 })
	before, _, err := b.acquireAs(t, l, "", "a0", "ann", "WS1")
	require.NoError(t, err)
	require.Nil(t, b.holdersOf(l), "no policy, no index")

	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleReserve, Count: 1, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}},
		server.PolicyRule{Kind: server.RuleMax, Feature: "render", Count: 2, Subject: server.Subject{Kind: server.SubjectUser, Name: "bob"}})
	require.Equal(t, map[string]map[string][]string{"": {"u:ann": {before.Lease.ID}, "h:ws1": {before.Lease.ID}}}, b.holdersOf(l),
		"a lease held before the policy is filed (a shared seat)")

	reserved, tokR, err := b.acquireAs(t, l, "", "a1", "ann", "ws2")
	require.NoError(t, err)
	require.Equal(t, "r:group\x00night", reserved.Lease.Reservation)
	r1, tok1, err := b.acquireAs(t, l, "render", "b1", "bob", "ws2")
	require.NoError(t, err)
	r2, _, err := b.acquireAs(t, l, "render", "b2", "bob", "")
	require.NoError(t, err)
	ids := func(ids ...string) []string { slices.Sort(ids); return ids }
	want := map[string]map[string][]string{
		"": {
			"u:ann": ids(before.Lease.ID, reserved.Lease.ID), "h:ws1": {before.Lease.ID}, "h:ws2": {reserved.Lease.ID},
			"r:r:group\x00night": {reserved.Lease.ID},
		},
		"render": {"u:bob": ids(r1.Lease.ID, r2.Lease.ID), "h:ws2": {r1.Lease.ID}},
	}
	require.Equal(t, want, b.holdersOf(l))
	b.requireGroupCounts(t, l)
	b.putGroup(t, "night", "ann", "bob") // the counts follow the group
	b.requireGroupCounts(t, l)

	b.reopen(t)
	require.Equal(t, want, b.holdersOf(l), "built again at Open")
	b.requireGroupCounts(t, l)

	_, err = b.s.Release(t.Context(), reserved.Lease.ID, tokR)
	require.NoError(t, err)
	_, err = b.s.Revoke(t.Context(), b.tenant, before.Lease.ID)
	require.NoError(t, err)
	_, err = b.s.Release(t.Context(), r1.Lease.ID, tok1)
	require.NoError(t, err)
	require.Equal(t, map[string]map[string][]string{"render": {"u:bob": {r2.Lease.ID}}}, b.holdersOf(l))
	b.requireGroupCounts(t, l)
	// A grant a rule names cannot go: the rule first.
	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleReserve, Count: 1, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}})
	_, err = b.s.DeleteGrant(t.Context(), b.tenant, l.ID, g.ID)
	require.NoError(t, err)
	require.Empty(t, b.holdersOf(l), "a deleted grant's leases are gone")

	// Lapsed and expired by cleanup.
	lapsing, _, err := b.acquireAs(t, l, "", "c1", "carl", "ws3")
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	refs, err := b.s.DueLeases(t.Context(), nil, 10)
	require.NoError(t, err)
	_, err = b.s.ExpireLeases(t.Context(), refs)
	require.NoError(t, err)
	require.Empty(t, b.holdersOf(l), "%s expired", lapsing.Lease.ID)

	// Without a policy, no index.
	_, err = b.s.SetPolicy(t.Context(), b.tenant, l.ID, nil)
	require.NoError(t, err)
	require.Nil(t, b.holdersOf(l))
}

// TestPolicyCompiledOncePerChange: acquisitions judge by the policy
// compiled when it last changed, never compile it themselves.
func TestPolicyCompiledOncePerChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putGroup(t, "night", "ann")
	l := b.license(t, func(l *server.License) { l.Seats = 5; l.LeasingStrategy = server.PerFingerprint })
	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleMax, Count: 3, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}})
	c := b.compiled(l)
	require.NotNil(t, c)
	for i := range 3 {
		_, _, err := b.acquireAs(t, l, "", fmt.Sprint(i), "ann", "h")
		require.NoError(t, err)
	}
	require.Same(t, c, b.compiled(l), "acquisitions compile nothing")
	_, err := b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error { l.Name = "x"; return nil })
	require.NoError(t, err)
	require.Same(t, c, b.compiled(l), "a change of the license's settings is not a change of its policy")

	b.putGroup(t, "night", "bob")
	require.NotSame(t, c, b.compiled(l), "a change of a group it names compiles it again")
	_, _, err = b.acquireAs(t, l, "", "x", "ann", "h")
	require.NoError(t, err, "ann left the group: her 3 leases no longer count")
}

// TestOlderDataDirOpensWithoutGroups: a data dir written before groups
// existed opens, and takes groups and policies.
func TestOlderDataDirOpensWithoutGroups(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	require.NoError(t, b.s.Close())
	db, err := bolt.Open(filepath.Join(b.dir, dbFileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketGroups) }))
	require.NoError(t, db.Close())
	require.NoError(t, CheckBackup(filepath.Join(b.dir, dbFileName)), "a backup without groups is sound")

	b.open(t)
	gs, err := b.s.ListGroups(t.Context(), b.tenant)
	require.NoError(t, err)
	require.Empty(t, gs)
	b.putGroup(t, "night", "ann")
	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleExclude, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}})
	_, _, err = b.acquireAs(t, l, "", "a", "ann", "h")
	requireReason(t, err, server.ReasonExcluded)
}

// TestEndedLeaseKeepsItsReservation: history keeps the reservation a
// lease took.
func TestEndedLeaseKeepsItsReservation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putGroup(t, "night", "ann")
	l := b.license(t, func(l *server.License) { l.Seats = 2 })
	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleReserve, Count: 1, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}})
	res, tok, err := b.acquireAs(t, l, "", "a", "ann", "h")
	require.NoError(t, err)
	require.Equal(t, res.Lease.Reservation, b.stored(t, res.Lease.ID).Reservation, "the active record")
	_, err = b.s.Release(t.Context(), res.Lease.ID, tok)
	require.NoError(t, err)
	ended := b.stored(t, res.Lease.ID)
	require.Equal(t, server.LeaseReleased, ended.State)
	require.Equal(t, "r:group\x00night", ended.Reservation, "the history record")
}

// TestPolicyAndGroupWritesRaceAcquisitions: policy and group changes of
// one tenant, running at once with each other and with acquisitions, leave
// every license's policy naming only groups that exist, each as it is,
// and never let a capped group past its cap.
func TestPolicyAndGroupWritesRaceAcquisitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	b.putGroup(t, "a", "u0", "u1")
	b.putGroup(t, "b", "u2")
	var lics []server.License
	for range 3 {
		lics = append(lics, b.license(t, func(l *server.License) { l.Seats = 50 }))
	}
	capOf := func(group string) server.PolicyRule {
		return server.PolicyRule{Kind: server.RuleMax, Count: 2, Subject: server.Subject{Kind: server.SubjectGroup, Name: group}}
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			l := lics[i%len(lics)]
			switch i % 5 {
			case 0:
				_, err := b.s.SetPolicy(ctx, b.tenant, l.ID, &server.Policy{Rules: []server.PolicyRule{capOf([]string{"a", "b"}[i%2])}})
				if err != nil && server.ErrorCode(err) != server.EINVALID { // the group may be gone
					t.Errorf("set policy: %v", err)
				}
			case 1:
				_, err := b.s.PutGroup(ctx, server.Group{TenantID: b.tenant, Name: []string{"a", "b"}[i%2], Kind: server.SubjectGroup,
					Members: []string{fmt.Sprintf("u%d", i%4), "u9"}})
				if err != nil {
					t.Errorf("put group: %v", err)
				}
			case 2:
				err := b.s.DeleteGroup(ctx, b.tenant, []string{"a", "b"}[i%2])
				if err != nil && server.ErrorReason(err) != server.ReasonGroupInUse && server.ErrorReason(err) != server.ReasonGroupNotFound {
					t.Errorf("delete group: %v", err)
				}
			default:
				_, _, err := b.acquireAs(t, l, "", fmt.Sprint(i), fmt.Sprintf("u%d", i%4), "h")
				if err != nil && server.ErrorReason(err) != server.ReasonGroupLimit {
					t.Errorf("acquire: %v", err)
				}
			}
		})
	}
	wg.Wait()

	gs, err := b.s.ListGroups(ctx, b.tenant)
	require.NoError(t, err)
	byName := map[string]server.Group{}
	for _, g := range gs {
		byName[g.Name] = g
	}
	for _, l := range lics {
		b.requireGroupCounts(t, l)
		got, err := b.s.GetLicense(ctx, b.tenant, l.ID)
		require.NoError(t, err)
		if got.Policy == nil {
			continue
		}
		for _, r := range got.Policy.Rules {
			_, ok := byName[r.Subject.Name]
			require.True(t, ok, "license %s names group %s, which is gone", l.ID, r.Subject.Name)
		}
		for _, g := range got.Policy.Groups {
			require.Equal(t, byName[g.Name].Members, g.Members, "the policy's copy of group %s is current", g.Name)
		}
	}
}
