// Command load drives a running seatd over gRPC at a fixed concurrency and
// prints throughput and latency percentiles, one line per operation:
//
//	load -target 127.0.0.1:7070 -operator-key $OP -c 64 -d 10s -ops health,acquire,heartbeat,release
//
// health calls grpc.health.v1.Health/Check (the gRPC ceiling of the same
// server); acquire takes new seats on a large license; heartbeat renews one
// lease per worker; release gives back the leases the acquire phase took.
// With -slices N each phase but health alternates with health slices, and
// the result carries the median ratio of the pairs (what `make bench` shows).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Result is one operation's measurement.
type Result struct {
	Op       string  `json:"op"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	// With -slices > 1: the gRPC ceiling measured in the health slices
	// paired with this operation's, and the median over the pairs of this
	// operation's throughput over the ceiling's.
	CeilingRPS float64 `json:"ceiling_rps,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
}

func main() {
	target := flag.String("target", "127.0.0.1:7070", "seatd gRPC address")
	opKey := flag.String("operator-key", os.Getenv("SEATD_OPERATOR_KEY"), "operator key (to create the benchmark license)")
	conc := flag.Int("c", 64, "concurrent callers")
	dur := flag.Duration("d", 10*time.Second, "duration of each phase")
	conns := flag.Int("conns", 4, "gRPC connections shared by the callers")
	ops := flag.String("ops", "health,acquire,heartbeat,release", "phases to run, in order")
	asJSON := flag.Bool("json", false, "print JSON lines")
	label := flag.String("label", "", "with -tsv: first column of every line (e.g. the storage mode)")
	asTSV := flag.Bool("tsv", false, "print tab-separated lines: label op rps p50_ms p99_ms requests errors")
	nslices := flag.Int("slices", 1, "split each phase but health into this many slices, each right after a health slice as long, and report the median ratio of the pairs (a ceiling that drifts with the machine's load then drifts with the operation)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the load generator to this file")
	waiters := flag.Int("waiters", 0, "before the phases, queue this many WaitForSeat callers on each of -waiter-licenses full licenses, and keep them waiting throughout")
	waiterLicenses := flag.Int("waiter-licenses", 3, "with -waiters: how many full licenses they wait on")
	flag.Parse()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}

	format := "text"
	switch {
	case *asJSON:
		format = "json"
	case *asTSV:
		format = "tsv"
	}
	if *waiters > 0 {
		stop, err := queueWaiters(*target, *opKey, *waiters, *waiterLicenses)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if err := run(*target, *opKey, *conc, *conns, *dur, max(*nslices, 1), strings.Split(*ops, ","), format, *label); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type bench struct {
	conns  []*grpc.ClientConn
	key    string
	licID  string
	leases chan *seatdv1.AcquireSeatResponse // taken by acquire, given back by release
	fps    atomic.Int64                      // acquire fingerprints: each new, across slices
}

func (b *bench) conn(i int) *grpc.ClientConn { return b.conns[i%len(b.conns)] }

func run(target, opKey string, conc, nconns int, dur time.Duration, nslices int, ops []string, format, label string) error {
	b := &bench{leases: make(chan *seatdv1.AcquireSeatResponse, 4_000_000)}
	for range nconns {
		c, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		b.conns = append(b.conns, c)
	}
	ctx := context.Background()
	needsLicense := slices.ContainsFunc(ops, func(op string) bool { return op != "health" })
	if needsLicense {
		actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+opKey)
		resp, err := seatdv1.NewAdminServiceClient(b.conns[0]).CreateLicense(actx, &seatdv1.CreateLicenseRequest{
			License: &seatdv1.License{Name: "load test", Seats: 1_000_000, LeaseTtl: durationpb.New(time.Hour)},
		})
		if err != nil {
			return fmt.Errorf("create license: %w", err)
		}
		b.key, b.licID = resp.GetLicense().GetKey(), resp.GetLicense().GetId()
	}
	for _, op := range ops {
		var call func(ctx context.Context, worker int, seq int64) func(ctx context.Context) error
		switch op {
		case "health":
			call = b.health
		case "acquire":
			call = b.acquire
		case "heartbeat":
			var err error
			if call, err = b.heartbeat(ctx, conc); err != nil {
				return err
			}
		case "release":
			call = b.release
		case "redis-ceiling":
			call = b.redisCeiling
		default:
			return fmt.Errorf("unknown op %q", op)
		}
		var r Result
		if nslices > 1 && op != "health" {
			r = measurePaired(ctx, op, conc, dur, nslices, call, b.health)
		} else {
			r = summarize(op, measure(ctx, conc, dur, call))
		}
		switch format {
		case "json":
			_ = json.NewEncoder(os.Stdout).Encode(r)
		case "tsv":
			fmt.Printf("%s\t%s\t%.0f\t%.2f\t%.2f\t%d\t%d\t%.0f\t%.4f\n", label, r.Op, r.RPS, r.P50ms, r.P99ms, r.Requests, r.Errors, r.CeilingRPS, r.Ratio)
		default:
			fmt.Printf("%-10s %8d req %6d err %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms\n", r.Op, r.Requests, r.Errors, r.RPS, r.P50ms, r.P99ms)
		}
	}
	return nil
}

// sample is what one measured stretch of calls gave.
type sample struct {
	lat        []time.Duration
	reqs, errs int64
	seconds    float64
}

func (s sample) rps() float64 { return float64(s.reqs) / s.seconds }

// measure runs conc workers for dur. prepare returns the call to time, or nil
// when the worker has nothing left to do.
func measure(ctx context.Context, conc int, dur time.Duration,
	prepare func(ctx context.Context, worker int, seq int64) func(ctx context.Context) error,
) sample {
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
	return sample{lat: slices.Concat(lat...), reqs: reqs.Load(), errs: errs.Load(), seconds: time.Since(start).Seconds()}
}

// measurePaired runs op in n slices of dur/n, each right after a slice of
// health calls as long, and compares each slice with its ceiling.
func measurePaired(ctx context.Context, op string, conc int, dur time.Duration, n int,
	prepare, health func(ctx context.Context, worker int, seq int64) func(ctx context.Context) error,
) Result {
	var ops, ceilings []sample
	var ratios []float64
	for range n {
		c := measure(ctx, conc, dur/time.Duration(n), health)
		o := measure(ctx, conc, dur/time.Duration(n), prepare)
		ceilings, ops = append(ceilings, c), append(ops, o)
		ratios = append(ratios, o.rps()/c.rps())
	}
	r := summarize(op, ops...)
	r.CeilingRPS = summarize("health", ceilings...).RPS
	slices.Sort(ratios)
	r.Ratio = ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		r.Ratio = (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
	}
	return r
}

// summarize merges samples of one operation into its result.
func summarize(op string, samples ...sample) Result {
	var all []time.Duration
	r := Result{Op: op}
	for _, s := range samples {
		all = append(all, s.lat...)
		r.Requests += s.reqs
		r.Errors += s.errs
		r.Seconds += s.seconds
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	r.RPS = float64(r.Requests) / r.Seconds
	r.P50ms, r.P99ms = pct(0.50), pct(0.99)
	return r
}

func (b *bench) health(_ context.Context, w int, _ int64) func(context.Context) error {
	c := healthpb.NewHealthClient(b.conn(w))
	return func(ctx context.Context) error {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
}

func (b *bench) acquire(_ context.Context, w int, _ int64) func(context.Context) error {
	c := seatdv1.NewSeatServiceClient(b.conn(w))
	fp := fmt.Sprintf("load-%d-%d", os.Getpid(), b.fps.Add(1))
	return func(ctx context.Context) error {
		resp, err := c.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: b.key, Fingerprint: fp})
		if err == nil {
			select {
			case b.leases <- resp:
			default:
			}
		}
		return err
	}
}

func (b *bench) release(_ context.Context, w int, _ int64) func(context.Context) error {
	var l *seatdv1.AcquireSeatResponse
	select {
	case l = <-b.leases:
	default:
		return nil // nothing left to release
	}
	c := seatdv1.NewSeatServiceClient(b.conn(w))
	return func(ctx context.Context) error {
		_, err := c.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
		return err
	}
}

// heartbeat acquires one lease per worker (not measured), then each worker
// heartbeats its own lease.
func (b *bench) heartbeat(ctx context.Context, conc int) (func(context.Context, int, int64) func(context.Context) error, error) {
	mine := make([]*seatdv1.AcquireSeatResponse, conc)
	for w := range conc {
		resp, err := seatdv1.NewSeatServiceClient(b.conn(w)).AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{
			LicenseKey: b.key, Fingerprint: fmt.Sprintf("hb-%d-%d", os.Getpid(), w),
		})
		if err != nil {
			return nil, fmt.Errorf("acquire for heartbeat: %w", err)
		}
		mine[w] = resp
	}
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		c := seatdv1.NewHeartbeatServiceClient(b.conn(w))
		l := mine[w]
		return func(ctx context.Context) error {
			_, err := c.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
			return err
		}
	}, nil
}

// queueWaiters fills `licenses` one-seat licenses and queues `n` WaitForSeat
// callers on each, which wait (reading their positions) until stop: the
// load of waiters on licenses other than the one measured.
func queueWaiters(target, opKey string, n, licenses int) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	var conns []*grpc.ClientConn
	stop = func() {
		cancel()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for range 8 {
		c, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			stop()
			return nil, err
		}
		conns = append(conns, c)
	}
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+opKey)
	var queued sync.WaitGroup
	var failed atomic.Int64
	for li := range licenses {
		resp, err := seatdv1.NewAdminServiceClient(conns[0]).CreateLicense(actx, &seatdv1.CreateLicenseRequest{
			License: &seatdv1.License{Name: fmt.Sprintf("waited-on %d", li), Seats: 1, LeaseTtl: durationpb.New(time.Hour)},
		})
		if err != nil {
			stop()
			return nil, fmt.Errorf("create license: %w", err)
		}
		key := resp.GetLicense().GetKey()
		if _, err := seatdv1.NewSeatServiceClient(conns[0]).AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "holder"}); err != nil {
			stop()
			return nil, fmt.Errorf("take the seat: %w", err)
		}
		for w := range n {
			queued.Add(1)
			go func() {
				c := seatdv1.NewSeatServiceClient(conns[w%len(conns)])
				s, err := c.WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: key, Fingerprint: fmt.Sprintf("waiter-%d", w)})
				if err == nil {
					_, err = s.Recv() // its first position: it is queued
				}
				if err != nil {
					failed.Add(1)
				}
				queued.Done()
				for err == nil {
					_, err = s.Recv()
				}
			}()
		}
	}
	queued.Wait()
	if f := failed.Load(); f > 0 {
		stop()
		return nil, fmt.Errorf("%d waiters could not queue", f)
	}
	fmt.Fprintf(os.Stderr, "load: %d waiters queued on %d licenses\n", n*licenses, licenses)
	return stop, nil
}

// redisCeiling calls seatd's make-bench-only method (seatd --bench-ceiling):
// one no-op script through the hot path's batching, as a heartbeat runs
// its script: the ceiling of a design with one Redis round trip per call.
func (b *bench) redisCeiling(_ context.Context, w int, _ int64) func(context.Context) error {
	conn := b.conn(w)
	md := metadata.Pairs("license-id", b.licID)
	return func(ctx context.Context) error {
		return conn.Invoke(metadata.NewOutgoingContext(ctx, md), "/seatd.bench.Ceiling/Noop", &emptypb.Empty{}, &emptypb.Empty{})
	}
}
