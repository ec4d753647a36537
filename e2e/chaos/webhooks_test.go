package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// webhookCase is a small campaign's end: lease a expired, b revoked, c
// released, the license created and updated; each event delivered once,
// a's twice (a duplicate with the same id and body).
func webhookCase() ([]Hook, []OutboxEvent, map[string]Record) {
	t0 := time.Unix(1_800_000_000, 0)
	outbox := []OutboxEvent{
		{ID: "evt_1", Type: "license.created", Subject: "lic", License: "lic"},
		{ID: "evt_2", Type: "license.updated", Subject: "lic", License: "lic"},
		{ID: "evt_3", Type: "lease.expired", Subject: "a", License: "lic"},
		{ID: "evt_4", Type: "lease.revoked", Subject: "b", License: "lic"},
	}
	hook := func(i int, e OutboxEvent, state string) Hook {
		return Hook{ID: e.ID, BodyID: e.ID, Type: e.Type, Subject: e.Subject, License: e.License, LeaseState: state,
			Sequence: int64(i + 1), Body: "body of " + e.ID, SignatureOK: true, At: t0.Add(time.Duration(i) * time.Second)}
	}
	hooks := []Hook{hook(0, outbox[0], ""), hook(1, outbox[1], ""), hook(2, outbox[2], "expired"), hook(2, outbox[2], "expired"), hook(3, outbox[3], "revoked")}
	hooks[3].At = t0.Add(10 * time.Second)
	recs := map[string]Record{
		"a": {ID: "a", License: "lic", State: "expired"},
		"b": {ID: "b", License: "lic", State: "revoked"},
		"c": {ID: "c", License: "lic.00000001", State: "released"},
	}
	return hooks, outbox, recs
}

func properties(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Property)
	}
	return out
}

func TestCheckWebhooksClean(t *testing.T) {
	hooks, outbox, recs := webhookCase()
	sum, vs := CheckWebhooks(hooks, outbox, recs, []string{"lic"}, nil)
	require.Empty(t, vs)
	require.Equal(t, HookSummary{Requests: 5, Distinct: 4, Duplicates: 1, Outbox: 4, EndedLeases: 2,
		ByType: map[string]int{"license.created": 1, "license.updated": 1, "lease.expired": 1, "lease.revoked": 1}}, sum)
}

// Each way the property can break is caught, under its own name.
func TestCheckWebhooksCatches(t *testing.T) {
	for name, tc := range map[string]struct {
		spoil func(hooks *[]Hook, outbox *[]OutboxEvent, recs map[string]Record, undelivered *[]string)
		want  []string
	}{
		"an end event the receiver never got": {
			spoil: func(h *[]Hook, _ *[]OutboxEvent, _ map[string]Record, _ *[]string) {
				*h = append((*h)[:2], (*h)[4:]...) // a's both requests
			},
			// Lost, and the license's sequence has a gap where it was.
			want: []string{"webhook-undelivered", "webhook-sequence"},
		},
		"an ended lease without an event": {
			spoil: func(h *[]Hook, o *[]OutboxEvent, recs map[string]Record, _ *[]string) {
				recs["d"] = Record{ID: "d", License: "lic", State: "revoked"}
			},
			want: []string{"webhook-lost"},
		},
		"two end events of one lease": {
			spoil: func(h *[]Hook, o *[]OutboxEvent, _ map[string]Record, _ *[]string) {
				e := OutboxEvent{ID: "evt_5", Type: "lease.revoked", Subject: "a", License: "lic"}
				*o = append(*o, e)
				*h = append(*h, Hook{ID: e.ID, BodyID: e.ID, Type: e.Type, Subject: "a", License: "lic", LeaseState: "revoked",
					Sequence: 5, SignatureOK: true, At: time.Unix(1_900_000_000, 0)})
			},
			want: []string{"webhook-invented", "webhook-exactly-once"},
		},
		"an event not in the outbox": {
			spoil: func(h *[]Hook, _ *[]OutboxEvent, _ map[string]Record, _ *[]string) {
				*h = append(*h, Hook{ID: "evt_9", BodyID: "evt_9", Type: "license.deleted", Subject: "lic", License: "lic",
					Sequence: 5, SignatureOK: true, At: time.Unix(1_900_000_000, 0)})
			},
			want: []string{"webhook-invented"},
		},
		"an end event of a released lease": {
			spoil: func(h *[]Hook, o *[]OutboxEvent, _ map[string]Record, _ *[]string) {
				e := OutboxEvent{ID: "evt_5", Type: "lease.expired", Subject: "c", License: "lic"}
				*o = append(*o, e)
				*h = append(*h, Hook{ID: e.ID, BodyID: e.ID, Type: e.Type, Subject: "c", License: "lic", LeaseState: "expired",
					Sequence: 5, SignatureOK: true, At: time.Unix(1_900_000_000, 0)})
			},
			// The delivered event, and the outbox's, each name an end the record does not have.
			want: []string{"webhook-invented", "webhook-invented"},
		},
		"an event of another license": {
			spoil: func(h *[]Hook, o *[]OutboxEvent, _ map[string]Record, _ *[]string) {
				e := OutboxEvent{ID: "evt_5", Type: "license.created", Subject: "other", License: "other"}
				*o = append(*o, e)
				*h = append(*h, Hook{ID: e.ID, BodyID: e.ID, Type: e.Type, Subject: "other", License: "other",
					Sequence: 1, SignatureOK: true, At: time.Unix(1_900_000_000, 0)})
			},
			want: []string{"webhook-invented"},
		},
		"a bad signature": {
			spoil: func(h *[]Hook, _ *[]OutboxEvent, _ map[string]Record, _ *[]string) { (*h)[1].SignatureOK = false },
			want:  []string{"webhook-signature"},
		},
		"a duplicate with another body": {
			spoil: func(h *[]Hook, _ *[]OutboxEvent, _ map[string]Record, _ *[]string) { (*h)[3].Body = "changed" },
			want:  []string{"webhook-duplicate"},
		},
		"a later event first": {
			spoil: func(h *[]Hook, _ *[]OutboxEvent, _ map[string]Record, _ *[]string) {
				(*h)[4].At = time.Unix(1_700_000_000, 0)
			},
			want: []string{"webhook-order"},
		},
		"a delivery left pending": {
			spoil: func(_ *[]Hook, _ *[]OutboxEvent, _ map[string]Record, u *[]string) {
				*u = append(*u, "delivery dlv_1 pending")
			},
			want: []string{"webhook-undelivered"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			hooks, outbox, recs := webhookCase()
			var undelivered []string
			tc.spoil(&hooks, &outbox, recs, &undelivered)
			_, vs := CheckWebhooks(hooks, outbox, recs, []string{"lic"}, undelivered)
			require.ElementsMatch(t, tc.want, properties(vs), "%v", vs)
		})
	}
}
