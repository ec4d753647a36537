// Command load drives a running seatd over gRPC (and REST, with -http) at a fixed concurrency and
// prints throughput and latency percentiles, one line per operation:
//
//	load -target 127.0.0.1:7070 -operator-key $OP -c 64 -d 10s -ops health,acquire,heartbeat,release
//
// health calls grpc.health.v1.Health/Check (the gRPC ceiling of the same
// server); acquire takes new seats on a large license; heartbeat renews one
// lease per worker; release gives back the leases the acquire phase took.
// feature-acquire, feature-heartbeat and feature-release do the same with
// seats of a feature of another license, one holding 50 grants of it
// (featurePool says how they are laid out); against a seatd without
// feature grants they are skipped, with a note on stderr.
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
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/bench/internal/loadgen"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func main() {
	target := flag.String("target", "127.0.0.1:7070", "seatd gRPC address")
	httpTarget := flag.String("http", "", "seatd HTTP address (host:port), for the rest-* phases")
	opKey := flag.String("operator-key", os.Getenv("SEATD_OPERATOR_KEY"), "operator key (to create the benchmark license)")
	conc := flag.Int("c", 64, "concurrent callers")
	dur := flag.Duration("d", 10*time.Second, "duration of each phase")
	conns := flag.Int("conns", 4, "gRPC connections shared by the callers")
	ops := flag.String("ops", "health,acquire,heartbeat,release", "phases to run, in order (also feature-acquire, feature-heartbeat, feature-release; policy-acquire, policy-heartbeat, policy-release; with -http: rest-health, rest-acquire, rest-heartbeat, rest-release)")
	asJSON := flag.Bool("json", false, "print JSON lines")
	label := flag.String("label", "", "with -tsv: first column of every line (e.g. the storage mode)")
	asTSV := flag.Bool("tsv", false, "print tab-separated lines: label op rps p50_ms p99_ms requests errors")
	nslices := flag.Int("slices", 1, "split each phase but health into this many slices, each right after a health slice as long, and report the median ratio of the pairs (a ceiling that drifts with the machine's load then drifts with the operation)")
	covering := flag.Int("covering", benchGrants, "feature phases: how many of the feature license's 50 grants are of the feature asked and cover the version asked (the others are of other features)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the load generator to this file")
	waiters := flag.Int("waiters", 0, "before the phases, queue this many WaitForSeat callers on each of -waiter-licenses full licenses, and keep them waiting throughout")
	waiterLicenses := flag.Int("waiter-licenses", 3, "with -waiters: how many full licenses they wait on")
	hooks := flag.Int("webhooks", 0, "measure acquire, heartbeat and release with and without this many webhook endpoints subscribed to every event, all on a receiver on loopback that this process runs (seatd needs --webhook-allow-private-addresses): each phase in -webhook-rounds rounds of a slice with none and a slice with them, the order alternating; with -tsv, rows labelled <label>+ctl and <label>+hooks, and <label>+paired whose ratio is the median over the rounds of the second's over the first's")
	hookRounds := flag.Int("webhook-rounds", 6, "with -webhooks: rounds per phase")
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
	var hs *hookSwitch
	if *hooks > 0 {
		var err error
		if hs, err = newHookSwitch(*target, *opKey, *hooks); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		defer hs.close()
	}
	o := options{slices: max(*nslices, 1), format: format, label: *label, covering: *covering, hooks: hs, hookRounds: max(*hookRounds, 1)}
	if err := run(*target, *httpTarget, *opKey, *conc, *conns, *dur, strings.Split(*ops, ","), o); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type bench struct {
	conns   []*grpc.ClientConn
	opKey   string
	licID   string
	base    *seatPool // the large license's base pool
	feature *seatPool // a feature of the license with grants; nil until a feature phase needs it
	policy  *seatPool // the base pool of a license with a site policy; nil until a policy phase needs it
}

// seatPool is where the acquire, heartbeat and release phases take their
// seats: a license's base pool (feature "") or a feature at a version.
type seatPool struct {
	name             string // fingerprint prefix
	key              string
	feature, version string
	leases           chan *seatdv1.AcquireSeatResponse // taken by acquire, given back by release
	fps              atomic.Int64                      // acquire fingerprints: each new, across slices
	users            []string                          // the callers' users, in turn (none: no user)
}

func newSeatPool(name, key, feature, version string) *seatPool {
	return &seatPool{name: name, key: key, feature: feature, version: version,
		leases: make(chan *seatdv1.AcquireSeatResponse, 4_000_000)}
}

func (p *seatPool) request(fp string) *seatdv1.AcquireSeatRequest {
	return &seatdv1.AcquireSeatRequest{LicenseKey: p.key, Fingerprint: fp, Feature: p.feature, Version: p.version}
}

// requestAs is request by the n-th of the pool's users (none if it has none).
func (p *seatPool) requestAs(fp string, n int64) *seatdv1.AcquireSeatRequest {
	r := p.request(fp)
	if len(p.users) > 0 {
		r.User = p.users[n%int64(len(p.users))]
	}
	return r
}

func (b *bench) conn(i int) *grpc.ClientConn { return b.conns[i%len(b.conns)] }

// options are run's knobs besides the target and the load's shape.
type options struct {
	slices        int
	format, label string
	covering      int
	hooks         *hookSwitch // -webhooks: acquire, heartbeat and release measured with and without endpoints
	hookRounds    int
}

func run(target, httpTarget, opKey string, conc, nconns int, dur time.Duration, ops []string, o options) error {
	nslices, format, label, covering := o.slices, o.format, o.label, o.covering
	b := &bench{opKey: opKey}
	for range nconns {
		c, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		b.conns = append(b.conns, c)
	}
	ctx := context.Background()
	needsLicense := slices.ContainsFunc(ops, func(op string) bool { return op != "health" && op != "rest-health" })
	if needsLicense {
		actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+opKey)
		resp, err := seatdv1.NewAdminServiceClient(b.conns[0]).CreateLicense(actx, &seatdv1.CreateLicenseRequest{
			License: &seatdv1.License{Name: "load test", Seats: 1_000_000, LeaseTtl: durationpb.New(time.Hour)},
		})
		if err != nil {
			return fmt.Errorf("create license: %w", err)
		}
		b.licID = resp.GetLicense().GetId()
		b.base = newSeatPool("load", resp.GetLicense().GetKey(), "", "")
	}
	health := loadgen.Health(b.conns)
	var rest *restClient
	var restBase *restPool
	if httpTarget != "" {
		rest = newRESTClient(httpTarget, conc)
		if b.base != nil {
			restBase = &restPool{seatPool: b.base, leases: make(chan restLease, 4_000_000)}
		}
	}
	featureTried, policyTried := false, false
	for _, op := range ops {
		var call loadgen.Prepare
		pool, phase := b.base, op
		if isFeatureOp(op) {
			// Created when the first feature phase comes: the phases
			// before it run as they did before there were features.
			if !featureTried {
				featureTried = true
				var err error
				if b.feature, err = b.featurePool(ctx, covering); err != nil {
					return err
				}
			}
			if b.feature == nil {
				continue // no feature grants in this seatd
			}
			pool, phase = b.feature, strings.TrimPrefix(op, "feature-")
		}
		if isPolicyOp(op) {
			if !policyTried {
				policyTried = true
				var err error
				if b.policy, err = b.policyPool(ctx); err != nil {
					return err
				}
			}
			if b.policy == nil {
				continue // no site policies in this seatd
			}
			pool, phase = b.policy, strings.TrimPrefix(op, "policy-")
		}
		if isRESTOp(op) {
			if rest == nil {
				return fmt.Errorf("%s needs -http", op)
			}
			switch op {
			case "rest-health":
				call = rest.health()
			case "rest-acquire":
				call = rest.acquire(restBase)
			case "rest-heartbeat":
				var err error
				if call, err = rest.heartbeat(ctx, b, b.base, conc); err != nil {
					return err
				}
			case "rest-release":
				call = rest.release(restBase)
			}
			phase = ""
		}
		switch phase {
		case "":
		case "health":
			call = health
		case "acquire":
			call = b.acquire(pool)
		case "heartbeat":
			var err error
			if call, err = b.heartbeat(ctx, pool, conc); err != nil {
				return err
			}
		case "release":
			call = b.release(pool)
		case "redis-ceiling":
			call = loadgen.RedisCeiling(b.conns, b.licID)
		default:
			return fmt.Errorf("unknown op %q", op)
		}
		if o.hooks != nil && (op == "acquire" || op == "heartbeat" || op == "release") {
			hr, err := measureHooks(ctx, op, conc, dur, o.hookRounds, call, health, o.hooks)
			if err != nil {
				return err
			}
			printResult(format, label+"+ctl", hr.ctl)
			printResult(format, label+"+hooks", hr.hooks)
			printResult(format, label+"+paired", loadgen.Result{Op: op, Ratio: hr.paired})
			continue
		}
		var r loadgen.Result
		if nslices > 1 && op != "health" {
			r = loadgen.MeasurePaired(ctx, op, conc, dur, nslices, call, health)
		} else {
			r = loadgen.Summarize(op, loadgen.Measure(ctx, conc, dur, call))
		}
		printResult(format, label, r)
	}
	return nil
}

func printResult(format, label string, r loadgen.Result) {
	switch format {
	case "json":
		_ = json.NewEncoder(os.Stdout).Encode(r)
	case "tsv":
		fmt.Printf("%s\t%s\t%.0f\t%.2f\t%.2f\t%d\t%d\t%.0f\t%.4f\n", label, r.Op, r.RPS, r.P50ms, r.P99ms, r.Requests, r.Errors, r.CeilingRPS, r.Ratio)
	default:
		op := r.Op
		if label != "" {
			op = label + " " + op
		}
		fmt.Printf("%-10s %8d req %6d err %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms\n", op, r.Requests, r.Errors, r.RPS, r.P50ms, r.P99ms)
	}
}

func isPolicyOp(op string) bool {
	return op == "policy-acquire" || op == "policy-heartbeat" || op == "policy-release"
}

func isFeatureOp(op string) bool {
	return op == "feature-acquire" || op == "feature-heartbeat" || op == "feature-release"
}

func (b *bench) acquire(p *seatPool) loadgen.Prepare {
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		c := seatdv1.NewSeatServiceClient(b.conn(w))
		n := p.fps.Add(1)
		fp := fmt.Sprintf("%s-%d-%d", p.name, os.Getpid(), n)
		return func(ctx context.Context) error {
			resp, err := c.AcquireSeat(ctx, p.requestAs(fp, n))
			if err == nil {
				select {
				case p.leases <- resp:
				default:
				}
			}
			return err
		}
	}
}

func (b *bench) release(p *seatPool) loadgen.Prepare {
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		var l *seatdv1.AcquireSeatResponse
		select {
		case l = <-p.leases:
		default:
			return nil // nothing left to release
		}
		c := seatdv1.NewSeatServiceClient(b.conn(w))
		return func(ctx context.Context) error {
			_, err := c.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: l.GetLease().GetId(), LeaseToken: l.GetLeaseToken()})
			return err
		}
	}
}

// heartbeat acquires one lease per worker (not measured), then each worker
// heartbeats its own lease.
func (b *bench) heartbeat(ctx context.Context, p *seatPool, conc int) (loadgen.Prepare, error) {
	mine := make([]*seatdv1.AcquireSeatResponse, conc)
	for w := range conc {
		resp, err := seatdv1.NewSeatServiceClient(b.conn(w)).AcquireSeat(ctx, p.requestAs(fmt.Sprintf("%s-hb-%d-%d", p.name, os.Getpid(), w), int64(w)))
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
