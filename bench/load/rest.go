package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seatd/seatd/bench/internal/loadgen"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The REST phases (rest-health, rest-acquire, rest-heartbeat,
// rest-release) make the same calls as their gRPC namesakes through
// seatd's HTTP port: JSON over HTTP/1.1 keep-alive connections, one per
// caller, as a libcurl or script client would. rest-health is GET /healthz,
// the HTTP ceiling of the same server (no gRPC, no store).
//
// The client is fasthttp's, not net/http's: the load generator shares the
// server's two cores, and net/http's client (a read and a write goroutine
// per connection, a request and response object per call) cost about 20
// µs of CPU a heartbeat against grpc-go's 6 µs, so the REST rows measured
// the client as much as seatd. fasthttp's, as libcurl does, writes and
// reads the connection in the caller's goroutine and reuses its buffers.

// restClient is the HTTP side of the bench: its base URL and a client
// that keeps up to one connection per caller (more callers than
// connections would queue; fewer would leave connections idle).
type restClient struct {
	base string
	http *fasthttp.HostClient
}

func newRESTClient(addr string, conc int) *restClient {
	return &restClient{base: "http://" + addr, http: &fasthttp.HostClient{
		Addr: addr, MaxConns: conc, MaxIdleConnDuration: time.Minute, MaxConnWaitTimeout: time.Minute,
	}}
}

// post sends body as JSON to path and decodes a 200's answer into out
// (nil: the answer is read and dropped).
func (c *restClient) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.postJSON(ctx, path, b, out)
}

// postJSON is post with the body already JSON (the heartbeat's, made once
// per worker: the load generator shares the server's cores, so what it
// spends per call is taken from the server's rate).
func (c *restClient) postJSON(ctx context.Context, path string, body []byte, out any) error {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(c.base + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
	return c.do(ctx, req, out)
}

// do sends req and decodes a 200's answer into out (nil: dropped); the
// call gives up at ctx's deadline (fasthttp takes a deadline, not a
// context).
func (c *restClient) do(ctx context.Context, req *fasthttp.Request, out any) error {
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	var err error
	if dl, ok := ctx.Deadline(); ok {
		err = c.http.DoDeadline(req, resp, dl)
	} else {
		err = c.http.Do(req, resp)
	}
	if err != nil {
		return err
	}
	if resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("%s %s: %d: %.200s", req.Header.Method(), req.URI().Path(), resp.StatusCode(), resp.Body())
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(resp.Body(), out)
}

// restLease is what the REST phases keep of an acquisition.
type restLease struct {
	Lease struct {
		ID string `json:"id"`
	} `json:"lease"`
	LeaseToken string `json:"leaseToken"`
}

type restToken struct {
	LeaseToken string `json:"leaseToken"`
}

func (c *restClient) health() loadgen.Prepare {
	return func(_ context.Context, _ int, _ int64) func(context.Context) error {
		return func(ctx context.Context) error {
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			req.SetRequestURI(c.base + "/healthz")
			return c.do(ctx, req, nil)
		}
	}
}

// restPool is a seat pool's REST leases: rest-acquire fills it,
// rest-release empties it.
type restPool struct {
	*seatPool
	leases chan restLease
}

func (c *restClient) acquire(p *restPool) loadgen.Prepare {
	return func(_ context.Context, _ int, _ int64) func(context.Context) error {
		n := p.fps.Add(1)
		fp := fmt.Sprintf("%s-rest-%d-%d", p.name, os.Getpid(), n)
		req := acquireJSON(p.requestAs(fp, n))
		return func(ctx context.Context) error {
			var l restLease
			err := c.post(ctx, "/v1/leases", req, &l)
			if err == nil {
				select {
				case p.leases <- l:
				default:
				}
			}
			return err
		}
	}
}

func (c *restClient) release(p *restPool) loadgen.Prepare {
	return func(_ context.Context, _ int, _ int64) func(context.Context) error {
		var l restLease
		select {
		case l = <-p.leases:
		default:
			return nil // nothing left to release
		}
		return func(ctx context.Context) error {
			return c.post(ctx, "/v1/leases/"+url.PathEscape(l.Lease.ID)+":release", restToken{l.LeaseToken}, nil)
		}
	}
}

// heartbeat acquires one lease per worker over gRPC (not measured), then
// each worker heartbeats its own lease over REST.
func (c *restClient) heartbeat(ctx context.Context, b *bench, p *seatPool, conc int) (loadgen.Prepare, error) {
	mine := make([]*seatdv1.AcquireSeatResponse, conc)
	for w := range conc {
		resp, err := seatdv1.NewSeatServiceClient(b.conn(w)).AcquireSeat(ctx, p.requestAs(fmt.Sprintf("%s-rest-hb-%d-%d", p.name, os.Getpid(), w), int64(w)))
		if err != nil {
			return nil, fmt.Errorf("acquire for heartbeat: %w", err)
		}
		mine[w] = resp
	}
	return func(_ context.Context, w int, _ int64) func(context.Context) error {
		l := mine[w]
		path := "/v1/leases/" + url.PathEscape(l.GetLease().GetId()) + ":heartbeat"
		body, err := json.Marshal(restToken{l.GetLeaseToken()})
		if err != nil {
			return func(context.Context) error { return err }
		}
		return func(ctx context.Context) error { return c.postJSON(ctx, path, body, nil) }
	}, nil
}

// acquireJSON is an AcquireSeatRequest's JSON body (the fields the bench sets).
func acquireJSON(r *seatdv1.AcquireSeatRequest) map[string]string {
	m := map[string]string{"licenseKey": r.GetLicenseKey(), "fingerprint": r.GetFingerprint()}
	for k, v := range map[string]string{"feature": r.GetFeature(), "version": r.GetVersion(), "user": r.GetUser()} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func isRESTOp(op string) bool {
	switch op {
	case "rest-health", "rest-acquire", "rest-heartbeat", "rest-release":
		return true
	}
	return false
}
