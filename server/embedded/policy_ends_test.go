package embedded

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// liveOf counts the live leases of user on license l's base pool.
func (b *bundle) liveOf(t *testing.T, l server.License, user string) int {
	t.Helper()
	ls, _, err := b.s.ListLeases(t.Context(), b.tenant, l.ID, server.LeaseActive, server.Page{Size: 100})
	require.NoError(t, err)
	n := 0
	for _, x := range ls {
		if x.User == user && x.Live(b.clock.Now()) {
			n++
		}
	}
	return n
}

func maxUser(n int, user string) server.PolicyRule {
	return server.PolicyRule{Kind: server.RuleMax, Count: n, Subject: server.Subject{Kind: server.SubjectUser, Name: user}}
}

func reserveGroup(n int, group string) server.PolicyRule {
	return server.PolicyRule{Kind: server.RuleReserve, Count: n, Subject: server.Subject{Kind: server.SubjectGroup, Name: group}}
}

// TestCrashSlackRevivesNoLeasePastACap: bob (max 1) let lease A lapse and
// took B. A lapsed lease may come back unjudged (the crash slack), so the
// grant of B, judged without A, ends A: after a crash bob holds one lease.
func TestCrashSlackRevivesNoLeasePastACap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 5 })
	b.setPolicy(t, l, maxUser(1, "bob"))
	a, _, err := b.acquireAs(t, l, "", "laptop", "bob", "h1")
	require.NoError(t, err)
	b.clock.Advance(11 * time.Second) // a lapses; no cleanup runs
	_, _, err = b.acquireAs(t, l, "", "desktop", "bob", "h2")
	require.NoError(t, err, "a lapsed lease does not count: bob may take another")
	require.Equal(t, server.LeaseExpired, b.stored(t, a.Lease.ID).State, "the lapsed lease in the cap's way ends with the grant")

	b.crashAndReopen(t, time.Hour) // every active lease gets an hour back
	require.Equal(t, 1, b.liveOf(t, l, "bob"), "max 1 for user bob, after a crash")
}

// TestCrashSlackRevivesNoLeaseIntoAReservation: 3 seats, 1 night's. x1's
// lapsed shared seat would, back after a crash, leave night's seat to
// x2 and x3: the grant that needs it ends it.
func TestCrashSlackRevivesNoLeaseIntoAReservation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putGroup(t, "night", "alice")
	l := b.license(t, func(l *server.License) { l.Seats = 3 })
	b.setPolicy(t, l, reserveGroup(1, "night"))
	x1, _, err := b.acquireAs(t, l, "", "a", "x1", "h1")
	require.NoError(t, err)
	b.clock.Advance(11 * time.Second)
	x2, _, err := b.acquireAs(t, l, "", "b", "x2", "h2")
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, b.stored(t, x1.Lease.ID).State, "x1 counted is still no bar to x2: it stays")
	_, _, err = b.acquireAs(t, l, "", "c", "x3", "h3")
	require.NoError(t, err)
	require.Equal(t, server.LeaseExpired, b.stored(t, x1.Lease.ID).State, "x1 back would take night's seat: it ends with x3's grant")
	require.Equal(t, server.LeaseActive, b.stored(t, x2.Lease.ID).State)

	b.crashAndReopen(t, time.Hour) // every active lease gets an hour back
	_, _, err = b.acquireAs(t, l, "", "d", "alice", "h4")
	require.NoError(t, err, "alice (night) gets night's reserved seat after a crash")
}

// TestRestoredBackupRevivesNoLeasePastACap: a backup taken while the
// store runs says "open", so the restored data dir gives every active
// lease the crash slack: the same as a crash.
func TestRestoredBackupRevivesNoLeasePastACap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 5 })
	b.setPolicy(t, l, maxUser(1, "bob"))
	_, _, err := b.acquireAs(t, l, "", "laptop", "bob", "h1")
	require.NoError(t, err)
	b.clock.Advance(11 * time.Second)
	_, _, err = b.acquireAs(t, l, "", "desktop", "bob", "h2")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(file)
	require.NoError(t, err)
	_, err = b.s.Backup(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	b.dir = t.TempDir()
	_, err = Restore(b.dir, file, b.clock.Now())
	require.NoError(t, err)
	b.open(t)
	require.Equal(t, 1, b.liveOf(t, l, "bob"), "max 1 for user bob, after a restore")
}

// TestGrantEndsOnlyTheLapsedLeasesInItsWay: a grant ends the lapsed
// leases that, back, would break its caps or reservations, earliest
// first, and no other: those keep their chance to revive.
func TestGrantEndsOnlyTheLapsedLeasesInItsWay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putGroup(t, "night", "alice")
	l := b.license(t, func(l *server.License) { l.Seats = 6; l.RevivalWindow = time.Hour })
	b.setPolicy(t, l, maxUser(2, "bob"), reserveGroup(1, "night"))
	bob1, _, err := b.acquireAs(t, l, "", "b1", "bob", "h1")
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	bob2, tokBob2, err := b.acquireAs(t, l, "", "b2", "bob", "h2")
	require.NoError(t, err)
	carl, tokCarl, err := b.acquireAs(t, l, "", "c1", "carl", "h3")
	require.NoError(t, err)
	b.clock.Advance(20 * time.Second) // all three lapse

	_, _, err = b.acquireAs(t, l, "", "b3", "bob", "h4")
	require.NoError(t, err)
	require.Equal(t, server.LeaseExpired, b.stored(t, bob1.Lease.ID).State, "back, bob's two lapsed leases and the new one break max 2: the earliest ends")
	require.Equal(t, server.LeaseActive, b.stored(t, bob2.Lease.ID).State, "one lapsed lease of bob fits his cap")
	require.Equal(t, server.LeaseActive, b.stored(t, carl.Lease.ID).State, "carl's lapsed lease is in nobody's way")

	// Those left revive, judged as ever.
	_, err = b.s.Heartbeat(t.Context(), bob2.Lease.ID, tokBob2)
	require.NoError(t, err, "bob's second lease revives: 2 of his 2")
	_, err = b.s.Heartbeat(t.Context(), carl.Lease.ID, tokCarl)
	require.NoError(t, err, "carl's lease revives")
}

// TestHandBackOnlyToItsOwnIdentity: with a per-hostname strategy, a
// request from another user on a host that holds a lease is judged as
// its own: an excluded user, or one at its cap, is refused and the lease
// is left alone; anyone else takes the seat in a new lease of its own,
// and the old lease ends (revoked, audited). The same user and host is
// handed its lease back as ever.
func TestHandBackOnlyToItsOwnIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 5; l.LeasingStrategy = server.PerHostname })
	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleExclude, Subject: server.Subject{Kind: server.SubjectUser, Name: "intern"}}, maxUser(1, "bob"))
	alice, tokAlice, err := b.acquireAs(t, l, "", "fp1", "alice", "ws1")
	require.NoError(t, err)
	_, _, err = b.acquireAs(t, l, "", "fp0", "bob", "ws0")
	require.NoError(t, err)

	_, _, err = b.acquireAs(t, l, "", "fp2", "intern", "ws1")
	requireReason(t, err, server.ReasonExcluded)
	_, _, err = b.acquireAs(t, l, "", "fp3", "bob", "ws1")
	requireReason(t, err, server.ReasonUserLimit)
	_, err = b.s.Heartbeat(t.Context(), alice.Lease.ID, tokAlice)
	require.NoError(t, err, "alice's lease is left as it was")

	again, tokAlice, err := b.acquireAs(t, l, "", "fp4", "alice", "ws1")
	require.NoError(t, err)
	require.True(t, again.Existing, "her own lease, handed back")
	require.Equal(t, alice.Lease.ID, again.Lease.ID)

	carl, _, err := b.acquireAs(t, l, "", "fp5", "carl", "ws1")
	require.NoError(t, err)
	require.False(t, carl.Existing, "carl's own lease")
	require.NotEqual(t, alice.Lease.ID, carl.Lease.ID)
	require.Equal(t, "carl", carl.Lease.User)
	require.Equal(t, 2, carl.SeatsInUse, "carl took alice's seat")
	_, err = b.s.Heartbeat(t.Context(), alice.Lease.ID, tokAlice)
	requireReason(t, err, server.ReasonLeaseRevoked)
	audit, _, err := b.s.AuditLog(t.Context(), b.tenant, server.Page{Size: 10})
	require.NoError(t, err)
	require.Len(t, audit, 1)
	require.Equal(t, "lease.replace", audit[0].Action)
	require.Equal(t, alice.Lease.ID, audit[0].ResourceID)
	require.Equal(t, carl.Lease.ID, audit[0].Details["replaced_by"])
}

// TestHandBackOfAFeatureOnlyToItsOwnIdentity: the same over a feature's
// grants: the lease may be of another grant than the one that grants.
func TestHandBackOfAFeatureOnlyToItsOwnIdentity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 1; l.LeasingStrategy = server.PerHostname })
	b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 1 })
	b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 1 })
	b.setPolicy(t, l, server.PolicyRule{Kind: server.RuleExclude, Feature: "render", Subject: server.Subject{Kind: server.SubjectUser, Name: "intern"}})
	alice, _, err := b.acquireAs(t, l, "render", "fp1", "alice", "ws1")
	require.NoError(t, err)
	_, _, err = b.acquireAs(t, l, "render", "fp2", "intern", "ws1")
	requireReason(t, err, server.ReasonExcluded)
	carl, _, err := b.acquireAs(t, l, "render", "fp3", "carl", "ws1")
	require.NoError(t, err)
	require.False(t, carl.Existing)
	require.Equal(t, alice.Grant.ID, carl.Grant.ID, "alice's seat, free for carl")
	require.Equal(t, server.LeaseRevoked, b.stored(t, alice.Lease.ID).State)

	// No rule of the base pool: its hand-backs are as without a policy.
	base, _, err := b.acquireAs(t, l, "", "fp4", "alice", "ws2")
	require.NoError(t, err)
	other, _, err := b.acquireAs(t, l, "", "fp5", "intern", "ws2")
	require.NoError(t, err)
	require.True(t, other.Existing)
	require.Equal(t, base.Lease.ID, other.Lease.ID)
}

// TestLicenseChangeKeepsThePolicyValid: a change of a license's seats or
// grants that its policy would no longer pass is refused, naming the
// rule, and changes nothing; one the policy passes goes through.
func TestLicenseChangeKeepsThePolicyValid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.putGroup(t, "night", "alice")
	l := b.license(t, func(l *server.License) { l.Seats = 5 })
	g := b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 2 })
	b.setPolicy(t, l, reserveGroup(4, "night"),
		server.PolicyRule{Kind: server.RuleReserve, Feature: "render", Count: 2, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}})

	_, err := b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error { l.Seats = 3; return nil })
	requireReason(t, err, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "policy.rules: reservations of the base pool sum to 4, more than its 3 seats")
	_, err = b.s.UpdateGrant(t.Context(), b.tenant, l.ID, g.ID, func(g *server.Grant) error { g.Seats = 1; return nil })
	requireReason(t, err, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "policy.rules: reservations of render sum to 2, more than its 1 seats")
	_, err = b.s.DeleteGrant(t.Context(), b.tenant, l.ID, g.ID)
	requireReason(t, err, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), `policy.rules[1].feature: license has no grant of feature "render"`)
	got, err := b.s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, 5, got.Seats)
	require.Len(t, got.Grants, 1)
	require.Equal(t, 2, got.Grants[0].Seats)
	_, err = b.s.SetPolicy(t.Context(), b.tenant, l.ID, &server.Policy{Rules: got.Policy.Rules})
	require.NoError(t, err, "the policy kept is one SetPolicy takes")

	b.reopen(t)
	_, err = b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error { l.Seats = 4; l.Name = "smaller"; return nil })
	require.NoError(t, err, "4 seats hold the 4 reserved")
	b.setPolicy(t, l, reserveGroup(4, "night"))
	_, err = b.s.DeleteGrant(t.Context(), b.tenant, l.ID, g.ID)
	require.NoError(t, err, "no rule names render any more")
}

// TestLicenseReadsDoNotCopyBigGroups: GetLicense and LicenseByKey (which
// the service calls per acquisition and per refusal) cost nothing of the
// size of the groups the policy names: they share its Policy.
func TestLicenseReadsDoNotCopyBigGroups(t *testing.T) {
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 5 })
	var rules []server.PolicyRule
	for g := range 5 {
		name := string(rune('a'+g)) + "-group"
		members := make([]string, server.MaxGroupMembers)
		for i := range members {
			members[i] = name + "-member-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		}
		b.putGroup(t, name, members...)
		rules = append(rules, server.PolicyRule{Kind: server.RuleExclude, Subject: server.Subject{Kind: server.SubjectGroup, Name: name}})
	}
	b.setPolicy(t, l, rules...)
	const calls = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range calls {
		got, err := b.s.LicenseByKey(t.Context(), l.Key)
		require.NoError(t, err)
		require.Len(t, got.Policy.Groups, 5)
		_, err = b.s.GetLicense(t.Context(), b.tenant, l.ID)
		require.NoError(t, err)
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / (2 * calls)
	require.Less(t, perCall, uint64(16<<10), "bytes allocated per read; 5 groups of %d members copied would be ~800 KiB", server.MaxGroupMembers)
}

// TestActiveLeasesKeepThePolicy drives a policy license with random
// acquisitions (hand-backs and replacements among them), releases,
// heartbeats (revivals) and time, and checks after each step that the
// active leases, lapsed ones included, keep every cap and reservation,
// as if all were live: a crash's slack may make them so. Then it crashes
// and checks the live leases.
func TestActiveLeasesKeepThePolicy(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 27))
			b := setup(t)
			b.putGroup(t, "night", "alice", "carl")
			const seats = 6
			l := b.license(t, func(l *server.License) {
				l.Seats, l.RevivalWindow, l.LeasingStrategy = seats, time.Minute, server.PerFingerprint
			})
			night := server.Subject{Kind: server.SubjectGroup, Name: "night"}
			dave := server.Subject{Kind: server.SubjectUser, Name: "dave"}
			b.setPolicy(t, l, maxUser(2, "bob"),
				server.PolicyRule{Kind: server.RuleMax, Count: 2, Subject: server.Subject{Kind: server.SubjectHost, Name: "h1"}},
				server.PolicyRule{Kind: server.RuleReserve, Count: 2, Subject: night},
				server.PolicyRule{Kind: server.RuleReserve, Count: 1, Subject: dave})
			reserved := map[string]int{"r:group\x00night": 2, "r:user\x00dave": 1}
			users := []string{"alice", "bob", "carl", "dave", "eve", "bob"}
			hosts := []string{"h1", "H1", "h2", "h3"}
			tokens := map[string]string{}

			check := func(step string, all bool) {
				t.Helper()
				ls, _, err := b.s.ListLeases(t.Context(), b.tenant, l.ID, server.LeaseActive, server.Page{Size: 100})
				require.NoError(t, err)
				n, bob, h1, held := 0, 0, 0, map[string]int{}
				for _, x := range ls {
					if !all && !x.Live(b.clock.Now()) {
						continue
					}
					n++
					if x.User == "bob" {
						bob++
					}
					if strings.EqualFold(x.Hostname, "h1") {
						h1++
					}
					held[x.Reservation]++
				}
				unused := 0
				for k, seats := range reserved {
					unused += max(0, seats-held[k])
				}
				require.LessOrEqual(t, n, seats, "%s: seats", step)
				require.LessOrEqual(t, bob, 2, "%s: bob's cap", step)
				require.LessOrEqual(t, h1, 2, "%s: h1's cap", step)
				require.LessOrEqual(t, n+unused, seats, "%s: seats in use and those kept for reservations", step)
			}
			for i := range 300 {
				switch op := rng.IntN(10); {
				case op < 5:
					fp := fmt.Sprint("fp", rng.IntN(8))
					res, tok, err := b.acquireAs(t, l, "", fp, users[rng.IntN(len(users))], hosts[rng.IntN(len(hosts))])
					if err == nil {
						tokens[res.Lease.ID] = tok
					}
				case op < 7:
					for id, tok := range tokens {
						if _, err := b.s.Heartbeat(t.Context(), id, tok); err != nil {
							delete(tokens, id)
						}
						break
					}
				case op < 8:
					for id, tok := range tokens {
						_, _ = b.s.Release(t.Context(), id, tok)
						delete(tokens, id)
						break
					}
				default:
					b.clock.Advance(time.Duration(rng.IntN(8)) * time.Second)
				}
				check(fmt.Sprint("step ", i), true)
			}
			b.crashAndReopen(t, time.Hour)
			check("after a crash", false)
		})
	}
}
