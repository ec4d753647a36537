package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatd/seatd/e2e/chaos"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestChaos is seatd's randomized fault campaign: a private PostgreSQL and
// Redis, three seatd instances, clients that acquire, heartbeat (unary and
// stream), release, wait for seats, sleep past their deadlines and probe
// leases they were told had ended, while a nemesis kills and restarts
// instances, empties, pauses and restarts Redis, cuts every connection to
// it again and again, stalls PostgreSQL and makes Redis refuse scripts as
// the stall ends, restarts PostgreSQL, cuts the leader's lock connection, revokes
// leases and switches licenses off and on. Two of the three licenses hold
// feature grants (campaignGrants: several versions of one feature, one
// grant expiring mid-run, one starting mid-run) and half the clients'
// requests on them ask for the feature at a version; one has a site
// policy that bites (campaignPolicy: every request claims a user and a
// host, some of those its rules name). Every operation is recorded;
// package chaos checks the history and the final records, the seat limit
// per pool (each license's base seats, each grant's) and the policy's
// reservations, caps, includes, excludes and refusal reasons.
//
// CHAOS_DURATION (default 60s; the nemesis goes on until every fault kind
// was injected once) and CHAOS_SEED (default fixed, so that make test
// always runs the same schedule) set the run; `make chaos` runs it longer
// with a random seed, printed. A seed replays the same schedule of faults
// and client choices (not the same timing). The verdict requires minimum
// counts of grants, heartbeats and faults (chaos.MinimumsFor), and every
// refusal of a policy once.
func TestChaos(t *testing.T) {
	t.Parallel()
	dur := 60 * time.Second
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "CHAOS_DURATION")
		dur = d
	}
	seed := uint64(20261125) // make test's run: always the same schedule
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "CHAOS_SEED")
		seed = s
	}
	t.Logf("chaos: seed %d, %v (replay: CHAOS_SEED=%d CHAOS_DURATION=%v make chaos)", seed, dur, seed, dur)

	c := newCampaign(t, seed)
	c.createGrants(dur)
	c.run(dur)
	want := chaos.MinimumsFor(dur, faultKinds)
	want.PolicyRefusals = chaos.PolicyReasons // license 2's policy must bite
	c.verdict(want)
}

const (
	// --heartbeat-flush-interval: longer than a deployment would pick for
	// such short TTLs, so that the write-behind's bound (and the rebuild's
	// slack) is wide enough for the nemesis to land in it often.
	chaosFlush    = 5 * time.Second
	chaosCallTime = 3 * time.Second
	chaosClients  = 30
	chaosWaitHold = 3 * time.Second
	// chaosBound: how much of an acknowledged deadline a fault may take (the
	// flush interval, its +1s rebuild slack's own margin, clock tolerance).
	chaosBound = chaosFlush + 250*time.Millisecond
)

// instanceArgs are the flags of every seatd of the campaign.
var instanceArgs = []string{
	"--heartbeat-flush-interval", chaosFlush.String(),
	// Scheduled cleanup as rarely as a real deployment's (60 s by default):
	// lapsed leases stay active in the record meanwhile, which is when a
	// Redis loss can wrongly bring them back. The campaign's end runs a
	// cleanup itself.
	"--cleanup-interval", "30s",
	"--leader-ping-interval", "300ms", "--leader-retry-interval", "500ms",
	"--wait-hold", chaosWaitHold.String(), "--shutdown-timeout", "5s",
	// The webhook receiver is on loopback (chaos_webhooks_test.go).
	"--webhook-allow-private-addresses",
}

type campaign struct {
	t      *testing.T
	rng    *rand.Rand
	rngMu  sync.Mutex
	pg     *pgCluster
	redis  *redisServer
	b      *backend
	hist   chaos.History
	limits map[string]int
	keys   []string // license keys, by index
	ids    []string // license ids, by index
	grants map[string]chaos.Grant
	// policies are the licenses' site policies, by license id.
	policies map[string]chaos.Policy
	asks     map[int]featureAsks // by license index: what its clients' feature requests ask
	taken    map[string]int      // OK grants by pool label, for the summary
	labels   map[string]string   // pool id -> label

	mu    sync.Mutex
	procs []*proc // by instance index; replaced on restart
	names []string

	live     sync.Map // lease id -> *seatdv1.AcquireSeatResponse, for the nemesis's revokes
	faults   map[string]int
	faultLog []string // "start end kind", for CHAOS_TRACE
	ops      map[string]int
	opsMu    sync.Mutex
	stopped  atomic.Bool

	// The webhook receiver, the tenant its endpoint is of, and what the
	// drain after the campaign left unsettled (chaos_webhooks_test.go).
	hooks     *chaosReceiver
	tenant    string
	unsettled []string
	drained   time.Duration
}

func newCampaign(t *testing.T, seed uint64) *campaign {
	c := &campaign{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		limits: map[string]int{}, faults: map[string]int{}, ops: map[string]int{},
		grants: map[string]chaos.Grant{}, asks: map[int]featureAsks{}, taken: map[string]int{}, labels: map[string]string{}}
	c.pg = startPrivatePostgres(t)
	c.redis = startPrivateRedis(t)
	c.b = privateBackend(c.pg, c.redis.URL())
	base := "chaos-" + randomHex(3)
	for i := range 3 {
		c.names = append(c.names, fmt.Sprintf("%s-%d", base, i))
		c.procs = append(c.procs, c.b.startSeatd(t, c.names[i], instanceArgs...))
	}
	// Every event of the campaign's tenant goes to the receiver: its
	// endpoint is made before anything reports one.
	c.hooks = newChaosReceiver(t, seed)
	c.tenant = c.hooks.register(t, c.procs[0])
	for i, seats := range []int32{2, 5, 10} {
		ttl := time.Duration(8+c.intn(5)) * time.Second
		lic := newLicense(t, c.procs[0], seats, ttl, fmt.Sprintf("chaos-%d", i))
		c.keys, c.ids = append(c.keys, lic.GetKey()), append(c.ids, lic.GetId())
		c.limits[lic.GetId()] = int(seats)
		c.labels[lic.GetId()] = fmt.Sprintf("chaos-%d base", i)
	}
	return c
}

// featureAsks are the feature a license's clients ask for and the
// versions they ask it at ("": any), some covered by one grant only,
// some by several, some by none (VERSION_NOT_LICENSED).
type featureAsks struct {
	feature  string
	versions []string
}

// campaignGrant is a grant the campaign creates; starts and expires say
// when, from the campaign's start, given its duration (nil: none).
type campaignGrant struct {
	license          int
	feature, version string
	seats, overdraft int32
	starts, expires  func(time.Duration) time.Duration
}

func halfWay(d time.Duration) time.Duration    { return d / 2 }
func quarterWay(d time.Duration) time.Duration { return d / 4 }
func afterTheRun(d time.Duration) time.Duration {
	return d + nemesisOver + time.Hour // the nemesis may go on past d
}

// campaignGrants: "render" on license 1 with three grants, in pick order
// 2024 (expires half-way: its leases end at their next heartbeat, later
// 2024 requests go to the next grant), 2025.10 (expires after the run),
// 2025 (never; 2025.3 is covered by 2025.10 only: numeric components);
// "sim" on license 2 with a grant of every version and one of up to 3
// that starts a quarter of the way in (before that it never grants);
// license 2 has a site policy too (createGrants).
var campaignGrants = []campaignGrant{
	{license: 1, feature: "render", version: "2024", seats: 1, overdraft: 1, expires: halfWay},
	{license: 1, feature: "render", version: "2025", seats: 2},
	{license: 1, feature: "render", version: "2025.10", seats: 1, expires: afterTheRun},
	{license: 2, feature: "sim", seats: 2},
	{license: 2, feature: "sim", version: "3", seats: 1, starts: quarterWay},
}

var campaignAsks = map[int]featureAsks{
	1: {"render", []string{"", "2023", "2024", "2024.5", "2025", "2025.3", "2025.10", "2026"}},
	2: {"sim", []string{"", "2", "3", "3.0.1", "4"}},
}

// createGrants creates campaignGrants for a campaign of duration d.
func (c *campaign) createGrants(d time.Duration) {
	t := c.t
	now := time.Now()
	at := func(when func(time.Duration) time.Duration) *timestamppb.Timestamp {
		if when == nil {
			return nil
		}
		return timestamppb.New(now.Add(when(d)))
	}
	p := c.procs[0]
	for _, cg := range campaignGrants {
		ctx, cancel := callCtx(t.Context())
		resp, err := p.admin().CreateFeatureGrant(p.asOperator(ctx), &seatdv1.CreateFeatureGrantRequest{
			LicenseId: c.ids[cg.license], Grant: &seatdv1.FeatureGrant{Feature: cg.feature, Version: cg.version,
				Seats: cg.seats, Overdraft: cg.overdraft, StartsAt: at(cg.starts), ExpiresAt: at(cg.expires)}})
		cancel()
		require.NoError(t, err, "create grant %+v", cg)
		g := resp.GetGrant()
		cgr := chaos.Grant{ID: g.GetId(), License: c.ids[cg.license], Feature: g.GetFeature(), Version: g.GetVersion(),
			Limit: int(g.GetSeats() + g.GetOverdraft())}
		if g.StartsAt != nil {
			cgr.StartsAt = g.GetStartsAt().AsTime()
		}
		if g.ExpiresAt != nil {
			cgr.ExpiresAt = g.GetExpiresAt().AsTime()
		}
		c.grants[cgr.ID] = cgr
		c.labels[cgr.ID] = fmt.Sprintf("chaos-%d %s<=%s", cg.license, cgr.Feature, chaosVersion(cgr.Version))
		t.Logf("chaos: grant %s: %s up to version %s, %d+%d seats, starts %s, expires %s", cgr.ID, cgr.Feature,
			chaosVersion(cgr.Version), g.GetSeats(), g.GetOverdraft(), chaosTime(cgr.StartsAt), chaosTime(cgr.ExpiresAt))
	}
	c.asks = campaignAsks

	// License 2 has a site policy that bites (campaignPolicy): the
	// clients claim users and hosts (campaignUsers, campaignHosts) that its
	// reservations, caps, includes and excludes name; every acquisition of
	// it, of its base pool and of its feature, is judged with the policy
	// index, which each loss of Redis makes rebuild.
	setSitePolicy(t, p, c.ids[2], campaignPolicy)
	c.policies = map[string]chaos.Policy{c.ids[2]: campaignPolicy}
}

// campaignPolicy is license 2's site policy: of its 10 base seats, 5 kept
// for the night shift (whose member cy never asks, and the others hold one
// each: 3 always stay kept) and 4 for the render farm's 3 hosts (one each),
// so that the others share one and mostly find it taken (SEATS_RESERVED,
// met in any run); caps on each
// member of the night, on the interns together, on each farm host, on a
// user and on a host, an exclude; on "sim" (3 seats at most), includes of
// the night, the farm and a user, an exclude that wins over an include, a
// user's cap and the farm's together.
var campaignPolicy = chaos.Policy{
	Rules: []chaos.Rule{
		{Kind: chaos.Reserve, Count: 5, Subject: chaos.Subject{Kind: chaos.Group, Name: "night"}},                  // 0
		{Kind: chaos.Reserve, Count: 4, Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}},               // 1
		{Kind: chaos.Max, Count: 1, Subject: chaos.Subject{Kind: chaos.Group, Name: "night"}, EachMember: true},    // 2
		{Kind: chaos.Max, Count: 2, Subject: chaos.Subject{Kind: chaos.Group, Name: "interns"}},                    // 3
		{Kind: chaos.Max, Count: 1, Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}, EachMember: true}, // 4
		{Kind: chaos.Max, Count: 2, Subject: chaos.Subject{Kind: chaos.User, Name: "zed"}},                         // 5
		{Kind: chaos.Max, Count: 1, Subject: chaos.Subject{Kind: chaos.Host, Name: "kiosk"}},                       // 6
		{Kind: chaos.Exclude, Subject: chaos.Subject{Kind: chaos.User, Name: "mallory"}},                           // 7
		{Kind: chaos.Include, Feature: "sim", Subject: chaos.Subject{Kind: chaos.Group, Name: "night"}},            // 8
		{Kind: chaos.Include, Feature: "sim", Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}},         // 9
		{Kind: chaos.Include, Feature: "sim", Subject: chaos.Subject{Kind: chaos.User, Name: "ivy"}},               // 10
		{Kind: chaos.Exclude, Feature: "sim", Subject: chaos.Subject{Kind: chaos.User, Name: "ben"}},               // 11
		{Kind: chaos.Max, Feature: "sim", Count: 1, Subject: chaos.Subject{Kind: chaos.User, Name: "ann"}},         // 12
		{Kind: chaos.Max, Feature: "sim", Count: 1, Subject: chaos.Subject{Kind: chaos.HostGroup, Name: "farm"}},   // 13
	},
	Groups: map[string][]string{"night": {"ann", "ben", "cy"}, "interns": {"ivy", "joe", "kim"}, "farm": {"farm-1", "farm-2", "farm-3"}},
}

// The users and hosts the clients claim, one of each at random per
// request (of any license): members of the policy's groups, the users and
// hosts its rules name (hosts in another case too), and others; "ws" is
// the client's own workstation, ws-<client>.
var (
	campaignUsers = []string{"ann", "ben", "ivy", "joe", "kim", "zed", "mallory", "uma", ""}
	campaignHosts = []string{"farm-1", "FARM-2", "farm-3", "kiosk", "Kiosk", "ws", ""}
)

// identity is the user and host of a client's next request.
func (c *campaign) identity(client int) (user, host string) {
	user, host = campaignUsers[c.intn(len(campaignUsers))], campaignHosts[c.intn(len(campaignHosts))]
	if host == "ws" {
		host = fmt.Sprintf("ws-%d", client)
	}
	return user, host
}

func chaosVersion(v string) string {
	if v == "" {
		return "any"
	}
	return v
}

func chaosTime(at time.Time) string {
	if at.IsZero() {
		return "-"
	}
	return at.Format("15:04:05.000")
}

// ask is what a client's next request asks for on license li: half the
// requests on a license with features name one at a version.
func (c *campaign) ask(li int) (feature, version string) {
	a, ok := c.asks[li]
	if !ok || c.intn(2) == 0 {
		return "", ""
	}
	return a.feature, a.versions[c.intn(len(a.versions))]
}

func (c *campaign) countGrant(op chaos.Op) {
	if op.Outcome == chaos.OK {
		c.count(c.taken, c.labels[op.Pool()])
	}
}

func (c *campaign) intn(n int) int {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.rng.IntN(n)
}

func (c *campaign) inst() *proc {
	i := c.intn(3)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[i]
}

func (c *campaign) count(m map[string]int, k string) {
	c.opsMu.Lock()
	m[k]++
	c.opsMu.Unlock()
}

// run drives the clients and the nemesis for d, then heals everything and
// lets every lease end.
func (c *campaign) run(d time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range chaosClients {
		wg.Go(func() { c.client(ctx, i) })
	}
	c.nemesis(d) // in the test goroutine: it starts and stops processes
	cancel()
	c.stopped.Store(true)
	wg.Wait()
	c.heal()
}

// ---- clients ----

// outcome turns an RPC error into the history's terms.
func rpcOutcome(err error) (chaos.Outcome, string) {
	if err == nil {
		return chaos.OK, ""
	}
	st := status.Convert(err)
	reason := st.Code().String()
	if info := errorInfo(st); info != nil && info.GetReason() != "" {
		reason = info.GetReason()
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal, codes.Aborted:
		return chaos.Unknown, reason
	}
	return chaos.Failed, reason
}

func (c *campaign) record(op chaos.Op, err error) chaos.Op {
	op.End = time.Now()
	op.Outcome, op.Reason = rpcOutcome(err)
	op.Rule = ruleOf(err)
	c.hist.Add(op)
	c.count(c.ops, strings.TrimSpace(string(op.Kind)+" "+op.Outcome.String()+" "+op.Reason))
	return op
}

func (c *campaign) client(ctx context.Context, id int) {
	for n := 0; ctx.Err() == nil; n++ {
		li := c.intn(len(c.keys))
		fp := fmt.Sprintf("c%d-%d", id, n)
		feature, version := c.ask(li)
		user, host := c.identity(id)
		var l *seatdv1.AcquireSeatResponse
		if c.intn(5) == 0 {
			l = c.waitForSeat(ctx, id, li, fp, feature, version, user, host)
		} else {
			l = c.acquire(ctx, id, li, fp, feature, version, user, host)
		}
		if l == nil {
			sleepCtx(ctx, time.Duration(200+c.intn(400))*time.Millisecond)
			continue
		}
		c.live.Store(l.GetLease().GetId(), l)
		c.hold(ctx, id, li, l)
		c.live.Delete(l.GetLease().GetId())
	}
}

func (c *campaign) acquire(ctx context.Context, client, li int, fp, feature, version, user, host string) *seatdv1.AcquireSeatResponse {
	op := chaos.Op{Client: client, Kind: chaos.Acquire, License: c.ids[li], Feature: feature, Version: version,
		User: user, Host: host, Start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, chaosCallTime)
	defer cancel()
	resp, err := c.inst().seats().AcquireSeat(cctx, &seatdv1.AcquireSeatRequest{LicenseKey: c.keys[li], Fingerprint: fp,
		Feature: feature, Version: version, User: user, Hostname: host})
	if err == nil {
		op.Lease, op.Deadline, op.Grant = resp.GetLease().GetId(), resp.GetLease().GetExpiresAt().AsTime(), resp.GetLease().GetGrantId()
	}
	c.countGrant(c.record(op, err))
	return resp
}

func (c *campaign) waitForSeat(ctx context.Context, client, li int, fp, feature, version, user, host string) *seatdv1.AcquireSeatResponse {
	op := chaos.Op{Client: client, Kind: chaos.Wait, License: c.ids[li], Feature: feature, Version: version,
		User: user, Host: host, Start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, 4*chaosCallTime)
	defer cancel()
	stream, err := c.inst().seats().WaitForSeat(cctx, &seatdv1.WaitForSeatRequest{LicenseKey: c.keys[li], Fingerprint: fp,
		Feature: feature, Version: version, User: user, Hostname: host})
	var grant *seatdv1.AcquireSeatResponse
	for err == nil && grant == nil {
		var msg *seatdv1.WaitForSeatResponse
		msg, err = stream.Recv()
		if err == nil {
			grant = msg.GetGranted()
		}
	}
	if errors.Is(err, io.EOF) {
		err = status.Error(codes.Unavailable, "stream ended without a seat")
	}
	if grant != nil {
		err = nil
		op.Lease, op.Deadline, op.Grant = grant.GetLease().GetId(), grant.GetLease().GetExpiresAt().AsTime(), grant.GetLease().GetGrantId()
	}
	c.countGrant(c.record(op, err))
	return grant
}

// hold keeps a lease for a while the way clients do, with their faults:
// heartbeats (unary, or a stream), sometimes a sleep past the deadline,
// sometimes one more heartbeat after being told the lease ended; then a
// release, or nothing (a crash).
func (c *campaign) hold(ctx context.Context, client, li int, l *seatdv1.AcquireSeatResponse) {
	ttl := l.GetLease().GetExpiresAt().AsTime().Sub(l.GetLease().GetLastHeartbeatAt().AsTime())
	every := ttl / 6
	beats := 2 + c.intn(8)
	viaStream := c.intn(4) == 0
	for i := 0; i < beats && ctx.Err() == nil; i++ {
		pause := every/2 + time.Duration(c.intn(int(every)))
		if i == 0 {
			pause = 0 // confirm at once (a waiter's grant must be, within --wait-hold)
		}
		if c.intn(10) == 0 {
			// The laptop sleeps past its deadline, mostly just past it:
			// then told LEASE_EXPIRED, it probes the lease while the
			// nemesis may be emptying Redis.
			pause = ttl + time.Duration(c.intn(1500))*time.Millisecond
			if c.intn(3) == 0 {
				pause += ttl / 2
			}
		}
		sleepCtx(ctx, pause)
		var op chaos.Op
		if viaStream {
			op = c.streamBeat(ctx, client, li, l)
		} else {
			op = c.beat(ctx, client, li, l)
		}
		if op.Outcome == chaos.Failed {
			c.probe(ctx, client, li, l)
			return
		}
	}
	if ctx.Err() != nil || c.intn(4) == 0 {
		return // crashed: the lease is a zombie
	}
	op := chaos.Op{Client: client, Kind: chaos.Release, License: c.ids[li], Lease: l.GetLease().GetId(), Start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, chaosCallTime)
	defer cancel()
	resp, err := c.inst().seats().ReleaseSeat(cctx, &seatdv1.ReleaseSeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
	if err == nil {
		op.State = stateName(resp.GetLease().GetState())
	}
	op = c.record(op, err)
	if op.Outcome != chaos.Failed {
		c.probe(ctx, client, li, l)
	}
}

// probe heartbeats, now and then for a few seconds, a lease the client was
// told ended (or released): it must never come back, whatever the nemesis
// does meanwhile (a rebuild after a Redis loss, a retry, a revival).
func (c *campaign) probe(ctx context.Context, client, li int, l *seatdv1.AcquireSeatResponse) {
	if c.intn(4) == 0 {
		return
	}
	for range 4 + c.intn(12) {
		sleepCtx(ctx, time.Duration(300+c.intn(300))*time.Millisecond)
		if op := c.beat(ctx, client, li, l); op.Outcome == chaos.OK {
			return // a violation already; the checker reports it
		}
	}
}

func (c *campaign) beat(ctx context.Context, client, li int, l *seatdv1.AcquireSeatResponse) chaos.Op {
	op := chaos.Op{Client: client, Kind: chaos.Heartbeat, License: c.ids[li], Lease: l.GetLease().GetId(), Start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, chaosCallTime)
	defer cancel()
	resp, err := c.inst().heartbeats().Heartbeat(cctx, &seatdv1.HeartbeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
	if err == nil {
		op.Deadline = resp.GetExpiresAt().AsTime()
	}
	return c.record(op, err)
}

// streamBeat sends one ping on a new heartbeat stream and reads its answer.
func (c *campaign) streamBeat(ctx context.Context, client, li int, l *seatdv1.AcquireSeatResponse) chaos.Op {
	op := chaos.Op{Client: client, Kind: chaos.Heartbeat, License: c.ids[li], Lease: l.GetLease().GetId(), Start: time.Now()}
	cctx, cancel := context.WithTimeout(ctx, chaosCallTime)
	defer cancel()
	stream, err := c.inst().heartbeats().HeartbeatStream(cctx)
	if err == nil {
		err = stream.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
	}
	var resp *seatdv1.HeartbeatStreamResponse
	if err == nil {
		resp, err = stream.Recv()
	}
	if err != nil {
		return c.record(op, err)
	}
	_ = stream.CloseSend()
	switch resp.GetSignal() {
	case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_UNSPECIFIED:
		op.Deadline = resp.GetExpiresAt().AsTime()
		return c.record(op, nil)
	case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_EXPIRED:
		return c.recordAs(op, chaos.Failed, chaos.ReasonExpired)
	case seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED:
		return c.recordAs(op, chaos.Failed, chaos.ReasonRevoked)
	}
	return c.recordAs(op, chaos.Unknown, resp.GetSignal().String()) // RECONNECT
}

// recordAs records an operation whose outcome the caller worked out.
func (c *campaign) recordAs(op chaos.Op, out chaos.Outcome, reason string) chaos.Op {
	op.End = time.Now()
	op.Outcome, op.Reason = out, reason
	c.hist.Add(op)
	c.count(c.ops, strings.TrimSpace(string(op.Kind)+" "+op.Outcome.String()+" "+op.Reason))
	return op
}

// ---- the nemesis ----

// nemesisOver is how long past its duration the nemesis may go on to
// inject every fault kind once: one round (14 faults, two of them followed
// by PostgreSQL's catching up) takes about 100 s, more on a loaded machine.
const nemesisOver = 5 * time.Minute

var faultKinds = []string{"kill-9", "sigterm", "redis-flushall", "redis-restart-empty", "redis-client-pause",
	"redis-connections-cut", "postgres-restart", "stall-then-redis-refuses", "leader-lock-cut", "revoke", "license-off-on"}

// nemesis injects one fault at a time until d has passed and every kind
// has been injected at least once (a short run lasts one round; a kind
// that could not be injected comes again in the next), or d + nemesisOver
// has: inject, hold 1-4 s, heal, let the system settle (after a PostgreSQL
// outage two flush intervals more, so that the write-behind has caught up
// before the next fault: a Redis loss right after a PostgreSQL outage is a
// double fault, outside the documented bound).
func (c *campaign) nemesis(d time.Duration) {
	end := time.Now().Add(d)
	hardEnd := end.Add(nemesisOver)
	missing := func() bool {
		c.opsMu.Lock()
		defer c.opsMu.Unlock()
		for _, k := range faultKinds {
			if c.faults[k] == 0 {
				return true
			}
		}
		return false
	}
	sleepCtx(context.Background(), 3*time.Second) // warm up
	// Redis faults come twice as often: they are where the live state and
	// the record can part.
	kinds := append(slices.Clone(faultKinds), "redis-flushall", "redis-restart-empty", "stall-then-redis-refuses")
	// Rounds of every kind in a seeded random order: a long run injects
	// each kind about as often as the others, never starving one.
	var round []string
	for now := time.Now(); now.Before(end) || (missing() && now.Before(hardEnd)); now = time.Now() {
		if len(round) == 0 {
			round = slices.Clone(kinds)
			c.rngMu.Lock()
			c.rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
			c.rngMu.Unlock()
		}
		kind := round[0]
		round = round[1:]
		hold := time.Duration(1000+c.intn(3000)) * time.Millisecond
		at := time.Now()
		if c.inject(kind, hold) {
			c.count(c.faults, kind)
			c.faultLog = append(c.faultLog, fmt.Sprintf("%s %s %s", at.Format("15:04:05.000"), time.Now().Format("15:04:05.000"), kind))
		}
		settle := time.Duration(1000+c.intn(1500)) * time.Millisecond
		if kind == "postgres-restart" || kind == "stall-then-redis-refuses" {
			// PostgreSQL took no flush meanwhile: let the write-behind catch
			// up before the next fault (a Redis loss now would be the double
			// fault the README's bound leaves out).
			settle += 2 * chaosFlush
		}
		sleepCtx(context.Background(), settle)
	}
}

func (c *campaign) inject(kind string, hold time.Duration) bool {
	t := c.t
	switch kind {
	case "kill-9", "sigterm":
		i := c.intn(3)
		c.mu.Lock()
		p := c.procs[i]
		c.mu.Unlock()
		sig := syscall.SIGKILL
		if kind == "sigterm" {
			sig = syscall.SIGTERM
		}
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(exitTimeout):
			t.Fatalf("chaos: seatd %s did not exit after %s", c.names[i], kind)
		}
		require.NotContains(t, p.Output(), "DATA RACE")
		sleepCtx(context.Background(), hold)
		np := c.b.startSeatd(t, c.names[i], instanceArgs...)
		c.mu.Lock()
		c.procs[i] = np
		c.mu.Unlock()
	case "redis-flushall":
		// Sometimes with a stall right after, as a failover can have: the
		// rebuilds that the loss sets off then wait in Redis next to the
		// ends that raced them.
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", c.redis.port), MaxRetries: -1})
		defer func() { _ = rdb.Close() }()
		if err := rdb.FlushAll(context.Background()).Err(); err != nil {
			return false
		}
		if c.intn(2) == 0 {
			sleepCtx(context.Background(), time.Duration(c.intn(30))*time.Millisecond)
			_ = rdb.Do(context.Background(), "CLIENT", "PAUSE", 300+c.intn(600), "ALL").Err()
		}
	case "redis-restart-empty":
		c.redis.kill()
		sleepCtx(context.Background(), hold)
		c.redis.restartEmpty()
	case "redis-client-pause":
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", c.redis.port), MaxRetries: -1})
		defer func() { _ = rdb.Close() }()
		ms := min(hold, 6*time.Second).Milliseconds()
		if err := rdb.Do(context.Background(), "CLIENT", "PAUSE", ms, "ALL").Err(); err != nil {
			return false
		}
		sleepCtx(context.Background(), time.Duration(ms)*time.Millisecond)
	case "redis-connections-cut":
		// A flapping network to Redis: every client connection is cut,
		// again and again, so that calls fail between any two of their
		// steps (a release recorded in PostgreSQL whose Redis step fails).
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", c.redis.port), MaxRetries: -1})
		defer func() { _ = rdb.Close() }()
		for stop := time.Now().Add(hold); time.Now().Before(stop); {
			_ = rdb.Do(context.Background(), "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err()
			sleepCtx(context.Background(), time.Duration(5+c.intn(25))*time.Millisecond)
		}
	case "stall-then-redis-refuses":
		// PostgreSQL stalls (a lock on the sessions table) while calls are
		// between their Redis and PostgreSQL steps; as the stall ends,
		// Redis refuses scripts for a moment, as a master demoted in a
		// failover does (nothing is lost): the calls' Redis steps after
		// their PostgreSQL ones fail.
		db := c.b.db(t)
		defer func() { _ = db.Close(context.Background()) }()
		tx, err := db.Begin(context.Background())
		if err != nil {
			return false
		}
		if _, err := tx.Exec(context.Background(), `LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE`); err != nil {
			_ = tx.Rollback(context.Background())
			return false
		}
		sleepCtx(context.Background(), time.Duration(1500+c.intn(1500))*time.Millisecond)
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", c.redis.port), MaxRetries: -1})
		defer func() { _ = rdb.Close() }()
		refusing := rdb.Do(context.Background(), "ACL", "SETUSER", "default", "-eval", "-evalsha").Err() == nil
		_ = tx.Commit(context.Background())
		sleepCtx(context.Background(), time.Duration(300+c.intn(900))*time.Millisecond)
		if refusing {
			for rdb.Do(context.Background(), "ACL", "SETUSER", "default", "+@all").Err() != nil {
				sleepCtx(context.Background(), 100*time.Millisecond)
			}
		}
	case "postgres-restart":
		c.pg.stop("fast")
		sleepCtx(context.Background(), hold)
		c.pg.start()
	case "leader-lock-cut":
		db := c.b.db(t)
		var n int
		err := db.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name LIKE 'seatd-leader %') x`).Scan(&n)
		_ = db.Close(context.Background())
		return err == nil && n > 0
	case "revoke":
		var target *seatdv1.AcquireSeatResponse
		c.live.Range(func(_, v any) bool { target = v.(*seatdv1.AcquireSeatResponse); return c.intn(3) != 0 })
		if target == nil {
			return false
		}
		p := c.inst()
		op := chaos.Op{Client: -1, Kind: chaos.Revoke, License: target.GetLease().GetLicenseId(), Lease: target.GetLease().GetId(), Start: time.Now()}
		ctx, cancel := context.WithTimeout(context.Background(), chaosCallTime)
		defer cancel()
		resp, err := p.admin().RevokeLease(p.asOperator(ctx), &seatdv1.RevokeLeaseRequest{LeaseId: target.GetLease().GetId()})
		if err == nil {
			op.State = stateName(resp.GetLease().GetState())
		}
		c.record(op, err)
	case "license-off-on":
		li := c.intn(len(c.ids))
		if !c.setActive(li, false) {
			return false
		}
		sleepCtx(context.Background(), hold)
		for !c.setActive(li, true) { // it must come back on
			sleepCtx(context.Background(), 500*time.Millisecond)
		}
	}
	return true
}

func (c *campaign) setActive(li int, on bool) bool {
	p := c.inst()
	ctx, cancel := context.WithTimeout(context.Background(), chaosCallTime)
	defer cancel()
	_, err := p.admin().UpdateLicense(p.asOperator(ctx), &seatdv1.UpdateLicenseRequest{
		License:    &seatdv1.License{Id: c.ids[li], Active: &on},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"active"}},
	})
	return err == nil
}

// heal brings every server back and lets every lease end: the clients
// are stopped, so after the longest TTL and a cleanup nothing is active.
func (c *campaign) heal() {
	t := c.t
	if !c.redisUp() {
		c.redis.restartEmpty()
	}
	c.mu.Lock()
	procs := append([]*proc(nil), c.procs...)
	c.mu.Unlock()
	// The longest TTL, a revival window of none, plus a flush, then clean.
	sleepCtx(context.Background(), 12*time.Second+2*chaosFlush)
	for _, p := range procs {
		var err error
		for range 20 {
			if _, err = p.cleanupNow(t.Context()); err == nil {
				break
			}
			sleepCtx(context.Background(), 500*time.Millisecond)
		}
		require.NoError(t, err, "cleanup after the campaign")
	}
	// The cleanup's lease.expired events, and every delivery still
	// retrying, reach the receiver before the seatds stop.
	c.unsettled, c.drained = c.drainWebhooks()
	stopAllOK(t, procs...)
}

func (c *campaign) redisUp() bool {
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", c.redis.port), MaxRetries: -1})
	defer func() { _ = rdb.Close() }()
	return rdb.Ping(context.Background()).Err() == nil
}

// ---- the verdict ----

// verdict checks the history and the records, and that the campaign did
// at least want (a history without grants, heartbeats or faults proves
// nothing, however clean).
func (c *campaign) verdict(want chaos.Minimums) {
	t := c.t
	db := c.b.db(t)
	recs := chaosRecords(t, db, append(slices.Clone(c.ids), sortedKeys(c.grants)...)) // a grant's leases are its pool's
	ops := c.hist.Ops()
	if path := os.Getenv("CHAOS_TRACE"); path != "" { // every op and fault, for a closer look
		var b strings.Builder
		for _, f := range c.faultLog {
			b.WriteString("fault " + f + "\n")
		}
		for _, op := range ops {
			b.WriteString(op.String() + "\n")
		}
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	}
	violations := chaos.Check(ops, c.limits, recs, chaos.Params{Bound: chaosBound, Final: true, WaitHold: chaosWaitHold,
		Flush: chaosFlush, Slack: chaosFlush + time.Second, // server.WriteBehindSlack for these TTLs
		Repair: chaosFlush + 2*chaosCallTime, // a stalled end records its time before the stall
		Grants: c.grants, Policies: c.policies})

	var summary strings.Builder
	fmt.Fprintf(&summary, "chaos summary: %d operations, %d leases recorded\n", len(ops), len(recs))
	for _, k := range sortedKeys(c.ops) {
		fmt.Fprintf(&summary, "  op    %-22s %d\n", k, c.ops[k])
	}
	for _, k := range sortedKeys(c.taken) {
		fmt.Fprintf(&summary, "  seats of %-24s %d granted\n", k, c.taken[k])
	}
	for _, k := range faultKinds {
		fmt.Fprintf(&summary, "  fault %-22s %d\n", k, c.faults[k])
	}
	violations = append(violations, c.webhookVerdict(db, recs, &summary)...)
	fmt.Fprintf(&summary, "  violations %d", len(violations))
	t.Log(summary.String())
	for _, s := range want.Shortfalls(ops, c.faults) {
		t.Errorf("the campaign did too little for its verdict to count: %s", s)
	}
	for i, v := range violations {
		if i == 20 {
			t.Errorf("... and %d more violations", len(violations)-20)
			break
		}
		t.Errorf("violation %s", v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func stateName(s seatdv1.LeaseState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "LEASE_STATE_"))
}
