package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/internal/startstop"
)

// Defaults of the deliverer (each has its --webhook-* flag).
const (
	DefaultRetryFor     = 24 * time.Hour     // a delivery is retried this long, then failed
	DefaultDisableAfter = 5 * 24 * time.Hour // an endpoint failing this long is disabled
	DefaultInterval     = time.Second        // the outbox is looked at this often when idle
	DefaultConcurrency  = 8                  // requests in flight at once
	DefaultBatch        = 100                // deliveries taken per step
	DefaultFirstRetry   = 5 * time.Second    // the first retry's delay; doubling after
	DefaultMaxRetry     = time.Hour          // the longest delay between two attempts
	maxAnswerRead       = 64 << 10           // bytes of an answer read (then dropped)
	maxErrorText        = 200                // characters of an error kept in the log
	storeTimeout        = 30 * time.Second   // one store call of the deliverer
	userAgent           = "seatd-webhooks/1" // the requests' User-Agent
	jitter              = 0.2                // ± this share of each retry's delay
)

// Metrics are what the deliverer counts (server/metrics.Webhooks).
type Metrics interface {
	Attempt(result string, latency time.Duration) // result: delivered, retried, failed
	EndpointDisabled()
}

type noMetrics struct{}

func (noMetrics) Attempt(string, time.Duration) {}
func (noMetrics) EndpointDisabled()             {}

// Config wires a Deliverer. Store is required.
type Config struct {
	Store  server.WebhookStore
	Client *http.Client // default NewClient(ClientOptions{})
	// Now is the clock of attempts and retries (default time.Now).
	Now          func() time.Time
	Logger       *slog.Logger
	Metrics      Metrics
	RetryFor     time.Duration
	DisableAfter time.Duration
	Interval     time.Duration
	Concurrency  int
	Batch        int
	FirstRetry   time.Duration
	MaxRetry     time.Duration
	// Jitter draws a number in [0, 1) for a retry's jitter (default
	// math/rand/v2's Float64).
	Jitter func() float64
	// Expiring, when set, is run every ExpiringEvery (Signals.SweepExpiring).
	Expiring      func(ctx context.Context)
	ExpiringEvery time.Duration
}

// Deliverer sends the outbox's events to their endpoints. One runs per
// seatd: the single process in embedded mode, the cleanup leader in
// distributed mode (ARCHITECTURE.md says why).
type Deliverer struct {
	cfg    Config
	runner startstop.Runner
	wake   chan struct{}
}

// New returns a Deliverer with cfg's defaults filled in.
func New(cfg Config) *Deliverer {
	if cfg.Client == nil {
		cfg.Client = NewClient(ClientOptions{})
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	cfg.RetryFor = cmp.Or(cfg.RetryFor, DefaultRetryFor)
	cfg.DisableAfter = cmp.Or(cfg.DisableAfter, DefaultDisableAfter)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultConcurrency)
	cfg.Batch = cmp.Or(cfg.Batch, DefaultBatch)
	cfg.FirstRetry = cmp.Or(cfg.FirstRetry, DefaultFirstRetry)
	cfg.MaxRetry = cmp.Or(cfg.MaxRetry, DefaultMaxRetry)
	cfg.ExpiringEvery = cmp.Or(cfg.ExpiringEvery, 10*time.Minute)
	return &Deliverer{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Start runs the deliverer until Stop (or ctx ends). A second Start, and
// a Stop without a Start, do nothing.
func (d *Deliverer) Start(ctx context.Context) { d.runner.Start(ctx, d.run) }

// Stop stops it and waits for the requests in flight (each bounded by
// the client's timeout); their outcome is recorded, or the deliveries are
// sent again by the next deliverer.
func (d *Deliverer) Stop() { d.runner.Stop() }

// Wake makes a running deliverer look at the outbox now.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Deliverer) run(ctx context.Context) {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	var lastSweep time.Time
	for {
		if d.cfg.Expiring != nil && time.Since(lastSweep) >= d.cfg.ExpiringEvery {
			lastSweep = time.Now()
			d.cfg.Expiring(ctx)
		}
		n, err := d.Step(ctx)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.WarnContext(ctx, "webhooks: delivery step failed; retried", "err", err)
		}
		if ctx.Err() != nil {
			return // stopping: a delivery cut short is left for the next deliverer
		}
		if n > 0 && err == nil {
			continue // more may be waiting right behind
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
	}
}

// Step fans the outbox's new events out and sends the deliveries due now,
// at most Batch of them, Concurrency at a time. It returns how many it
// fanned out and sent: 0 when there was nothing to do.
func (d *Deliverer) Step(ctx context.Context) (int, error) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	now := d.cfg.Now()
	fanned, err := d.cfg.Store.FanOut(sctx, now, d.cfg.Batch)
	if err != nil {
		return 0, fmt.Errorf("fan out: %w", err)
	}
	due, err := d.cfg.Store.DueDeliveries(sctx, now, d.cfg.Batch)
	if err != nil {
		return fanned, fmt.Errorf("due deliveries: %w", err)
	}
	if len(due) == 0 {
		return fanned, nil
	}
	endpoints, err := d.cfg.Store.ListEndpoints(sctx, "")
	if err != nil {
		return fanned, fmt.Errorf("endpoints: %w", err)
	}
	byID := make(map[string]*endpointState, len(endpoints))
	for i := range endpoints {
		byID[endpoints[i].ID] = &endpointState{ep: endpoints[i]}
	}
	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	sent := 0
	for _, dl := range due {
		st := byID[dl.EndpointID]
		if st == nil || st.disabled() {
			continue // waits until the endpoint is enabled again (or deleted with it)
		}
		sent++
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d.deliver(ctx, st, dl)
		})
	}
	wg.Wait()
	return fanned + sent, nil
}

// endpointState is an endpoint as one step sees it, shared by the
// deliveries of the step, so that its state is written once per change.
type endpointState struct {
	mu sync.Mutex
	ep server.Endpoint
}

func (st *endpointState) disabled() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ep.Disabled
}

// deliver sends one delivery and records the outcome.
func (d *Deliverer) deliver(ctx context.Context, st *endpointState, dl server.Delivery) {
	st.mu.Lock()
	ep := st.ep
	st.mu.Unlock()
	start := d.cfg.Now()
	status, sendErr := d.send(ctx, &ep, dl, start)
	if ctx.Err() != nil {
		return // stopping: not recorded, sent again by the next deliverer
	}
	end := d.cfg.Now()
	a := server.Attempt{At: start, Status: status, Latency: max(0, end.Sub(start))}
	result := "delivered"
	switch {
	case sendErr == nil:
		a.Next = server.DeliveryDelivered
	case end.Sub(dl.CreatedAt) >= d.cfg.RetryFor:
		a.Error, a.Next, result = errorText(sendErr), server.DeliveryFailed, "failed"
	default:
		a.Error, a.Next, result = errorText(sendErr), server.DeliveryPending, "retried"
		a.NextAt = end.Add(d.Backoff(dl.Attempts + 1))
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if _, err := d.cfg.Store.RecordAttempt(sctx, dl.ID, a); err != nil && !errors.Is(err, server.ErrDeliveryNotFound) {
		d.cfg.Logger.WarnContext(ctx, "webhooks: attempt not recorded; the delivery is sent again",
			"delivery", dl.ID, "err", err)
	}
	d.cfg.Metrics.Attempt(result, a.Latency)
	d.judgeEndpoint(sctx, st, sendErr == nil, start)
}

// judgeEndpoint keeps an endpoint's run of failures: its first failure
// since a success is recorded, a success clears it, and a run longer than
// DisableAfter disables it (with its event, written by the store, and a
// metric). Only changes are written.
func (d *Deliverer) judgeEndpoint(ctx context.Context, st *endpointState, ok bool, at time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ep := &st.ep
	var update func(*server.Endpoint) error
	switch {
	case ok && !ep.FailingSince.IsZero():
		update = func(e *server.Endpoint) error { e.FailingSince = time.Time{}; return nil }
	case ok:
	case ep.FailingSince.IsZero():
		update = func(e *server.Endpoint) error {
			if e.FailingSince.IsZero() {
				e.FailingSince = at
			}
			return nil
		}
	case at.Sub(ep.FailingSince) >= d.cfg.DisableAfter && !ep.Disabled:
		reason := fmt.Sprintf("every delivery failed since %s", ep.FailingSince.UTC().Format(time.RFC3339))
		update = func(e *server.Endpoint) error {
			if !e.Disabled {
				e.Disabled, e.DisabledReason = true, reason
			}
			return nil
		}
		d.cfg.Metrics.EndpointDisabled()
		d.cfg.Logger.WarnContext(ctx, "webhooks: endpoint disabled: failing continuously", "endpoint", ep.ID,
			"failing_since", ep.FailingSince)
	}
	if update == nil {
		return
	}
	next, err := d.cfg.Store.UpdateEndpoint(ctx, ep.TenantID, ep.ID, update)
	if err != nil {
		if !errors.Is(err, server.ErrEndpointNotFound) {
			d.cfg.Logger.WarnContext(ctx, "webhooks: endpoint state not recorded", "endpoint", ep.ID, "err", err)
		}
		return
	}
	st.ep = next
}

// send makes one request. A 2xx answer is a success; anything else (a
// redirect too) an error.
func (d *Deliverer) send(ctx context.Context, ep *server.Endpoint, dl server.Delivery, at time.Time) (int, error) {
	body, err := Render(dl)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("the endpoint's URL cannot be requested")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if err := Sign(req.Header, dl.Event.ID, at, body, ep.ActiveSecrets(at)); err != nil {
		return 0, err
	}
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerRead))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// Backoff is the delay before attempt n+1 after n failed ones: FirstRetry
// doubled each time, at most MaxRetry, ± 20 % jitter (so that endpoints
// coming back are not hit by every retry at once). It is computed from
// the attempts recorded, so a restart keeps the schedule.
func (d *Deliverer) Backoff(n int) time.Duration {
	delay := d.cfg.MaxRetry
	if n < 40 {
		delay = min(d.cfg.MaxRetry, d.cfg.FirstRetry<<(max(n, 1)-1))
	}
	f := 1 + jitter*(2*d.cfg.Jitter()-1)
	return time.Duration(float64(delay) * f)
}

// errorText is an attempt's error as the delivery log keeps it: short,
// and never the request (whose headers hold signatures).
func errorText(err error) string {
	s := err.Error()
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		// *url.Error names the method and URL: keep its cause.
		if inner := ue.Unwrap(); inner != nil {
			s = inner.Error()
		}
	}
	if len(s) > maxErrorText {
		s = s[:maxErrorText]
	}
	return s
}
