package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// hookReceiver is a webhook endpoint that holds the first request it gets
// until hold is closed (so that seatd can be killed while it delivers),
// then answers 204 to all, keeping every request's webhook-id and body.
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  map[string][][]byte // webhook-id -> each body received with it
	held    chan struct{}       // closed when the first request is being held
	hold    chan struct{}       // close to let held requests answer
	holding sync.Once
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{bodies: map[string][][]byte{}, held: make(chan struct{}), hold: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		first := false
		r.holding.Do(func() { first = true })
		if first {
			close(r.held)
			<-r.hold // seatd dies meanwhile: this answer reaches no one
		}
		r.mu.Lock()
		id := req.Header.Get("webhook-id")
		r.bodies[id] = append(r.bodies[id], body)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		select {
		case <-r.hold:
		default:
			close(r.hold)
		}
		r.Close()
	})
	return r
}

// byType counts the distinct events received of each type, per subject.
func (r *hookReceiver) seen() (events map[string]map[string]string, dups int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events = map[string]map[string]string{} // type -> license id -> event id
	for id, bodies := range r.bodies {
		var p struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				License struct {
					ID string `json:"id"`
				} `json:"license"`
			} `json:"data"`
		}
		if json.Unmarshal(bodies[0], &p) != nil || p.ID != id {
			continue
		}
		if events[p.Type] == nil {
			events[p.Type] = map[string]string{}
		}
		events[p.Type][p.Data.License.ID] = id
		dups += len(bodies) - 1
	}
	return events, dups
}

// TestWebhooksSurviveKill9: seatd killed with SIGKILL while an endpoint
// holds a delivery; after the restart every event is delivered, the one
// that was in flight again with the same webhook-id and body (at least
// once; the receiver drops duplicates by id), none lost, none invented.
func TestWebhooksSurviveKill9(t *testing.T) {
	t.Parallel()
	r := newHookReceiver(t)
	args := []string{"--webhook-allow-private-addresses"}
	p := start(t, options{args: args})
	ctx := t.Context()
	created, err := p.admin().CreateWebhookEndpoint(p.asOperator(ctx), &seatdv1.CreateWebhookEndpointRequest{
		Url: r.URL + "/seatd", Types: []string{"license.created", "license.deleted"},
	})
	require.NoError(t, err)
	require.Regexp(t, `^whsec_`, created.GetSecret())
	listed, err := p.admin().ListWebhookEndpoints(p.asOperator(ctx), &seatdv1.ListWebhookEndpointsRequest{})
	require.NoError(t, err)
	require.Len(t, listed.GetEndpoints(), 1)
	require.NotContains(t, listed.String(), created.GetSecret(), "a list never shows the secret")

	var lics []string
	for i := range 5 {
		lics = append(lics, newLicense(t, p, 1, time.Minute, "hooked-"+string(rune('a'+i))).GetId())
	}
	select {
	case <-r.held:
	case <-time.After(eventTimeout):
		t.Fatal("no delivery reached the endpoint")
	}
	p.kill9() // during the delivery
	close(r.hold)
	require.NotContains(t, p.Output(), created.GetSecret(), "the secret is never logged")

	again := start(t, options{dataDir: p.DataDir, args: args})
	// One more change after the restart: delivered too.
	deleted := lics[0]
	_, err = again.admin().DeleteLicense(again.asOperator(ctx), &seatdv1.DeleteLicenseRequest{LicenseId: deleted})
	require.NoError(t, err)
	waitUntil(t, eventTimeout, "every event delivered", func() (bool, string) {
		events, dups := r.seen()
		ok := len(events["license.created"]) == len(lics) && len(events["license.deleted"]) == 1 && dups >= 1
		return ok, jsonString(events) + fmt.Sprintf(" dups %d", dups)
	})
	events, _ := r.seen()
	for _, id := range lics {
		require.Contains(t, events["license.created"], id, "license.created of %s", id)
	}
	require.Contains(t, events["license.deleted"], deleted)
	require.Len(t, events, 2, "no event of a change that did not happen")
	r.mu.Lock()
	for id, bodies := range r.bodies {
		for _, b := range bodies[1:] {
			require.Equal(t, string(bodies[0]), string(b), "a delivery sent again is the same message (%s)", id)
		}
	}
	r.mu.Unlock()

	// The delivery log says so, once the deliverer has written down the
	// answers the receiver has already given.
	waitUntil(t, eventTimeout, "every delivery logged as delivered", func() (bool, string) {
		log, err := again.admin().ListWebhookDeliveries(again.asOperator(ctx), &seatdv1.ListWebhookDeliveriesRequest{EndpointId: created.GetEndpoint().GetId()})
		require.NoError(t, err)
		if len(log.GetDeliveries()) != len(lics)+1 {
			return false, fmt.Sprintf("%d deliveries", len(log.GetDeliveries()))
		}
		for _, d := range log.GetDeliveries() {
			if d.GetState() != "delivered" {
				return false, d.GetId() + " " + d.GetState()
			}
			require.EqualValues(t, 204, d.GetLastStatus())
		}
		return true, ""
	})
	again.stopOK()
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
