package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// The webhook property (issue 29): every lease the record says expired or
// was revoked produced exactly one event id, delivered at least once, and
// no event names a change the record does not have. CheckWebhooks judges
// it on what the campaign's receiver got, the record's outbox and its
// leases, once the deliveries have settled.

// Hook is one request the campaign's webhook receiver took (answered 2xx,
// or read and then cut off before its answer: a receiver that acted on
// it; the sender tries it again).
type Hook struct {
	// ID is the webhook-id header, BodyID the payload's id.
	ID, BodyID string
	Type       string
	Subject    string // the lease's id (lease.*), the license's (license.*)
	License    string // the payload's license: data.lease.license_id or data.license.id
	LeaseState string // data.lease.state
	Sequence   int64
	Body       string
	// SignatureOK: the webhook-signature header held a valid v1
	// signature of id.timestamp.body under the endpoint's secret.
	SignatureOK bool
	At          time.Time // when it arrived
}

// OutboxEvent is one event of the record's outbox (webhook_events).
type OutboxEvent struct {
	ID, Type, Subject, License string
}

// HookSummary counts what the receiver got, for the campaign's summary.
type HookSummary struct {
	Requests    int            // requests taken (duplicates included)
	Distinct    int            // distinct event ids
	Duplicates  int            // requests of an id taken before
	ByType      map[string]int // distinct ids by type
	Outbox      int            // events in the outbox
	EndedLeases int            // leases the record says expired or were revoked
}

// Lease end events and the state each reports.
var endEvents = map[string]string{"lease.expired": "expired", "lease.revoked": "revoked"}

// CheckWebhooks judges the property on hooks (every request the receiver
// took), outbox (the record's events of the campaign's tenant), recs (the
// record's leases of the campaign's pools, by id) and licenses (the
// campaign's license ids). undelivered names the deliveries the record
// still has pending or failed after the drain (each a violation).
func CheckWebhooks(hooks []Hook, outbox []OutboxEvent, recs map[string]Record, licenses []string, undelivered []string) (HookSummary, []Violation) {
	var vs []Violation
	bad := func(property, license, lease, format string, args ...any) {
		vs = append(vs, Violation{Property: property, License: license, Lease: lease, Detail: fmt.Sprintf(format, args...)})
	}
	sum := HookSummary{Requests: len(hooks), ByType: map[string]int{}, Outbox: len(outbox)}
	isLicense := map[string]bool{}
	for _, l := range licenses {
		isLicense[l] = true
	}
	events := map[string]OutboxEvent{}
	endsOf := map[string][]OutboxEvent{} // lease id -> its end events in the outbox
	for _, e := range outbox {
		if _, dup := events[e.ID]; dup {
			bad("webhook-outbox-id", e.License, e.Subject, "event id %s written twice", e.ID)
		}
		events[e.ID] = e
		if _, ok := endEvents[e.Type]; ok {
			endsOf[e.Subject] = append(endsOf[e.Subject], e)
		}
	}

	// What the receiver took: signed, as written, of a change the record has.
	first := map[string]Hook{}
	for _, h := range hooks {
		if !h.SignatureOK {
			bad("webhook-signature", h.License, h.Subject, "event %s (%s): no valid signature", h.ID, h.Type)
		}
		if h.BodyID != h.ID {
			bad("webhook-id", h.License, h.Subject, "webhook-id %s, payload id %s", h.ID, h.BodyID)
		}
		if f, seen := first[h.ID]; seen {
			sum.Duplicates++
			if f.Body != h.Body {
				bad("webhook-duplicate", h.License, h.Subject, "event %s sent again with another body:\n    %s\n    %s", h.ID, f.Body, h.Body)
			}
			continue
		}
		first[h.ID] = h
		sum.ByType[h.Type]++
		e, ok := events[h.ID]
		if !ok {
			bad("webhook-invented", h.License, h.Subject, "event %s (%s) is not in the record's outbox", h.ID, h.Type)
			continue
		}
		if e.Type != h.Type || e.Subject != h.Subject {
			bad("webhook-invented", h.License, h.Subject, "event %s delivered as %s of %s, written as %s of %s", h.ID, h.Type, h.Subject, e.Type, e.Subject)
		}
		switch {
		case endEvents[h.Type] != "":
			r, ok := recs[h.Subject]
			switch {
			case !ok:
				bad("webhook-invented", h.License, h.Subject, "%s %s of a lease the record does not have", h.Type, h.ID)
			case r.State != endEvents[h.Type]:
				bad("webhook-invented", r.License, h.Subject, "%s %s of a lease the record says is %s", h.Type, h.ID, r.State)
			case h.LeaseState != r.State:
				bad("webhook-invented", r.License, h.Subject, "%s %s says the lease is %q", h.Type, h.ID, h.LeaseState)
			}
		case h.Type == "lease.borrowed":
			if _, ok := recs[h.Subject]; !ok {
				bad("webhook-invented", h.License, h.Subject, "lease.borrowed %s of a lease the record does not have", h.ID)
			}
		}
		if h.License != "" && !isLicense[h.License] {
			bad("webhook-invented", h.License, h.Subject, "%s %s names license %s, not one of the campaign's", h.Type, h.ID, h.License)
		}
	}
	sum.Distinct = len(first)

	// Every event written was delivered (at least once).
	for _, e := range outbox {
		if _, ok := first[e.ID]; !ok {
			bad("webhook-undelivered", e.License, e.Subject, "%s %s was never delivered", e.Type, e.ID)
		}
	}
	for _, u := range undelivered {
		bad("webhook-undelivered", "", "", "the record still has %s after the drain", u)
	}

	// Every lease that ended expired or revoked: exactly one event id, of its end.
	for _, id := range sortedIDs(recs) {
		r := recs[id]
		ends := endsOf[id]
		if endEvents["lease."+r.State] == "" {
			if len(ends) > 0 {
				bad("webhook-invented", r.License, id, "the lease is %s, yet the outbox has %s %s", r.State, ends[0].Type, ends[0].ID)
			}
			continue
		}
		sum.EndedLeases++
		switch {
		case len(ends) == 0:
			bad("webhook-lost", r.License, id, "the lease is %s and has no event", r.State)
		case len(ends) > 1:
			bad("webhook-exactly-once", r.License, id, "the lease is %s and has %d end events (%s, %s, ...)", r.State, len(ends), ends[0].ID, ends[1].ID)
		case ends[0].Type != "lease."+r.State:
			bad("webhook-invented", r.License, id, "the lease is %s, its event %s says %s", r.State, ends[0].ID, ends[0].Type)
		}
	}
	for lease, ends := range endsOf {
		if _, ok := recs[lease]; !ok {
			bad("webhook-invented", ends[0].License, lease, "%s %s of a lease the record does not have", ends[0].Type, ends[0].ID)
		}
	}

	vs = append(vs, checkSequences(first)...)
	return sum, vs
}

// checkSequences: the deliveries of one license to the endpoint are
// numbered 1, 2, ... without a gap (every one was delivered), each id
// keeps its number, and none first arrived before the one numbered
// before it (a later event waits behind an earlier one still retrying).
func checkSequences(first map[string]Hook) []Violation {
	var vs []Violation
	byKey := map[string][]Hook{}
	for _, h := range first {
		key := h.License
		if key == "" {
			key = h.Subject
		}
		byKey[key] = append(byKey[key], h)
	}
	for key, hs := range byKey {
		sort.Slice(hs, func(i, j int) bool { return hs[i].Sequence < hs[j].Sequence })
		for i, h := range hs {
			if h.Sequence != int64(i+1) {
				vs = append(vs, Violation{Property: "webhook-sequence", License: key, Lease: h.Subject,
					Detail: fmt.Sprintf("event %s (%s) has sequence %d, expected %d (a gap or a repeat)", h.ID, h.Type, h.Sequence, i+1)})
				break
			}
			if i > 0 && h.At.Before(hs[i-1].At) {
				vs = append(vs, Violation{Property: "webhook-order", License: key, Lease: h.Subject,
					Detail: fmt.Sprintf("event %s (sequence %d) arrived before %s (sequence %d)", h.ID, h.Sequence, hs[i-1].ID, hs[i-1].Sequence)})
			}
		}
	}
	slices.SortFunc(vs, func(a, b Violation) int {
		if a.License < b.License {
			return -1
		}
		if a.License > b.License {
			return 1
		}
		return 0
	})
	return vs
}

func sortedIDs(recs map[string]Record) []string {
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
