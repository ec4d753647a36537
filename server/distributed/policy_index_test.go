package distributed

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// The policy index never loses the members of live leases while the
// pools' live state persists (doc.go, Site policies): a lease granted in
// Redis whose INSERT has not started is in no snapshot of the record, so
// an index rebuilt from the record would miss it and its caps would count
// it nowhere.

// TestPolicyIndexKeptWhenASiblingGrantIsDeleted: deleting a grant
// tombstones its pool only; the license's index keeps the members of a
// lease another grant gave and has not recorded yet.
func TestPolicyIndexKeptWhenASiblingGrantIsDeleted(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	doomed := mkGrant(t, s, lic, "render", "", 2, time.Time{})
	mkGrant(t, s, lic, "sim", "", 3, time.Time{})
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Feature: "sim", Count: 1, Subject: userSubject("ann")})
	ctx := t.Context()

	var once atomic.Bool
	s.insertHook = func(insert func() (bool, error)) (bool, error) {
		if once.CompareAndSwap(false, true) {
			// ann's sim lease is granted in Redis, not yet recorded.
			_, err := other.DeleteGrant(ctx, tn.ID, lic.ID, doomed.ID)
			require.NoError(t, err)
			// Anything on the license would now rebuild a lost index from the record.
			_, _, err = tryAs(ctx, other, lic.Key, "c1", "carl", "h", "", "")
			require.NoError(t, err)
		}
		return insert()
	}
	a, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "sim", "")
	require.NoError(t, err)
	require.True(t, once.Load())
	_, err = s.GetLease(ctx, tn.ID, a.Lease.ID)
	require.NoError(t, err, "ann's first sim lease is recorded and live")

	_, _, err = tryAs(ctx, other, lic.Key, "a2", "ann", "h2", "sim", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 0,
		"ann already holds 1 sim seat: MAX 1 must refuse")
}

// TestPolicyIndexPruneWithAStalePoolList: the leader reads the pools of
// each license with a policy, then prunes; a grant created in between is
// not in that list, and the members of a live lease it gave stay.
// Emulates the body of prunePolicyIndexes with the list read before the
// grant existed.
func TestPolicyIndexPruneWithAStalePoolList(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	mkGrant(t, s, lic, "sim", "", 1, time.Time{})
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Feature: "sim", Count: 1, Subject: userSubject("ann")})
	ctx := t.Context()
	_, _, err := tryAs(ctx, s, lic.Key, "b1", "bob", "h", "sim", "") // fills the first grant
	require.NoError(t, err)

	lics, err := s.rec.PolicyPools(ctx) // the leader's read
	require.NoError(t, err)

	g2 := mkGrant(t, s, lic, "sim", "", 3, time.Time{})
	a, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "sim", "")
	require.NoError(t, err)
	require.Equal(t, g2.ID, a.Lease.LicenseID)

	ids := []string{}
	for p := range lics[lic.ID].Pools {
		ids = append(ids, p)
	}
	_, _, err = s.live.PrunePolicyIndex(ctx, lic.ID, lics[lic.ID].Version, ids, "", pruneBatch)
	require.NoError(t, err)

	_, _, err = tryAs(ctx, s, lic.Key, "a2", "ann", "h2", "sim", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 0, "ann holds a live sim lease in the new grant")
}

// TestPolicyIndexLateDropAfterSwitchOff: a drop of the index meant for a
// policy switched off that lands once the policy is on (again) leaves the
// index alone. The late drop is emulated by calling DropPolicyIndex while
// a lease is granted in Redis and not yet recorded.
func TestPolicyIndexLateDropAfterSwitchOff(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: userSubject("ann")})
	ctx := t.Context()
	_, _, err := tryAs(ctx, s, lic.Key, "w", "warm", "h", "", "")
	require.NoError(t, err)

	var once atomic.Bool
	s.insertHook = func(insert func() (bool, error)) (bool, error) {
		if once.CompareAndSwap(false, true) {
			require.NoError(t, other.live.DropPolicyIndex(ctx, lic.ID)) // a racing switch-off's late drop
			_, _, err := tryAs(ctx, other, lic.Key, "c1", "carl", "h", "", "")
			require.NoError(t, err) // would rebuild a lost index from the record
		}
		return insert()
	}
	_, _, err = tryAs(ctx, s, lic.Key, "a1", "ann", "h", "", "")
	require.NoError(t, err)
	_, _, err = tryAs(ctx, other, lic.Key, "a2", "ann", "h2", "", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 0, "ann holds 1 already")

	// A switch-off still drops it (the live settings say no policy).
	_, err = s.SetPolicy(ctx, tn.ID, lic.ID, nil)
	require.NoError(t, err)
	require.Empty(t, indexOf(t, s, lic.ID))
	n, err := s.rdb.Exists(ctx, s.live.Keys().Policy(lic.ID)...).Result()
	require.NoError(t, err)
	require.Zero(t, n, "index and marker dropped")
}

// TestPolicyChangeVoidsFeatureGrantsDecidedBefore: a policy change that
// keeps the generation bumps the grants' versions too, so that a feature
// acquisition decided by the policy before it, not yet recorded when the
// change returned, is not recorded: judged again, by the new policy.
func TestPolicyChangeVoidsFeatureGrantsDecidedBefore(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	mkGrant(t, s, lic, "sim", "", 3, time.Time{})
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Feature: "sim", Count: 2, Subject: userSubject("ann")})
	ctx := t.Context()

	var once atomic.Bool
	s.insertHook = func(insert func() (bool, error)) (bool, error) {
		if once.CompareAndSwap(false, true) {
			// ann's sim lease is granted in Redis by the old policy.
			setPolicy(t, other, lic, server.PolicyRule{Kind: server.RuleExclude, Feature: "sim", Subject: userSubject("ann")})
		}
		return insert()
	}
	_, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "sim", "")
	require.True(t, once.Load())
	requirePolicyRefusal(t, err, server.EPERMISSION, server.ReasonExcluded, 0, "the change returned before the insert")
}
