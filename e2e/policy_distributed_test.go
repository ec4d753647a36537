package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/e2e/chaos"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// threeInstancePolicy is the site policy of TestDistributedPolicyThreeInstances
// on a license of 12 seats and a feature "sim" of 4: 7 seats kept for three
// reservations (5 shared), caps for each member of a group, for a group as
// a whole and for each host of a host group, an exclude; on "sim",
// includes, an exclude that wins over one, and a user's cap. farm-3 is of
// the farm but never asks: one farm seat is always kept, so the base pool
// is never full (a non-member is refused SEATS_RESERVED, never
// SEATS_EXHAUSTED).
var threeInstancePolicy = chaos.Policy{
	Rules: []chaos.Rule{
		{Kind: chaos.Reserve, Count: 2, Subject: chaos.Subject{Kind: chaos.Group, Name: "night"}},                  // 0
		{Kind: chaos.Reserve, Count: 3, Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}},               // 1
		{Kind: chaos.Reserve, Count: 2, Subject: chaos.Subject{Kind: chaos.Group, Name: "interns"}},                // 2
		{Kind: chaos.Max, Count: 1, Subject: chaos.Subject{Kind: chaos.Group, Name: "night"}, EachMember: true},    // 3
		{Kind: chaos.Max, Count: 2, Subject: chaos.Subject{Kind: chaos.Group, Name: "interns"}},                    // 4
		{Kind: chaos.Max, Count: 1, Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}, EachMember: true}, // 5
		{Kind: chaos.Exclude, Subject: chaos.Subject{Kind: chaos.User, Name: "mallory"}},                           // 6
		{Kind: chaos.Include, Feature: "sim", Subject: chaos.Subject{Kind: chaos.Group, Name: "night"}},            // 7
		{Kind: chaos.Include, Feature: "sim", Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}},         // 8
		{Kind: chaos.Exclude, Feature: "sim", Subject: chaos.Subject{Kind: chaos.User, Name: "ben"}},               // 9
		{Kind: chaos.Max, Feature: "sim", Count: 1, Subject: chaos.Subject{Kind: chaos.User, Name: "ann"}},         // 10
	},
	Groups: map[string][]string{"night": {"ann", "ben"}, "interns": {"ivy", "joe", "kim"}, "farm": {"farm-1", "farm-2", "farm-3"}},
}

// policyClass is a kind of client of the wave: its identities (taken in
// turn), the feature it asks for, how many ask, how many seats they get
// together (exactly, or at most with atMost) and the reasons the others
// are refused with.
type policyClass struct {
	name         string
	users, hosts []string
	feature      string
	n, grants    int
	atMost       bool
	reasons      []string
}

// policyWave is the wave's 200 clients, and what the policy makes of
// them whatever the order in which the instances judge them: each class's
// grants follow from the rules alone (the reservations' seats go only to
// their members, whom the caps keep to one or two; the others share 5).
var policyWave = []policyClass{
	{name: "ann", users: []string{"ann"}, hosts: []string{"ws-ann"}, n: 6, grants: 1, reasons: []string{chaos.ReasonUserLimit}},
	{name: "ben", users: []string{"ben"}, hosts: []string{"ws-ben"}, n: 6, grants: 1, reasons: []string{chaos.ReasonUserLimit}},
	{name: "interns", users: []string{"ivy", "joe", "kim"}, hosts: []string{"ws-1", ""}, n: 18, grants: 2, reasons: []string{chaos.ReasonGroupLimit}},
	{name: "farm-1", users: []string{"zed"}, hosts: []string{"farm-1"}, n: 6, grants: 1, reasons: []string{chaos.ReasonHostLimit}},
	{name: "FARM-2", users: []string{""}, hosts: []string{"FARM-2", "farm-2"}, n: 6, grants: 1, reasons: []string{chaos.ReasonHostLimit}},
	{name: "mallory", users: []string{"mallory"}, hosts: []string{"farm-1", "ws-2"}, n: 6, reasons: []string{chaos.ReasonExcluded}},
	{name: "others", users: []string{"zed", "", "ursula", "victor"}, hosts: []string{"ws-3", "", "kiosk"}, n: 122, grants: 5,
		reasons: []string{chaos.ReasonSeatsReserved}},
	{name: "ben sim", users: []string{"ben"}, hosts: []string{"farm-1"}, feature: "sim", n: 4, reasons: []string{chaos.ReasonExcluded}},
	{name: "zed sim", users: []string{"zed", ""}, hosts: []string{"ws-4", ""}, feature: "sim", n: 6, reasons: []string{chaos.ReasonNotIncluded}},
	// sim's 4 seats go to ann (one at most) and the farm's hosts (no cap).
	{name: "ann sim", users: []string{"ann"}, hosts: []string{"ws-ann"}, feature: "sim", n: 4, grants: 1, atMost: true,
		reasons: []string{chaos.ReasonUserLimit, chaos.ReasonSeatsExhausted}},
	{name: "farm sim", users: []string{"zed", ""}, hosts: []string{"farm-1", "FARM-2", "farm-2"}, feature: "sim", n: 16, grants: 4, atMost: true,
		reasons: []string{chaos.ReasonSeatsExhausted}},
}

// TestDistributedPolicyThreeInstances: a site policy holds across three
// instances on one PostgreSQL and Redis (invariant 13) as the seat limit
// does in TestDistributedSeatLimitThreeInstances. 200 clients of various
// users and hosts acquire at once through the three instances (the wave:
// what each kind of client gets follows from the rules whatever the order,
// and every refusal reason of a policy occurs), then acquire, heartbeat
// and release concurrently, each call through any instance (the churn).
// Every call is recorded, and package chaos judges the history as the
// fault campaign does: no cap exceeded and no reservation broken at any
// instant a client surely held its leases, no excluded or uninvited
// client granted, every refusal naming a rule that applies to its client
// and, without faults, caused by leases that may have counted
// (CheckRefusals). A sampler reads the record's active leases in single
// statements meanwhile (each a snapshot of the live state, which counts a
// lease before it is recorded and after it ends there) and judges each
// (CheckHolders), with the reserved seats the store says each lease took.
func TestDistributedPolicyThreeInstances(t *testing.T) {
	t.Parallel()
	const seats, simSeats, churnRounds = 12, 4, 4
	b := sharedBackend(t, "")
	procs := b.startCluster(t, 3, "policy")
	lic := newLicense(t, procs[0], seats, 10*time.Minute, "policy-three-instances")
	grant := createFeatureGrant(t, procs[0], lic.GetId(), "sim", simSeats)
	setSitePolicy(t, procs[0], lic.GetId(), threeInstancePolicy)
	pools := []string{lic.GetId(), grant.ID}
	limits := map[string]int{lic.GetId(): seats}

	sampler := startPolicySampler(t, b.db(t), lic.GetId(), pools, seats, threeInstancePolicy)
	var hist chaos.History
	c := &policyClients{t: t, key: lic.GetKey(), hist: &hist}

	// The wave: everyone at once, nobody releases until all have answers.
	// Its findings do not stop the test: the history's verdict follows.
	type asked struct {
		class    int
		op       chaos.Op
		response *seatdv1.AcquireSeatResponse
	}
	var wave []asked
	for ci, cl := range policyWave {
		for k := range cl.n {
			wave = append(wave, asked{class: ci, op: chaos.Op{Client: len(wave), Kind: chaos.Acquire, License: lic.GetId(),
				Feature: cl.feature, User: cl.users[k%len(cl.users)], Host: cl.hosts[k%len(cl.hosts)]}})
		}
	}
	require.Len(t, wave, 200)
	startGun := make(chan struct{})
	var wg sync.WaitGroup
	for i := range wave {
		wg.Go(func() {
			<-startGun
			wave[i].op, wave[i].response = c.acquire(t.Context(), wave[i].op, procs[i%len(procs)])
		})
	}
	close(startGun)
	wg.Wait()
	got := make([]int, len(policyWave))
	for _, a := range wave {
		cl := policyWave[a.class]
		switch {
		case a.op.Outcome == chaos.OK:
			got[a.class]++
		case a.op.Outcome != chaos.Failed || !slices.Contains(cl.reasons, a.op.Reason):
			t.Errorf("wave: %s client refused %s, want one of %v: %s", cl.name, a.op.Reason, cl.reasons, a.op)
		}
	}
	simGrants := 0
	for ci, cl := range policyWave {
		if cl.atMost {
			assert.LessOrEqual(t, got[ci], cl.grants, "wave: seats granted to %s clients", cl.name)
		} else {
			assert.Equal(t, cl.grants, got[ci], "wave: seats granted to %s clients", cl.name)
		}
		if cl.feature == "sim" {
			simGrants += got[ci]
		}
	}
	assert.Equal(t, simSeats, simGrants, "wave: every seat of sim granted (its includes let 17 ask, caps stop only ann)")
	reasons := map[string]int{}
	for _, a := range wave {
		if a.op.Outcome == chaos.Failed {
			reasons[a.op.Reason]++
		}
	}
	for _, r := range append([]string{chaos.ReasonSeatsExhausted}, chaos.PolicyReasons...) {
		assert.Positive(t, reasons[r], "wave: no refusal %s (refusals: %v)", r, reasons)
	}
	t.Logf("wave: grants by class %v, refusals %v", got, reasons)

	// While the wave's leases are held, the record says which seat each
	// took: the night's 2 (ann, ben), 2 of the farm's 3 (farm-1, farm-2),
	// the interns' 2, and 5 shared.
	held := sampler.snapshot(t)
	taken := map[int]int{}
	base := 0
	for _, h := range held {
		if h.Feature == "" {
			base++
			taken[h.Reserved]++
		}
	}
	assert.Equal(t, seats-1, base, "base-pool leases active after the wave (one farm seat stays kept for farm-3)")
	assert.Equal(t, map[int]int{-1: 5, 0: 2, 1: 2, 2: 2}, taken, "base-pool leases by reservation taken (-1: shared)")
	assert.Len(t, held, seats-1+simSeats, "leases active after the wave")

	for i, a := range wave {
		if a.response != nil {
			wg.Go(func() { c.release(t.Context(), a.op, a.response, procs[(i+1)%len(procs)]) })
		}
	}
	wg.Wait()

	// The churn: every client acquires, heartbeats and releases a few
	// times as any kind of client, each call through an instance at random.
	for i := range 200 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 27))
			for n := range churnRounds {
				cl := policyWave[rng.IntN(len(policyWave))]
				op := chaos.Op{Client: 1000 + i, Kind: chaos.Acquire, License: lic.GetId(), Feature: cl.feature,
					User: cl.users[rng.IntN(len(cl.users))], Host: cl.hosts[rng.IntN(len(cl.hosts))]}
				op, l := c.acquire(t.Context(), op, procs[rng.IntN(len(procs))])
				if op.Outcome == chaos.Failed && op.Reason != chaos.ReasonSeatsExhausted && !slices.Contains(chaos.PolicyReasons, op.Reason) {
					t.Errorf("churn round %d: refused %s, not a reason of seats or of the policy: %s", n, op.Reason, op)
				}
				if l == nil {
					continue
				}
				c.heartbeat(t.Context(), op, l, procs[rng.IntN(len(procs))])
				c.release(t.Context(), op, l, procs[rng.IntN(len(procs))])
			}
		})
	}
	wg.Wait()
	samples := sampler.stop(t)
	t.Logf("the sampler judged %d snapshots of the record", samples)

	ops := hist.Ops()
	for _, op := range ops {
		require.NotEqual(t, chaos.Unknown, op.Outcome, "no call may end without an answer here: %s", op)
	}
	db := b.db(t)
	params := chaos.Params{Final: true, Grants: map[string]chaos.Grant{grant.ID: grant},
		Policies: map[string]chaos.Policy{lic.GetId(): threeInstancePolicy}}
	violations := chaos.Check(ops, limits, chaosRecords(t, db, pools), params)
	violations = append(violations, chaos.CheckRefusals(ops, limits, params)...)
	for i, v := range violations {
		if i == 20 {
			t.Errorf("... and %d more violations", len(violations)-20)
			break
		}
		t.Errorf("violation %s", v)
	}
	t.Logf("%d operations judged", len(ops))
	require.Zero(t, countActive(t, db, lic.GetId())+countActive(t, db, grant.ID), "every lease released")
	requireExactlyOnceRecords(t, db)
	stopAllOK(t, procs...)
}

// policyClients make recorded calls for TestDistributedPolicyThreeInstances.
type policyClients struct {
	t    *testing.T
	key  string // the license's
	hist *chaos.History
}

func (c *policyClients) acquire(ctx context.Context, op chaos.Op, p *proc) (chaos.Op, *seatdv1.AcquireSeatResponse) {
	op.Start = time.Now()
	ctx, cancel := callCtx(ctx)
	defer cancel()
	resp, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: c.key,
		Fingerprint: fmt.Sprintf("client-%d-%d", op.Client, op.Start.UnixNano()),
		User:        op.User, Hostname: op.Host, Feature: op.Feature})
	op.End = time.Now()
	op.Outcome, op.Reason = rpcOutcome(err)
	op.Rule = ruleOf(err)
	if err == nil {
		op.Lease, op.Deadline, op.Grant = resp.GetLease().GetId(), resp.GetLease().GetExpiresAt().AsTime(), resp.GetLease().GetGrantId()
	}
	c.hist.Add(op)
	return op, resp
}

func (c *policyClients) heartbeat(ctx context.Context, g chaos.Op, l *seatdv1.AcquireSeatResponse, p *proc) {
	op := chaos.Op{Client: g.Client, Kind: chaos.Heartbeat, License: g.License, Lease: g.Lease, Start: time.Now()}
	resp, err := p.heartbeat(ctx, l)
	op.End = time.Now()
	op.Outcome, op.Reason = rpcOutcome(err)
	if err == nil {
		op.Deadline = resp.GetExpiresAt().AsTime()
	}
	c.hist.Add(op)
	if err != nil {
		c.t.Errorf("heartbeat %s: %v", g.Lease, err)
	}
}

func (c *policyClients) release(ctx context.Context, g chaos.Op, l *seatdv1.AcquireSeatResponse, p *proc) {
	op := chaos.Op{Client: g.Client, Kind: chaos.Release, License: g.License, Lease: g.Lease, Start: time.Now()}
	resp, err := p.release(ctx, l)
	op.End = time.Now()
	op.Outcome, op.Reason = rpcOutcome(err)
	if err == nil {
		op.State = stateName(resp.GetLease().GetState())
	}
	c.hist.Add(op)
	if err != nil {
		c.t.Errorf("release %s: %v", g.Lease, err)
	}
}

// ruleOf is the "rule" of a refusal's ErrorInfo metadata: the index of
// the site-policy rule that refused ("" none).
func ruleOf(err error) string {
	if err == nil {
		return ""
	}
	return errorInfo(status.Convert(err)).GetMetadata()["rule"]
}

// createFeatureGrant creates a grant of feature with seats on a license.
func createFeatureGrant(t testing.TB, p *proc, licenseID, feature string, seats int32) chaos.Grant {
	t.Helper()
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	resp, err := p.admin().CreateFeatureGrant(p.asOperator(ctx), &seatdv1.CreateFeatureGrantRequest{
		LicenseId: licenseID, Grant: &seatdv1.FeatureGrant{Feature: feature, Seats: seats}})
	require.NoError(t, err, "create grant of %s", feature)
	g := resp.GetGrant()
	return chaos.Grant{ID: g.GetId(), License: licenseID, Feature: feature, Limit: int(g.GetSeats() + g.GetOverdraft())}
}

// setSitePolicy puts the groups of pol (a group its rules name as a group
// holds users, as a host group hosts) and sets pol as the license's site
// policy.
func setSitePolicy(t testing.TB, p *proc, licenseID string, pol chaos.Policy) {
	t.Helper()
	subjectKinds := map[chaos.SubjectKind]seatdv1.PolicySubject_Kind{chaos.User: seatdv1.PolicySubject_KIND_USER,
		chaos.Host: seatdv1.PolicySubject_KIND_HOST, chaos.Group: seatdv1.PolicySubject_KIND_GROUP, chaos.HostGroup: seatdv1.PolicySubject_KIND_HOST_GROUP}
	ruleKinds := map[chaos.RuleKind]seatdv1.PolicyRule_Kind{chaos.Reserve: seatdv1.PolicyRule_KIND_RESERVE,
		chaos.Max: seatdv1.PolicyRule_KIND_MAX, chaos.Include: seatdv1.PolicyRule_KIND_INCLUDE, chaos.Exclude: seatdv1.PolicyRule_KIND_EXCLUDE}
	groupKinds := map[string]seatdv1.IdentityGroup_Kind{}
	var rules []*seatdv1.PolicyRule
	for _, r := range pol.Rules {
		switch r.Subject.Kind {
		case chaos.Group:
			groupKinds[r.Subject.Name] = seatdv1.IdentityGroup_KIND_USERS
		case chaos.HostGroup:
			groupKinds[r.Subject.Name] = seatdv1.IdentityGroup_KIND_HOSTS
		}
		rules = append(rules, &seatdv1.PolicyRule{Kind: ruleKinds[r.Kind], Feature: r.Feature, Count: int32(r.Count),
			EachMember: r.EachMember, Subject: &seatdv1.PolicySubject{Kind: subjectKinds[r.Subject.Kind], Name: r.Subject.Name}})
	}
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	ctx = p.asOperator(ctx)
	for _, name := range sortedKeys(groupKinds) {
		_, err := p.admin().PutGroup(ctx, &seatdv1.PutGroupRequest{Group: &seatdv1.IdentityGroup{
			Name: name, Kind: groupKinds[name], Members: pol.Groups[name]}})
		require.NoError(t, err, "put group %s", name)
	}
	_, err := p.admin().SetLicensePolicy(ctx, &seatdv1.SetLicensePolicyRequest{LicenseId: licenseID,
		Policy: &seatdv1.LicensePolicy{Rules: rules}})
	require.NoError(t, err, "set the site policy of license %s", licenseID)
}

// chaosRecords are the records of the leases of pools (a license, its
// grants) for package chaos: state, end, events and identity.
func chaosRecords(t testing.TB, db *pgx.Conn, pools []string) map[string]chaos.Record {
	t.Helper()
	type extra struct {
		user, host string
		ended      *time.Time
	}
	more := map[string]extra{}
	rows, err := db.Query(t.Context(), `SELECT id, "user", hostname, ended_at FROM sessions WHERE license_id = ANY($1)`, pools)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var e extra
		require.NoError(t, rows.Scan(&id, &e.user, &e.host, &e.ended))
		more[id] = e
	}
	require.NoError(t, rows.Err())
	recs := map[string]chaos.Record{}
	for id, r := range leaseRecords(t, db, pools...) {
		e := more[id]
		rec := chaos.Record{ID: id, License: r.LicenseID, State: r.State, UsageEvents: r.UsageEvents,
			CleanupEvents: r.CleanupEvents, User: e.user, Host: e.host}
		if e.ended != nil {
			rec.EndedAt = *e.ended
		}
		recs[id] = rec
	}
	return recs
}

// policySampler reads the active leases of a license's pools from the
// record, one statement at a time, and judges each snapshot.
type policySampler struct {
	db       *pgx.Conn
	license  string
	pools    []string
	limit    int
	pol      chaos.Policy
	mu       sync.Mutex // the connection: the loop's, or snapshot's
	stopping chan struct{}
	halt     func() // closes stopping, once
	done     chan struct{}
	samples  int
	bad      []string
	err      error
}

func startPolicySampler(t *testing.T, db *pgx.Conn, license string, pools []string, limit int, pol chaos.Policy) *policySampler {
	s := &policySampler{db: db, license: license, pools: pools, limit: limit, pol: pol,
		stopping: make(chan struct{}), done: make(chan struct{})}
	s.halt = sync.OnceFunc(func() { close(s.stopping) })
	// A test that fails stops the sampler before its connection closes
	// (the cleanups run last in, first out).
	t.Cleanup(func() { s.halt(); <-s.done })
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stopping:
				return
			case <-time.After(2 * time.Millisecond): // pace: leave the machine to the instances
			}
			s.mu.Lock()
			hs, err := s.read()
			if err == nil {
				s.judge(hs)
			}
			s.mu.Unlock()
			if err != nil {
				s.err = err
				return
			}
		}
	}()
	return s
}

// read is one snapshot: the active leases of the pools, with the
// reservation each took.
func (s *policySampler) read() ([]chaos.Holder, error) {
	rows, err := s.db.Query(context.Background(),
		`SELECT id, "user", hostname, feature, reservation FROM sessions WHERE license_id = ANY($1) AND state = 'active'`, s.pools)
	if err != nil {
		return nil, err
	}
	var out []chaos.Holder
	for rows.Next() {
		var h chaos.Holder
		var reservation []byte
		if err := rows.Scan(&h.Lease, &h.User, &h.Host, &h.Feature, &reservation); err != nil {
			return nil, err
		}
		h.Reserved = reservedRule(s.pol, h.Feature, reservation)
		out = append(out, h)
	}
	return out, rows.Err()
}

func (s *policySampler) judge(hs []chaos.Holder) {
	s.samples++
	for _, v := range chaos.CheckHolders(s.pol, s.license, s.limit, time.Now(), hs) {
		if len(s.bad) < 20 {
			s.bad = append(s.bad, v.String())
		}
	}
}

// snapshot reads and judges one snapshot now.
func (s *policySampler) snapshot(t *testing.T) []chaos.Holder {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	hs, err := s.read()
	require.NoError(t, err, "read the active leases")
	s.judge(hs)
	return hs
}

// stop ends the sampling and fails the test on what it found (going on:
// the history's verdict follows); it returns how many snapshots were
// judged.
func (s *policySampler) stop(t *testing.T) int {
	t.Helper()
	s.halt()
	<-s.done
	require.NoError(t, s.err, "sampler")
	for _, v := range s.bad {
		t.Errorf("a snapshot of the record breaks the policy: %s", v)
	}
	return s.samples
}

// reservedRule is the index of the reserve rule of feature's pool whose
// key the store recorded with a lease (server.Reservation.Key: "r:", the
// subject's kind, a NUL, its name): -1 for none (a shared seat), and
// len(pol.Rules), which CheckHolders refuses, for a key no rule has.
func reservedRule(pol chaos.Policy, feature string, key []byte) int {
	if len(key) == 0 {
		return -1
	}
	kind, name, ok := strings.Cut(strings.TrimPrefix(string(key), "r:"), "\x00")
	for i, r := range pol.Rules {
		if ok && r.Kind == chaos.Reserve && r.Feature == feature && string(r.Subject.Kind) == kind && r.Subject.Name == name {
			return i
		}
	}
	return len(pol.Rules)
}
