package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/bench/internal/loadgen"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// api is the harness's side of seatd's gRPC API: licenses, leases loaded
// and held (id and token, to heartbeat any of them later), cleanup passes.
type api struct {
	conns       []*grpc.ClientConn
	operatorKey string
}

// lease is what a caller keeps of its acquisition.
type lease struct{ id, token string }

// license is one the harness created.
type license struct{ id, key string }

func dial(addr, operatorKey string, n int) (*api, error) {
	a := &api{operatorKey: operatorKey}
	for range n {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			a.close()
			return nil, err
		}
		a.conns = append(a.conns, c)
	}
	return a, nil
}

func (a *api) close() {
	for _, c := range a.conns {
		_ = c.Close()
	}
}

func (a *api) seats(w int) seatdv1.SeatServiceClient {
	return seatdv1.NewSeatServiceClient(a.conns[w%len(a.conns)])
}

func (a *api) admin(ctx context.Context) (context.Context, seatdv1.AdminServiceClient) {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+a.operatorKey),
		seatdv1.NewAdminServiceClient(a.conns[0])
}

func (a *api) createLicense(ctx context.Context, name string, seats int, ttl time.Duration) (license, error) {
	actx, c := a.admin(ctx)
	resp, err := c.CreateLicense(actx, &seatdv1.CreateLicenseRequest{
		License: &seatdv1.License{Name: name, Seats: int32(seats), LeaseTtl: durationpb.New(ttl)}, //nolint:gosec // seats ≤ SCALE_LEASES, checked at start
	})
	if err != nil {
		return license{}, fmt.Errorf("create license %q: %w", name, err)
	}
	return license{id: resp.GetLicense().GetId(), key: resp.GetLicense().GetKey()}, nil
}

// cleanup runs one cleanup pass (AdminService.Cleanup) and returns what it
// says of itself.
func (a *api) cleanup(ctx context.Context) (*seatdv1.CleanupRun, error) {
	actx, c := a.admin(ctx)
	resp, err := c.Cleanup(actx, &seatdv1.CleanupRequest{})
	if err != nil {
		return nil, fmt.Errorf("cleanup: %w", err)
	}
	return resp.GetRun(), nil
}

// loaded is the outcome of load.
type loaded struct {
	leases    []lease
	took      time.Duration
	retries   int64
	lastUntil time.Time // the latest deadline answered
}

// load acquires n leases with distinct fingerprints (tag-i), lease i on
// licenses[i % len(licenses)], with conc callers; a failed call is retried
// (the fingerprint makes the retry the same lease). report is called every
// few seconds with how many are loaded.
func (a *api) load(ctx context.Context, licenses []license, tag string, n, conc int, report func(done int, rate float64)) (loaded, error) {
	out := loaded{leases: make([]lease, n)}
	var next, done, retries atomic.Int64
	var failed atomic.Value
	var mu sync.Mutex
	var wg sync.WaitGroup
	began := time.Now()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		last, lastAt := int64(0), began
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				d := done.Load()
				report(int(d), float64(d-last)/now.Sub(lastAt).Seconds())
				last, lastAt = d, now
			}
		}
	}()
	for w := range conc {
		wg.Go(func() {
			c := a.seats(w)
			for failed.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				req := &seatdv1.AcquireSeatRequest{LicenseKey: licenses[i%len(licenses)].key, Fingerprint: fmt.Sprintf("%s-%d", tag, i)}
				var resp *seatdv1.AcquireSeatResponse
				var err error
				for attempt := range 10 {
					if resp, err = c.AcquireSeat(ctx, req); err == nil {
						break
					}
					retries.Add(1)
					time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
				}
				if err != nil {
					failed.CompareAndSwap(nil, fmt.Errorf("acquire %s: %w", req.GetFingerprint(), err))
					return
				}
				out.leases[i] = lease{id: resp.GetLease().GetId(), token: resp.GetLeaseToken()}
				if until := resp.GetLease().GetExpiresAt().AsTime(); until.After(out.lastUntil) {
					mu.Lock()
					if until.After(out.lastUntil) {
						out.lastUntil = until
					}
					mu.Unlock()
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	close(stop)
	out.took, out.retries = time.Since(began), retries.Load()
	if err, _ := failed.Load().(error); err != nil {
		return out, err
	}
	return out, nil
}

// heartbeat heartbeats leases picked at random among all of them.
func (a *api) heartbeat(leases []lease) loadgen.Prepare {
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		c := seatdv1.NewHeartbeatServiceClient(a.conns[w%len(a.conns)])
		l := leases[rand.IntN(len(leases))]
		return func(ctx context.Context) error {
			_, err := c.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: l.id, LeaseToken: l.token})
			return err
		}
	}
}

// churn is the acquire and release phases on one license: acquire takes
// new seats and keeps them, release gives them back.
type churn struct {
	a     *api
	key   string
	fps   atomic.Int64
	taken chan lease
}

func newChurn(a *api, key string) *churn {
	return &churn{a: a, key: key, taken: make(chan lease, 2_000_000)}
}

func (ch *churn) acquire(_ context.Context, w int, _ int64) func(context.Context) error {
	c := ch.a.seats(w)
	fp := fmt.Sprintf("churn-%d-%d", os.Getpid(), ch.fps.Add(1))
	return func(ctx context.Context) error {
		resp, err := c.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: ch.key, Fingerprint: fp})
		if err == nil {
			select {
			case ch.taken <- lease{id: resp.GetLease().GetId(), token: resp.GetLeaseToken()}:
			default:
			}
		}
		return err
	}
}

func (ch *churn) release(_ context.Context, w int, _ int64) func(context.Context) error {
	var l lease
	select {
	case l = <-ch.taken:
	default:
		return nil // nothing left to release
	}
	c := ch.a.seats(w)
	return func(ctx context.Context) error {
		_, err := c.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: l.id, LeaseToken: l.token})
		return err
	}
}

// code is the gRPC code of err, for a table ("OK" for none).
func code(err error) string { return status.Code(err).String() }
