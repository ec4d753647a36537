package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/seatd/seatd/bench/internal/loadgen"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// hookSwitch (-webhooks n, issue 29) runs a webhook receiver on loopback,
// answering 204 to every request, and registers n endpoints of it, each
// subscribed to every event type of the operator's tenant, while it is on
// (seatd must run with --webhook-allow-private-addresses).
type hookSwitch struct {
	n       int
	srv     *http.Server
	conn    *grpc.ClientConn
	admin   seatdv1.AdminServiceClient
	opKey   string
	url     string
	took    atomic.Int64
	created []*seatdv1.WebhookEndpoint
}

func newHookSwitch(target, opKey string, n int) (*hookSwitch, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	h := &hookSwitch{n: n, conn: conn, admin: seatdv1.NewAdminServiceClient(conn), opKey: opKey, url: "http://" + ln.Addr().String()}
	h.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.took.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() {
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "load: webhook receiver:", err)
		}
	}()
	return h, nil
}

func (h *hookSwitch) adminCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+h.opKey), time.Minute)
}

// on registers the n endpoints.
func (h *hookSwitch) on() error {
	ctx, cancel := h.adminCtx()
	defer cancel()
	for i := range h.n {
		resp, err := h.admin.CreateWebhookEndpoint(ctx, &seatdv1.CreateWebhookEndpointRequest{
			Url: fmt.Sprintf("%s/hook-%d", h.url, i), Description: "make bench",
		})
		if err != nil {
			return fmt.Errorf("create webhook endpoint (seatd needs --webhook-allow-private-addresses): %w", err)
		}
		h.created = append(h.created, resp.GetEndpoint())
	}
	return nil
}

// off deletes the endpoints on registered.
func (h *hookSwitch) off() error {
	ctx, cancel := h.adminCtx()
	defer cancel()
	for len(h.created) > 0 {
		e := h.created[len(h.created)-1]
		if _, err := h.admin.DeleteWebhookEndpoint(ctx, &seatdv1.DeleteWebhookEndpointRequest{TenantId: e.GetTenantId(), Id: e.GetId()}); err != nil {
			return fmt.Errorf("delete webhook endpoint: %w", err)
		}
		h.created = h.created[:len(h.created)-1]
	}
	return nil
}

// close deletes any endpoint left, stops the receiver and says how many
// requests it took.
func (h *hookSwitch) close() {
	if err := h.off(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
	}
	_ = h.conn.Close()
	_ = h.srv.Close()
	fmt.Fprintf(os.Stderr, "load: %d webhook endpoints on loopback took %d requests\n", h.n, h.took.Load())
}

// settle is how long each arm of measureHooks waits before its slices,
// so that the writes that register or delete the endpoints (bbolt commits
// in embedded mode) are over before they start. Without it, embedded
// acquire measured 82-95 % of the control in four runs of 6 or 12 rounds,
// and with it 98 % in one run. A direct check found no cost: 16 s phases
// with and without 3 endpoints in turn gave 10,544 and 10,998 acquisitions
// a second with them, and 9,675 and 10,802 without.
const settle = 2 * time.Second

// hooksResult is an operation measured with and without the endpoints.
type hooksResult struct {
	ctl, hooks loadgen.Result // each Ratio: the median of its slices over the health slice just before
	paired     float64        // the median over the rounds of hooks' ratio over ctl's
}

// measureHooks measures an operation in rounds of two arms, one with no
// endpoint (the control) and one with the endpoints on, each a health
// slice and then a slice of the operation (as loadgen.MeasurePaired), the
// arms' order alternating from round to round so that the machine's drift
// favours neither. Both arms work on the same license, seconds apart: the
// runs minutes apart that compared them before differed by up to 15 % on
// this kind of machine with nothing changed.
func measureHooks(ctx context.Context, op string, conc int, dur time.Duration, rounds int, call, health loadgen.Prepare, h *hookSwitch) (hooksResult, error) {
	slice := dur / time.Duration(rounds)
	// arms[0] is the control's, arms[1] the one with endpoints.
	var arms [2]struct {
		ops, ceil []loadgen.Sample
		ratios    []float64 // each slice of the operation over the health slice before it
	}
	var pairs []float64
	for r := range rounds {
		for k := range 2 {
			hooks := (k == 0) == (r%2 == 1)
			if hooks {
				if err := h.on(); err != nil {
					return hooksResult{}, err
				}
			}
			time.Sleep(settle)
			c := loadgen.Measure(ctx, conc, slice, health)
			o := loadgen.Measure(ctx, conc, slice, call)
			a := &arms[0]
			if hooks {
				if err := h.off(); err != nil {
					return hooksResult{}, err
				}
				a = &arms[1]
			}
			a.ceil, a.ops, a.ratios = append(a.ceil, c), append(a.ops, o), append(a.ratios, o.RPS()/c.RPS())
		}
		pairs = append(pairs, arms[1].ratios[r]/arms[0].ratios[r])
	}
	fmt.Fprintf(os.Stderr, "load: %s with/without webhook endpoints, round by round:%s\n", op, fmtRatios(pairs))
	summary := func(i int) loadgen.Result {
		res := loadgen.Summarize(op, arms[i].ops...)
		res.CeilingRPS, res.Ratio = loadgen.Summarize("health", arms[i].ceil...).RPS, loadgen.Median(arms[i].ratios)
		return res
	}
	res := hooksResult{ctl: summary(0), hooks: summary(1), paired: loadgen.Median(pairs)}
	return res, nil
}

func fmtRatios(xs []float64) string {
	var b []byte
	for _, x := range xs {
		b = fmt.Appendf(b, " %.3f", x)
	}
	return string(b)
}
