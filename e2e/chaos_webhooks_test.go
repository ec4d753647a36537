package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/e2e/chaos"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The campaign's webhook receiver (issue 29): an HTTP endpoint on
// loopback, subscribed to every event of the campaign's tenant, that
// outlives every seatd the nemesis kills. It verifies each request's
// Standard Webhooks signature with a few lines of its own (HMAC-SHA256
// over id.timestamp.body: not seatd's signing code) and misbehaves as
// receivers do: now and then it answers 500 (the request was not taken:
// seatd retries it) or takes the request and cuts the connection before
// its answer (seatd retries it: a duplicate, with the same id). After
// the campaign, drainWebhooks waits for the deliveries to settle and
// chaos.CheckWebhooks judges the property.
//
// CHAOS_WEBHOOK_DROP=n makes the receiver forget the n-th distinct lease
// end event it takes (answering 2xx, every time it comes): a run that must
// then fail its verdict, to show that the checker catches a lost event.
type chaosReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	secret  []byte // the endpoint's HMAC key, once created
	rng     *rand.Rand
	hooks   []chaos.Hook
	refused int // answered 500
	cut     int // taken, then the connection cut before the answer
	// CHAOS_WEBHOOK_DROP: the n-th distinct lease end event is dropped.
	endIDs    map[string]bool
	drop      int
	dropped   string
	droppedAs string
}

// Receiver faults, in percent of requests.
const (
	receiverRefuses = 4
	receiverCuts    = 3
)

func newChaosReceiver(t *testing.T, seed uint64) *chaosReceiver {
	r := &chaosReceiver{rng: rand.New(rand.NewPCG(seed, 0x5ea7d)), drop: -1, endIDs: map[string]bool{}}
	if v := os.Getenv("CHAOS_WEBHOOK_DROP"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "CHAOS_WEBHOOK_DROP")
		r.drop = n
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *chaosReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	at := time.Now()
	r.mu.Lock()
	fault := r.rng.IntN(100)
	if fault < receiverRefuses {
		r.refused++
		r.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	h := r.parse(req.Header, body, at)
	if _, end := map[string]bool{"lease.expired": true, "lease.revoked": true}[h.Type]; end && !r.endIDs[h.ID] {
		r.endIDs[h.ID] = true
		if len(r.endIDs) == r.drop {
			r.dropped = h.ID
			r.droppedAs = h.Type + " of " + h.Subject
		}
	}
	if h.ID == r.dropped { // forgotten, every time it comes
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	r.hooks = append(r.hooks, h)
	cut := fault < receiverRefuses+receiverCuts
	if cut {
		r.cut++
	}
	r.mu.Unlock()
	if cut {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// parse reads a request into a chaos.Hook and checks its signature. Call
// with r.mu held.
func (r *chaosReceiver) parse(hdr http.Header, body []byte, at time.Time) chaos.Hook {
	var p struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Sequence int64  `json:"sequence"`
		Data     struct {
			Lease *struct {
				ID        string `json:"id"`
				LicenseID string `json:"license_id"`
				State     string `json:"state"`
			} `json:"lease"`
			License *struct {
				ID      string `json:"id"`
				GrantID string `json:"grant_id"`
			} `json:"license"`
			APIKey *struct {
				ID string `json:"id"`
			} `json:"api_key"`
			Endpoint *struct {
				ID string `json:"id"`
			} `json:"endpoint"`
		} `json:"data"`
	}
	h := chaos.Hook{ID: hdr.Get("webhook-id"), Body: string(body), At: at}
	if err := json.Unmarshal(body, &p); err != nil {
		h.Type = "unreadable: " + err.Error()
		return h
	}
	h.BodyID, h.Type, h.Sequence = p.ID, p.Type, p.Sequence
	switch d := p.Data; {
	case d.Lease != nil:
		h.Subject, h.License, h.LeaseState = d.Lease.ID, d.Lease.LicenseID, d.Lease.State
	case d.License != nil:
		h.Subject, h.License = d.License.ID, d.License.ID
		if d.License.GrantID != "" { // license.expiring of a grant
			h.Subject = d.License.GrantID
		}
	case d.APIKey != nil:
		h.Subject = d.APIKey.ID
	case d.Endpoint != nil:
		h.Subject = d.Endpoint.ID
	}
	h.SignatureOK = verifySignature(r.secret, hdr, body)
	return h
}

// verifySignature checks a Standard Webhooks signature with the standard
// library only: base64(HMAC-SHA256(key, id.timestamp.body)) among the
// header's space-separated "v1,<signature>" entries.
func verifySignature(key []byte, hdr http.Header, body []byte) bool {
	if len(key) == 0 {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(hdr.Get("webhook-id") + "." + hdr.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(hdr.Get("webhook-signature")) {
		v, ok := strings.CutPrefix(sig, "v1,")
		if !ok {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(v)
		if err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// register makes an endpoint of the receiver subscribed to every event
// type of the operator's tenant (the campaign's), and returns the tenant.
func (r *chaosReceiver) register(t *testing.T, p *proc) string {
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	created, err := p.admin().CreateWebhookEndpoint(p.asOperator(ctx), &seatdv1.CreateWebhookEndpointRequest{
		Url: r.srv.URL + "/chaos", Description: "chaos receiver",
	})
	require.NoError(t, err, "create the chaos webhook endpoint")
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(created.GetSecret(), "whsec_"))
	require.NoError(t, err, "endpoint secret")
	r.mu.Lock()
	r.secret = key
	r.mu.Unlock()
	return created.GetEndpoint().GetTenantId()
}

func (r *chaosReceiver) taken() []chaos.Hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chaos.Hook(nil), r.hooks...)
}

// webhookDrainStall: the drain fails when no delivery settled for this
// long (a delivery retried after 5, 10, 20, 40 s, jittered, settles
// within it unless the receiver refuses it five times in a row).
const webhookDrainStall = 3 * time.Minute

// drainWebhooks waits, the seatds running, until every outbox event is
// fanned out and no delivery is pending: for as long as deliveries keep
// settling, failing only after webhookDrainStall without one (so the wait
// scales with the backlog and the machine). It returns what the record
// still has unsettled (nothing when drained) and how long it waited.
func (c *campaign) drainWebhooks() (unsettled []string, took time.Duration) {
	t := c.t
	start := time.Now()
	db := c.b.db(t)
	defer func() { _ = db.Close(context.Background()) }()
	lastProgress, lastSettled := time.Now(), int64(-1)
	for {
		var unfanned, pending, settled int64
		err := db.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM webhook_events WHERE NOT fanned_out),
			(SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'),
			(SELECT count(*) FROM webhook_deliveries WHERE state <> 'pending')`).Scan(&unfanned, &pending, &settled)
		require.NoError(t, err, "webhook drain")
		if unfanned == 0 && pending == 0 {
			break
		}
		if settled != lastSettled {
			lastProgress, lastSettled = time.Now(), settled
		}
		if time.Since(lastProgress) > webhookDrainStall {
			break
		}
		sleepCtx(t.Context(), 250*time.Millisecond)
	}
	return webhookUnsettled(t, db), time.Since(start)
}

// webhookUnsettled lists the outbox events not fanned out and the
// deliveries not delivered.
func webhookUnsettled(t *testing.T, db *pgx.Conn) []string {
	rows, err := db.Query(t.Context(), `
		SELECT 'event ' || id || ' (' || type || ' ' || subject_id || ') not fanned out' FROM webhook_events WHERE NOT fanned_out
		UNION ALL
		SELECT 'delivery ' || d.id || ' ' || d.state || ' (' || e.type || ' ' || e.subject_id || ', ' || d.attempts
			|| ' attempts, last ' || d.last_status || ' ' || d.last_error || ')'
		FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq WHERE d.state <> 'delivered'`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// webhookOutbox reads the record's events of the tenant.
func webhookOutbox(t *testing.T, db *pgx.Conn, tenant string) []chaos.OutboxEvent {
	rows, err := db.Query(t.Context(), `SELECT id, type, subject_id, license_id FROM webhook_events WHERE tenant_id = $1 ORDER BY seq`, tenant)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chaos.OutboxEvent, error) {
		var e chaos.OutboxEvent
		err := row.Scan(&e.ID, &e.Type, &e.Subject, &e.License)
		return e, err
	})
	require.NoError(t, err)
	return out
}

// webhookVerdict judges the webhook property and writes its lines of the
// summary.
func (c *campaign) webhookVerdict(db *pgx.Conn, recs map[string]chaos.Record, summary *strings.Builder) []chaos.Violation {
	r := c.hooks
	sum, vs := chaos.CheckWebhooks(r.taken(), webhookOutbox(c.t, db, c.tenant), recs, c.ids, c.unsettled)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(summary, "  webhooks: %d events in the outbox, %d requests taken (%d refused with 500, %d cut before the answer), drained in %s\n",
		sum.Outbox, sum.Requests, r.refused, r.cut, c.drained.Round(time.Second))
	fmt.Fprintf(summary, "  webhooks: %d distinct event ids, %d duplicates, %d leases expired or revoked in the record\n",
		sum.Distinct, sum.Duplicates, sum.EndedLeases)
	for _, k := range sortedKeys(sum.ByType) {
		fmt.Fprintf(summary, "  hook  %-22s %d\n", k, sum.ByType[k])
	}
	if r.dropped != "" {
		fmt.Fprintf(summary, "  webhooks: CHAOS_WEBHOOK_DROP forgot %s (%s) every time it came\n", r.dropped, r.droppedAs)
	}
	fmt.Fprintf(summary, "  webhook violations %d\n", len(vs))
	return vs
}
