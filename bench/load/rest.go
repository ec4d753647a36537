package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/seatd/seatd/bench/internal/loadgen"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The REST phases (rest-health, rest-acquire, rest-heartbeat,
// rest-release) make the same calls as their gRPC namesakes through
// seatd's HTTP port: JSON over HTTP/1.1 keep-alive connections, one per
// caller, as a libcurl or script client would. rest-health is GET /healthz,
// the HTTP ceiling of the same server (no gRPC, no store).

// restClient is the HTTP side of the bench: its base URL and a client whose
// idle pool keeps one connection per caller (net/http keeps 2 per host
// unless told: the other callers would open and close a connection per
// call, and the row would measure TCP handshakes).
type restClient struct {
	base string
	http *http.Client
}

func newRESTClient(addr string, conc int) *restClient {
	return &restClient{base: "http://" + addr, http: &http.Client{Transport: &http.Transport{
		MaxIdleConns: conc, MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc, IdleConnTimeout: time.Minute,
	}}}
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, out)
}

func (c *restClient) do(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %.200s", req.Method, req.URL.Path, resp.Status, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
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
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
			if err != nil {
				return err
			}
			return c.do(req, nil)
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
