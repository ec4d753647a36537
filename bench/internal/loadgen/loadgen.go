// Package loadgen is the measuring core the bench commands share: callers
// at a fixed concurrency for a while (Measure), slices of an operation each
// right after a ceiling slice as long (MeasurePaired), percentiles
// (Summarize), and the ceiling calls themselves (Health, RedisCeiling).
// It knows gRPC but nothing of seatd's API beyond the ceilings.
package loadgen

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Prepare returns the call a worker makes next (timed), or nil when the
// worker has nothing left to do.
type Prepare func(ctx context.Context, worker int, seq int64) func(ctx context.Context) error

// Result is one operation's measurement.
type Result struct {
	Op       string  `json:"op"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	// With slices: the gRPC ceiling measured in the health slices paired
	// with this operation's, and the median over the pairs of this
	// operation's throughput over the ceiling's.
	CeilingRPS float64 `json:"ceiling_rps,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
}

// Sample is what one measured stretch of calls gave.
type Sample struct {
	Lat        []time.Duration
	Reqs, Errs int64
	Seconds    float64
}

// RPS is the sample's throughput.
func (s Sample) RPS() float64 { return float64(s.Reqs) / s.Seconds }

// Measure runs conc workers for dur.
func Measure(ctx context.Context, conc int, dur time.Duration, prepare Prepare) Sample {
	var reqs, errs atomic.Int64
	lat := make([][]time.Duration, conc)
	deadline := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for seq := int64(0); time.Now().Before(deadline); seq++ {
				call := prepare(ctx, w, seq)
				if call == nil {
					return
				}
				t := time.Now()
				err := call(ctx)
				lat[w] = append(lat[w], time.Since(t))
				reqs.Add(1)
				if err != nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return Sample{Lat: slices.Concat(lat...), Reqs: reqs.Load(), Errs: errs.Load(), Seconds: time.Since(start).Seconds()}
}

// MeasurePaired runs op in n slices of dur/n, each right after a slice of
// ceiling calls as long, and compares each slice with its ceiling: the
// machine's load drifts, and a ratio of neighbours drifts less.
func MeasurePaired(ctx context.Context, op string, conc int, dur time.Duration, n int, prepare, ceiling Prepare) Result {
	var ops, ceilings []Sample
	var ratios []float64
	for range n {
		c := Measure(ctx, conc, dur/time.Duration(n), ceiling)
		o := Measure(ctx, conc, dur/time.Duration(n), prepare)
		ceilings, ops = append(ceilings, c), append(ops, o)
		ratios = append(ratios, o.RPS()/c.RPS())
	}
	r := Summarize(op, ops...)
	r.CeilingRPS = Summarize("health", ceilings...).RPS
	r.Ratio = Median(ratios)
	return r
}

// Median of xs (sorted in place); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	if len(xs)%2 == 0 {
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return xs[len(xs)/2]
}

// Summarize merges samples of one operation into its result.
func Summarize(op string, samples ...Sample) Result {
	var all []time.Duration
	r := Result{Op: op}
	for _, s := range samples {
		all = append(all, s.Lat...)
		r.Requests += s.Reqs
		r.Errors += s.Errs
		r.Seconds += s.Seconds
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	r.RPS = float64(r.Requests) / r.Seconds
	r.P50ms, r.P99ms, r.MaxMs = pct(0.50), pct(0.99), pct(1)
	return r
}

// Health calls grpc.health.v1.Health/Check over conns: the gRPC ceiling of
// the server.
func Health(conns []*grpc.ClientConn) Prepare {
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		c := healthpb.NewHealthClient(conns[w%len(conns)])
		return func(ctx context.Context) error {
			_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
			return err
		}
	}
}

// RedisCeiling calls seatd's make-bench-only method (seatd --bench-ceiling)
// on licenseID: one no-op script through the hot path's batching, as a
// heartbeat runs its script: the ceiling of a design with one Redis round
// trip per call.
func RedisCeiling(conns []*grpc.ClientConn, licenseID string) Prepare {
	md := metadata.Pairs("license-id", licenseID)
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		conn := conns[w%len(conns)]
		return func(ctx context.Context) error {
			return conn.Invoke(metadata.NewOutgoingContext(ctx, md), "/seatd.bench.Ceiling/Noop", &emptypb.Empty{}, &emptypb.Empty{})
		}
	}
}
