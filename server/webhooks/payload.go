// Package webhooks renders, signs and delivers the events the stores
// write into their outboxes (server.Event, invariant 14), and produces
// the events that report no change of the record (Signals): a license
// running out of seats, near its peak, or about to expire.
//
// Delivery is at least once: an event is sent until its endpoint answers
// 2xx, the retry window (Config.RetryFor) ends, or the endpoint is
// disabled; a crash between a send and its record sends it again, with
// the same webhook-id. Requests are signed as the Standard Webhooks
// specification says (sign.go), with its own Go library.
package webhooks

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/seatd/seatd/server"
)

// Payload is the JSON body of a delivery: its schema is stable (fields
// are only ever added) and documented in the README's Webhooks section.
type Payload struct {
	ID        string           `json:"id"`        // the event's id: the webhook-id header too
	Type      server.EventType `json:"type"`      // license.created, lease.expired, ...
	Timestamp time.Time        `json:"timestamp"` // when the change happened
	TenantID  string           `json:"tenant_id"`
	// Sequence numbers an endpoint's deliveries of one license (or, for
	// an event of no license, of its subject) from 1: a receiver can see
	// a gap (an earlier delivery that failed, to be replayed) or an old
	// event sent again.
	Sequence int64            `json:"sequence"`
	Data     server.EventData `json:"data"`
}

// Render is the body of a delivery: the same bytes for the same delivery,
// whichever store wrote its event.
func Render(d server.Delivery) ([]byte, error) {
	var data server.EventData
	if err := json.Unmarshal(d.Event.Data, &data); err != nil {
		return nil, fmt.Errorf("event %s: data: %w", d.Event.ID, err)
	}
	normalize(&data)
	return json.Marshal(Payload{
		ID: d.Event.ID, Type: d.Event.Type, Timestamp: canonical(d.Event.At), TenantID: d.Event.TenantID,
		Sequence: d.Seq, Data: data,
	})
}

// canonical is a time as a payload shows it: UTC, to the microsecond (what
// PostgreSQL keeps), so both stores render one event alike.
func canonical(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

func normalize(d *server.EventData) {
	if l := d.License; l != nil {
		l.ExpiresAt = canonical(l.ExpiresAt)
	}
	if l := d.Lease; l != nil {
		l.AcquiredAt, l.LastHeartbeatAt = canonical(l.AcquiredAt), canonical(l.LastHeartbeatAt)
		l.ExpiresAt, l.EndedAt = canonical(l.ExpiresAt), canonical(l.EndedAt)
	}
	if g := d.Grant; g != nil {
		g.StartsAt, g.ExpiresAt = canonical(g.StartsAt), canonical(g.ExpiresAt)
	}
	if k := d.APIKey; k != nil {
		k.RevokedAt = canonical(k.RevokedAt)
	}
}
