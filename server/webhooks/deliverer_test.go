package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/webhooks"
)

// clock is an injected clock, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// received is one request a receiver got.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is an HTTP endpoint that answers with status(n) to its n-th
// request (from 0) and keeps what it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status func(n int) int
}

func newReceiver(t *testing.T, status func(n int) int) *receiver {
	t.Helper()
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, received{req.Header.Clone(), body})
		r.mu.Unlock()
		w.WriteHeader(r.status(n))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type bundle struct {
	store  *embedded.Store
	clock  *clock
	tenant server.Tenant
	d      *webhooks.Deliverer
	m      *countingMetrics
}

type countingMetrics struct {
	mu       sync.Mutex
	results  map[string]int
	disabled atomic.Int64
}

func (m *countingMetrics) Attempt(result string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results[result]++
}
func (m *countingMetrics) EndpointDisabled() { m.disabled.Add(1) }

func (m *countingMetrics) count(result string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[result]
}

// setup opens an embedded store on an injected clock and a deliverer that
// may reach loopback receivers (the tests' --webhook-allow-private-addresses).
func setup(t *testing.T, mut func(*webhooks.Config)) *bundle {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	st, err := embedded.Open(t.TempDir(), embedded.Options{Clock: c.Now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	tn, err := st.CreateTenant(t.Context(), server.Tenant{ID: server.NewID("tnt_"), Name: "acme", CreatedAt: c.Now()})
	require.NoError(t, err)
	m := &countingMetrics{results: map[string]int{}}
	cfg := webhooks.Config{
		Store: st, Now: c.Now, Metrics: m,
		Client: webhooks.NewClient(webhooks.ClientOptions{AllowPrivate: true, Timeout: 30 * time.Second}),
		Jitter: func() float64 { return 0.5 }, // no jitter: the schedule is exact
	}
	if mut != nil {
		mut(&cfg)
	}
	return &bundle{store: st, clock: c, tenant: tn, d: webhooks.New(cfg), m: m}
}

func (b *bundle) endpoint(t *testing.T, url string, types ...server.EventType) server.Endpoint {
	t.Helper()
	at := b.clock.Now()
	ep, err := b.store.CreateEndpoint(t.Context(), server.Endpoint{
		ID: server.NewID("whe_"), TenantID: b.tenant.ID, URL: url, Types: types,
		Secrets: []string{webhooks.NewSecret()}, CreatedAt: at, UpdatedAt: at,
	})
	require.NoError(t, err)
	return ep
}

func (b *bundle) license(t *testing.T) server.License {
	t.Helper()
	at := b.clock.Now()
	l, err := b.store.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: b.tenant.ID, Key: server.NewSecret(server.PrefixLicenseKey),
		Name: "cad", Seats: 2, LeaseTTL: time.Hour, LeasingStrategy: server.PerFingerprint, Active: true,
		CreatedAt: at, UpdatedAt: at,
	})
	require.NoError(t, err)
	return l
}

// drain steps the deliverer until it has nothing to do now.
func (b *bundle) drain(t *testing.T) {
	t.Helper()
	for range 100 {
		n, err := b.d.Step(t.Context())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("the deliverer never ran out of work")
}

func TestDeliverySignedAsStandardWebhooksSays(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	r := newReceiver(t, func(int) int { return http.StatusNoContent })
	ep := b.endpoint(t, r.URL+"/hooks")
	lic := b.license(t)
	b.drain(t)

	got := r.requests()
	require.Len(t, got, 1)
	req := got[0]
	var p webhooks.Payload
	require.NoError(t, json.Unmarshal(req.Body, &p))
	require.Equal(t, server.EventLicenseCreated, p.Type)
	require.Equal(t, lic.ID, p.Data.License.ID)
	require.Equal(t, int64(1), p.Sequence)
	require.Equal(t, b.tenant.ID, p.TenantID)
	require.Equal(t, p.ID, req.Header.Get("webhook-id"))
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))

	// The spec's own library verifies it (its tolerance is against the
	// real clock: the request is signed at the injected one).
	wh, err := standardwebhooks.NewWebhook(ep.Secrets[0])
	require.NoError(t, err)
	require.NoError(t, wh.VerifyIgnoringTimestamp(req.Body, req.Header))
	other, err := standardwebhooks.NewWebhook(webhooks.NewSecret())
	require.NoError(t, err)
	require.Error(t, other.VerifyIgnoringTimestamp(req.Body, req.Header), "another secret does not verify")

	list, _, err := b.store.ListDeliveries(t.Context(), b.tenant.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, server.DeliveryDelivered, list[0].State)
	require.Equal(t, 1, list[0].Attempts)
	require.Equal(t, http.StatusNoContent, list[0].LastStatus)
	require.Equal(t, 1, b.m.count("delivered"))
}

func TestRotatedSecretSignsWithBoth(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	r := newReceiver(t, func(int) int { return http.StatusOK })
	ep := b.endpoint(t, r.URL)
	old := ep.Secrets[0]
	fresh := webhooks.NewSecret()
	_, err := b.store.UpdateEndpoint(t.Context(), b.tenant.ID, ep.ID, func(e *server.Endpoint) error {
		e.Secrets, e.PreviousUntil = []string{fresh, old}, b.clock.Now().Add(time.Hour)
		return nil
	})
	require.NoError(t, err)
	b.license(t)
	b.drain(t)
	b.clock.Add(2 * time.Hour) // the old secret's time is over
	b.license(t)
	b.drain(t)

	got := r.requests()
	require.Len(t, got, 2)
	for i, secrets := range [][]string{{fresh, old}, {fresh}} {
		for _, s := range []string{fresh, old} {
			wh, err := standardwebhooks.NewWebhook(s)
			require.NoError(t, err)
			err = wh.VerifyIgnoringTimestamp(got[i].Body, got[i].Header)
			if s == fresh || len(secrets) == 2 {
				require.NoError(t, err, "request %d, secret %d", i, len(secrets))
			} else {
				require.Error(t, err, "request %d: the old secret no longer signs", i)
			}
		}
	}
}

func TestRetriesWithBackoffThenDelivers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// 503, 503, then 200.
	r := newReceiver(t, func(n int) int { return map[bool]int{true: 503, false: 200}[n < 2] })
	ep := b.endpoint(t, r.URL)
	b.license(t)
	b.drain(t)
	require.Len(t, r.requests(), 1)
	list, _, err := b.store.ListDeliveries(t.Context(), b.tenant.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	d := list[0]
	require.Equal(t, server.DeliveryPending, d.State)
	require.Equal(t, 503, d.LastStatus)
	require.Equal(t, "answered 503 Service Unavailable", d.LastError)
	require.Equal(t, b.clock.Now().Add(webhooks.DefaultFirstRetry), d.NextAt, "the first retry after FirstRetry")

	b.clock.Add(webhooks.DefaultFirstRetry - time.Millisecond)
	b.drain(t)
	require.Len(t, r.requests(), 1, "not before its time")
	b.clock.Add(time.Millisecond)
	b.drain(t)
	require.Len(t, r.requests(), 2)
	d, err = b.store.GetDelivery(t.Context(), b.tenant.ID, d.ID)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().Add(2*webhooks.DefaultFirstRetry), d.NextAt, "then doubled")
	b.clock.Add(2 * webhooks.DefaultFirstRetry)
	b.drain(t)
	require.Len(t, r.requests(), 3)
	d, err = b.store.GetDelivery(t.Context(), b.tenant.ID, d.ID)
	require.NoError(t, err)
	require.Equal(t, server.DeliveryDelivered, d.State)
	require.Equal(t, 3, d.Attempts)
	got := r.requests()
	require.Equal(t, got[0].Header.Get("webhook-id"), got[2].Header.Get("webhook-id"), "a retry is the same message")
	require.Equal(t, 2, b.m.count("retried"))
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	t.Parallel()
	for _, j := range []float64{0, 0.5, 0.999} {
		d := webhooks.New(webhooks.Config{Store: nil, Jitter: func() float64 { return j }})
		base := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}
		for n, want := range base {
			got := d.Backoff(n + 1)
			require.InDelta(t, float64(want), float64(got), 0.2*float64(want)+1, "attempt %d", n+1)
		}
		require.InDelta(t, float64(time.Hour), float64(d.Backoff(30)), 0.2*float64(time.Hour)+1)
		require.InDelta(t, float64(time.Hour), float64(d.Backoff(1000)), 0.2*float64(time.Hour)+1)
	}
	d := webhooks.New(webhooks.Config{Jitter: func() float64 { return 0 }})
	require.Equal(t, 4*time.Second, d.Backoff(1), "-20 %")
}

func TestDeliveryFailsAfterTheRetryWindowAndTheEndpointIsDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *webhooks.Config) { c.RetryFor, c.DisableAfter = time.Hour, 90*time.Minute })
	r := newReceiver(t, func(int) int { return http.StatusInternalServerError })
	ep := b.endpoint(t, r.URL)
	b.license(t)
	more := false
	for range 200 {
		b.drain(t)
		b.clock.Add(10 * time.Minute)
		cur, err := b.store.GetEndpoint(t.Context(), b.tenant.ID, ep.ID)
		require.NoError(t, err)
		if cur.Disabled {
			break
		}
		if !more && b.clock.Now().Sub(ep.CreatedAt) > 80*time.Minute {
			more = true
			b.license(t) // another event, failing too
		}
	}
	list, _, err := b.store.ListDeliveries(t.Context(), b.tenant.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	oldest := list[len(list)-1]
	require.Equal(t, server.DeliveryFailed, oldest.State, "failed once its retry window is over")
	require.Equal(t, server.DeliveryPending, list[0].State, "the later one waits for the endpoint")
	require.GreaterOrEqual(t, oldest.LastAt.Sub(oldest.CreatedAt), time.Hour)
	cur, err := b.store.GetEndpoint(t.Context(), b.tenant.ID, ep.ID)
	require.NoError(t, err)
	require.True(t, cur.Disabled, "failing continuously for DisableAfter")
	require.Contains(t, cur.DisabledReason, "every delivery failed since")
	require.Equal(t, int64(1), b.m.disabled.Load())
	es, err := b.store.EventsAfter(t.Context(), 0, 100)
	require.NoError(t, err)
	require.Equal(t, server.EventEndpointDisabled, es[len(es)-1].Type)

	// A disabled endpoint is sent nothing; replayed and enabled, it is.
	n := len(r.requests())
	b.license(t)
	b.drain(t)
	require.Len(t, r.requests(), n)
}

func TestALaterEventWaitsBehindAnEarlierOne(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var failing atomic.Bool
	failing.Store(true)
	r := newReceiver(t, func(int) int {
		if failing.Load() {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	ep := b.endpoint(t, r.URL)
	lic := b.license(t)
	_, err := b.store.UpdateLicense(t.Context(), b.tenant.ID, lic.ID, func(l *server.License) error { l.Seats = 9; return nil })
	require.NoError(t, err)
	b.drain(t)
	require.Len(t, r.requests(), 1, "only the first of the license's events is tried")
	failing.Store(false)
	b.clock.Add(time.Hour)
	b.drain(t)
	got := r.requests()
	require.Len(t, got, 3)
	var seqs []int64
	var types []server.EventType
	for _, g := range got {
		var p webhooks.Payload
		require.NoError(t, json.Unmarshal(g.Body, &p))
		seqs, types = append(seqs, p.Sequence), append(types, p.Type)
	}
	require.Equal(t, []int64{1, 1, 2}, seqs)
	require.Equal(t, []server.EventType{server.EventLicenseCreated, server.EventLicenseCreated, server.EventLicenseUpdated}, types)

	// A replay sends the same event again, with its id and sequence.
	list, _, err := b.store.ListDeliveries(t.Context(), b.tenant.ID, ep.ID, server.Page{})
	require.NoError(t, err)
	var first server.Delivery
	for _, d := range list {
		if d.OrderKey == lic.ID && d.Seq == 1 {
			first = d
		}
	}
	_, err = b.store.ReplayDelivery(t.Context(), b.tenant.ID, first.ID, b.clock.Now())
	require.NoError(t, err)
	b.drain(t)
	got = r.requests()
	require.Len(t, got, 4)
	require.Equal(t, first.Event.ID, got[3].Header.Get("webhook-id"))
	var p webhooks.Payload
	require.NoError(t, json.Unmarshal(got[3].Body, &p))
	require.Equal(t, int64(1), p.Sequence)
	require.Equal(t, server.EventLicenseCreated, p.Type)
}

func TestStopLeavesNothingHalfDone(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *webhooks.Config) { c.Interval = 10 * time.Millisecond })
	r := newReceiver(t, func(int) int { return http.StatusOK })
	b.endpoint(t, r.URL)
	b.license(t)
	b.d.Stop() // before a Start: nothing
	b.d.Start(context.Background())
	b.d.Start(context.Background()) // again: nothing
	require.Eventually(t, func() bool { return len(r.requests()) == 1 }, time.Minute, 10*time.Millisecond)
	b.d.Stop()
	b.d.Stop()
}

// TestStopDuringADeliveryReturns stops the deliverer while a receiver
// holds a delivery: the delivery is left for the next deliverer, and Stop
// returns (a step whose delivery was cut short by the stop once looped on
// the same delivery for ever).
func TestStopDuringADeliveryReturns(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *webhooks.Config) { c.Interval = 10 * time.Millisecond })
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		select {
		case arrived <- struct{}{}:
		default:
		}
		select { // held until the deliverer gives up on it, or the test ends
		case <-req.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(held.Close)
	t.Cleanup(func() { close(release) }) // first: Close waits for the handler
	b.endpoint(t, held.URL)
	b.license(t)
	b.d.Start(context.Background())
	<-arrived
	stopped := make(chan struct{})
	go func() {
		b.d.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-t.Context().Done():
		t.Fatal("Stop did not return while a delivery was in flight")
	}
}
