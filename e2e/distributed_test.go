package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/redistest"
)

// grantAt is a granted lease and the instance that granted it.
type grantAt struct {
	resp *seatdv1.AcquireSeatResponse
	inst int
}

// wave is the result of many clients acquiring at once.
type wave struct {
	granted   []grantAt
	exhausted int
	maxInUse  int32 // highest seats_in_use in any answer, grant or refusal
}

// acquireWave runs n acquirers at once with distinct fingerprints
// <prefix>-<i>, spread round-robin over procs.
func acquireWave(t testing.TB, procs []*proc, key, prefix string, n int) wave {
	t.Helper()
	var (
		mu  sync.Mutex
		w   wave
		wg  sync.WaitGroup
		out = newTally()
	)
	startGun := make(chan struct{})
	for i := range n {
		inst := i % len(procs)
		wg.Go(func() {
			<-startGun
			resp, err := procs[inst].acquire(t.Context(), key, fmt.Sprintf("%s-%d", prefix, i))
			o := outcome(err)
			out.add(o)
			mu.Lock()
			defer mu.Unlock()
			switch o {
			case outOK:
				w.granted = append(w.granted, grantAt{resp, inst})
				w.maxInUse = max(w.maxInUse, resp.GetSeatsInUse())
			case outExhausted:
				w.exhausted++
				inUse, _ := strconv.Atoi(errorInfo(status.Convert(err)).GetMetadata()["seats_in_use"])
				w.maxInUse = max(w.maxInUse, int32(inUse))
			default:
				out.bad("acquire %s-%d on instance %d: %v", prefix, i, inst, err)
			}
		})
	}
	close(startGun)
	wg.Wait()
	out.requireNoUnexpected(t)
	return w
}

// TestDistributedSeatLimitThreeInstances: three instances on one schema and
// key prefix never grant more than the seat limit (invariant 1), whichever
// instance each of 500 concurrent clients reaches, and seats released on
// one instance are granted again, exactly as many, on the others.
func TestDistributedSeatLimitThreeInstances(t *testing.T) {
	t.Parallel()
	t.Run("Redis", func(t *testing.T) {
		t.Parallel()
		testSeatLimitThreeInstances(t, sharedBackend(t, ""))
	})
	// The same on a Redis Cluster of three masters: every script touches
	// one slot, and the instances agree across the masters.
	t.Run("RedisCluster", func(t *testing.T) {
		t.Parallel()
		testSeatLimitThreeInstances(t, sharedBackend(t, redistest.StartCluster(t, 3).URL()))
	})
}

func testSeatLimitThreeInstances(t *testing.T, b *backend) {
	const seats, clients = 10, 500
	procs := b.startCluster(t, 3, "limit")
	lic := newLicense(t, procs[0], seats, time.Minute, "three-instances")

	// A sampler watches the record: never more than `seats` active sessions.
	sampler := b.db(t)
	var maxActive atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan error, 1)
	samplerDone := make(chan struct{})
	stopSampler := sync.OnceFunc(func() { close(stopSampling) })
	// A test that fails stops the sampler before its connection closes
	// (the cleanups run last in, first out): a data race otherwise.
	t.Cleanup(func() { stopSampler(); <-samplerDone })
	go func() {
		var err error
		defer close(samplerDone)
		defer func() { sampled <- err }()
		for {
			select {
			case <-stopSampling:
				return
			default:
			}
			var n int64
			if err = sampler.QueryRow(context.Background(), `SELECT count(*) FROM sessions WHERE license_id = $1 AND state = 'active'`, lic.GetId()).Scan(&n); err != nil {
				return
			}
			if n > maxActive.Load() {
				maxActive.Store(n)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	w1 := acquireWave(t, procs, lic.GetKey(), "first", clients)
	require.Len(t, w1.granted, seats, "exactly the seat limit is granted")
	require.Equal(t, clients-seats, w1.exhausted, "everyone else gets RESOURCE_EXHAUSTED/SEATS_EXHAUSTED")
	require.LessOrEqual(t, w1.maxInUse, int32(seats), "seats_in_use never exceeds the limit")
	perInstance := map[int]int{}
	for _, g := range w1.granted {
		perInstance[g.inst]++
	}
	t.Logf("first wave: grants per instance %v, max seats_in_use %d", perInstance, w1.maxInUse)

	granted := map[string]bool{}
	for _, g := range w1.granted {
		granted[g.resp.GetLease().GetId()] = true
	}
	require.Len(t, granted, seats, "distinct leases")
	for i, p := range procs {
		active := p.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE)
		require.Len(t, active, seats, "ListLeases on instance %d", i)
		for _, l := range active {
			require.True(t, granted[l.GetId()], "instance %d lists lease %s that no client was granted", i, l.GetId())
		}
	}

	// Release five, each through an instance other than the one that
	// granted it.
	released := map[string]bool{}
	for _, g := range w1.granted[:5] {
		p := procs[(g.inst+1)%len(procs)]
		resp, err := p.release(t.Context(), g.resp)
		require.NoError(t, err, "release %s through another instance", g.resp.GetLease().GetId())
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_RELEASED, resp.GetLease().GetState())
		released[g.resp.GetLease().GetId()] = true
	}
	for i, p := range procs {
		require.Len(t, p.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE), seats-5, "active leases after releases, instance %d", i)
	}

	w2 := acquireWave(t, procs, lic.GetKey(), "second", clients)
	require.Len(t, w2.granted, 5, "exactly the released seats are granted again")
	require.Equal(t, clients-5, w2.exhausted)
	require.LessOrEqual(t, w2.maxInUse, int32(seats), "seats_in_use never exceeds the limit")

	stopSampler()
	require.NoError(t, <-sampled, "sampler")
	require.LessOrEqual(t, maxActive.Load(), int64(seats), "active sessions in PostgreSQL never exceed the limit")

	db := b.db(t)
	require.Equal(t, seats, countActive(t, db, lic.GetId()))
	recs := leaseRecords(t, db, lic.GetId())
	require.Len(t, recs, seats+5, "every grant is recorded once, no other lease")
	for id := range released {
		require.Equal(t, "released", recs[id].State, "lease %s", id)
		require.Equal(t, 1, recs[id].UsageEvents, "lease %s", id)
	}
	requireExactlyOnceRecords(t, db)
	stopAllOK(t, procs...)
}

// TestDistributedConcurrentCleanups: cleanup passes on three instances at
// once (several each) record every zombie exactly once (invariant 5) and
// together report each of them once.
func TestDistributedConcurrentCleanups(t *testing.T) {
	t.Parallel()
	const zombies, live = 20, 3
	b := sharedBackend(t, "")
	// --cleanup-interval 1h (harness default): the leader's only scheduled
	// pass runs when it is elected, before the zombies exist.
	procs := b.startCluster(t, 3, "cleaners")
	zlic := newLicense(t, procs[0], 50, time.Second, "zombies")
	llic := newLicense(t, procs[1], 10, time.Minute, "live")
	ctx := t.Context()

	var latest time.Time
	zombieIDs := map[string]bool{}
	for i := range zombies {
		a, err := procs[i%3].acquire(ctx, zlic.GetKey(), fmt.Sprintf("zombie-%d", i))
		require.NoError(t, err)
		zombieIDs[a.GetLease().GetId()] = true
		if d := a.GetLease().GetExpiresAt().AsTime(); d.After(latest) {
			latest = d
		}
	}
	var liveLeases []*seatdv1.AcquireSeatResponse
	for i := range live {
		a, err := procs[i%3].acquire(ctx, llic.GetKey(), fmt.Sprintf("live-%d", i))
		require.NoError(t, err)
		liveLeases = append(liveLeases, a)
	}
	time.Sleep(time.Until(latest) + 200*time.Millisecond) // TTL wait: every zombie is past its deadline

	burst := func() (expired int64, runs []*seatdv1.CleanupRun) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := newTally()
		startGun := make(chan struct{})
		for i := range 12 {
			p := procs[i%3]
			wg.Go(func() {
				<-startGun
				run, err := p.cleanupNow(ctx)
				if err != nil {
					errs.bad("Cleanup on %s: %v", p.GRPCAddr, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				expired += run.GetExpired()
				runs = append(runs, run)
			})
		}
		close(startGun)
		wg.Wait()
		errs.requireNoUnexpected(t)
		return expired, runs
	}
	expired, runs := burst()
	for _, r := range runs {
		require.Equal(t, "ok", r.GetResult(), "concurrent passes are safe, not failures: %v", r)
		require.Zero(t, r.GetErrors(), "run %v", r)
		require.Equal(t, "manual", r.GetTrigger())
	}
	require.EqualValues(t, zombies, expired, "the passes together expired each zombie once: %v", runs)
	again, _ := burst()
	require.Zero(t, again, "nothing left to expire")

	var cleaned float64
	for _, p := range procs {
		cleaned += p.metricSum(t, "seatd_zombies_cleaned_total")
	}
	require.EqualValues(t, zombies, cleaned, "seatd_zombies_cleaned_total summed over the instances")

	db := b.db(t)
	recs := leaseRecords(t, db, zlic.GetId(), llic.GetId())
	require.Len(t, recs, zombies+live)
	for id, r := range recs {
		if zombieIDs[id] {
			require.Equal(t, "expired", r.State, "zombie %s", id)
			require.True(t, r.Expired && r.Ended, "zombie %s has expired_at and ended_at", id)
			require.Equal(t, 1, r.UsageEvents, "zombie %s: usage events", id)
			require.Equal(t, "expired", r.UsageEndState, "zombie %s", id)
			require.Equal(t, 1, r.CleanupEvents, "zombie %s: cleanup events", id)
		} else {
			require.Equal(t, "active", r.State, "live lease %s is untouched", id)
			require.Zero(t, r.UsageEvents+r.CleanupEvents, "live lease %s has no events", id)
		}
	}
	requireExactlyOnceRecords(t, db)
	for _, l := range procs[2].leases(t, zlic.GetId(), seatdv1.LeaseState_LEASE_STATE_EXPIRED) {
		require.NotNil(t, l.GetEndedAt(), "expired lease %s has ended_at", l.GetId())
	}
	for i, l := range liveLeases {
		_, err := procs[(i+1)%3].heartbeat(ctx, l)
		require.NoError(t, err, "live lease still heartbeats")
	}
	stopAllOK(t, procs...)
}

// TestDistributedRESTWalkthrough: the REST gateway in distributed mode, a
// client reaching two instances behind a load balancer.
func TestDistributedRESTWalkthrough(t *testing.T) {
	t.Parallel()
	b := sharedBackend(t, "")
	procs := b.startCluster(t, 2, "rest")
	a, c := procs[0], procs[1]
	op := a.OperatorKey

	r := a.do(t, "POST", "/v1/admin/licenses", op, `{"seats":2,"leaseTtl":"30s","name":"rest-distributed"}`).requireCode(t, http.StatusOK)
	id, key := r.str(t, "id"), r.str(t, "key")
	require.EqualValues(t, 2, r.num(t, "seats"))
	c.do(t, "GET", "/v1/admin/licenses/"+id, op, nil).requireCode(t, http.StatusOK)

	acquire := func(p *proc, fp string) httpResp {
		return p.do(t, "POST", "/v1/leases", "", map[string]any{"licenseKey": key, "fingerprint": fp})
	}
	first := acquire(a, "fp-a").requireCode(t, http.StatusOK)
	firstID, firstToken := first.str(t, "lease.id"), first.str(t, "leaseToken")
	require.EqualValues(t, 1, first.num(t, "seatsInUse"))
	require.EqualValues(t, 2, first.num(t, "seatLimit"))
	second := acquire(c, "fp-b").requireCode(t, http.StatusOK)
	require.EqualValues(t, 2, second.num(t, "seatsInUse"), "the second instance counts the first one's seat")

	for _, p := range procs {
		full := acquire(p, "fp-c").requireCode(t, http.StatusTooManyRequests)
		require.Equal(t, "SEATS_EXHAUSTED", full.errorReason(), "body: %s", full.Raw)
	}
	again := acquire(c, "fp-a").requireCode(t, http.StatusOK)
	require.Equal(t, firstID, again.str(t, "lease.id"), "a retry through another instance gets the same lease")
	oldToken := firstToken
	firstToken = again.str(t, "leaseToken")
	stale := c.do(t, "POST", "/v1/leases/"+firstID+":heartbeat", "", map[string]any{"leaseToken": oldToken}).requireCode(t, http.StatusForbidden)
	require.Equal(t, "LEASE_TOKEN_INVALID", stale.errorReason(), "the retry's new token replaced the old one; body: %s", stale.Raw)

	hb := c.do(t, "POST", "/v1/leases/"+firstID+":heartbeat", "", map[string]any{"leaseToken": firstToken}).requireCode(t, http.StatusOK)
	require.NotEmpty(t, hb.str(t, "expiresAt"))
	rel := c.do(t, "POST", "/v1/leases/"+firstID+":release", "", map[string]any{"leaseToken": firstToken}).requireCode(t, http.StatusOK)
	require.Equal(t, "LEASE_STATE_RELEASED", rel.str(t, "lease.state"))
	a.do(t, "POST", "/v1/leases/"+firstID+":release", "", map[string]any{"leaseToken": firstToken}).requireCode(t, http.StatusOK)
	gone := a.do(t, "POST", "/v1/leases/"+firstID+":heartbeat", "", map[string]any{"leaseToken": firstToken})
	require.Equal(t, "LEASE_RELEASED", gone.errorReason(), "body: %s", gone.Raw)

	third := acquire(a, "fp-c").requireCode(t, http.StatusOK)
	require.EqualValues(t, 2, third.num(t, "seatsInUse"))

	leases := c.do(t, "GET", "/v1/admin/licenses/"+id+"/leases", op, nil).requireCode(t, http.StatusOK)
	list, _ := leases.get(t, "leases").([]any)
	require.Len(t, list, 3, "leases: %s", leases.Raw)

	var leader string
	for _, p := range procs {
		st := p.do(t, "GET", "/v1/admin/cleanup", op, nil).requireCode(t, http.StatusOK)
		require.NotEmpty(t, st.str(t, "leaderId"), "body: %s", st.Raw)
		if leader == "" {
			leader = st.str(t, "leaderId")
		}
		require.Equal(t, leader, st.str(t, "leaderId"), "both instances name the same leader")
	}
	run := c.do(t, "POST", "/v1/admin/cleanup", op, `{}`).requireCode(t, http.StatusOK)
	require.Equal(t, "ok", run.str(t, "run.result"))

	a.do(t, "DELETE", "/v1/admin/licenses/"+id, op, nil).requireCode(t, http.StatusOK)
	nf := acquire(c, "fp-d").requireCode(t, http.StatusNotFound)
	require.Equal(t, "LICENSE_NOT_FOUND", nf.errorReason(), "body: %s", nf.Raw)
	stopAllOK(t, procs...)
}
