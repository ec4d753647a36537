package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// The outbox and the webhooks' deliveries (server.WebhookStore). An event
// is put into bucketEvents by the same transaction as its change
// (putEvent), keyed by the bucket's sequence, so that the order of keys is
// the order of writing.

var (
	bucketEvents      = []byte("webhook_events")       // seq (8 bytes) -> Event
	bucketEventDedupe = []byte("webhook_dedupe")       // dedupe key -> seq
	bucketHookMeta    = []byte("webhook_meta")         // keyFannedOut -> seq of the last event fanned out
	bucketEndpoints   = []byte("webhook_endpoints")    // endpoint id -> Endpoint
	bucketDeliveries  = []byte("webhook_deliveries")   // delivery id -> Delivery
	bucketDlvEndpoint = []byte("webhook_dlv_endpoint") // endpoint id 0 created id -> "" (newest last)
	bucketDlvPending  = []byte("webhook_pending")      // endpoint id 0 order key 0 seq (8) -> delivery id
	bucketDlvSeq      = []byte("webhook_seq")          // endpoint id 0 order key -> last seq (8)
	keyFannedOut      = []byte("fanned_out")
)

// webhookBuckets are added to older data dirs as they open.
var webhookBuckets = []addedBucket{
	{bucketEvents, nil}, {bucketEventDedupe, nil}, {bucketHookMeta, nil}, {bucketEndpoints, nil},
	{bucketDeliveries, nil}, {bucketDlvEndpoint, nil}, {bucketDlvPending, nil}, {bucketDlvSeq, nil},
}

// putEvent writes e into the outbox (in the caller's transaction).
func putEvent(tx *bolt.Tx, e server.Event) error {
	b := writable(tx, bucketEvents)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	e.Seq = int64(seq)
	if e.DedupeKey != "" {
		if err := tx.Bucket(bucketEventDedupe).Put([]byte(e.DedupeKey), uint64Bytes(seq)); err != nil {
			return err
		}
	}
	return b.Put(uint64Bytes(seq), encode(e))
}

func (s *Store) AppendEvent(_ context.Context, e server.Event) (bool, error) {
	written := false
	err := s.commit.write(func(tx *bolt.Tx) error {
		written = false
		if e.DedupeKey != "" && tx.Bucket(bucketEventDedupe).Get([]byte(e.DedupeKey)) != nil {
			return nil
		}
		written = true
		return putEvent(tx, e)
	})
	if err != nil {
		return false, s.fail("append event", err)
	}
	return written, nil
}

func (s *Store) EventsAfter(_ context.Context, after int64, limit int) ([]server.Event, error) {
	var out []server.Event
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(uint64Bytes(uint64(after) + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			e, err := decode[server.Event](v)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("list events", err)
	}
	return out, nil
}

func (s *Store) CreateEndpoint(_ context.Context, ep server.Endpoint) (server.Endpoint, error) {
	err := s.commit.write(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketTenants).Get([]byte(ep.TenantID)) == nil {
			return server.ErrTenantNotFound
		}
		b := tx.Bucket(bucketEndpoints)
		if b.Get([]byte(ep.ID)) != nil {
			return server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "webhook endpoint already exists")
		}
		return b.Put([]byte(ep.ID), encode(ep))
	})
	if err != nil {
		return server.Endpoint{}, s.fail("create endpoint", err)
	}
	return ep, nil
}

func getEndpoint(tx *bolt.Tx, tenantID, id string) (server.Endpoint, error) {
	v := tx.Bucket(bucketEndpoints).Get([]byte(id))
	if v == nil {
		return server.Endpoint{}, server.ErrEndpointNotFound
	}
	ep, err := decode[server.Endpoint](v)
	if err == nil && ep.TenantID != tenantID {
		return server.Endpoint{}, server.ErrEndpointNotFound
	}
	return ep, err
}

func (s *Store) GetEndpoint(_ context.Context, tenantID, id string) (server.Endpoint, error) {
	var ep server.Endpoint
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		ep, err = getEndpoint(tx, tenantID, id)
		return err
	})
	if err != nil {
		return server.Endpoint{}, s.fail("get endpoint", err)
	}
	return ep, nil
}

func (s *Store) ListEndpoints(_ context.Context, tenantID string) ([]server.Endpoint, error) {
	var out []server.Endpoint
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEndpoints).ForEach(func(_, v []byte) error {
			ep, err := decode[server.Endpoint](v)
			if err == nil && (tenantID == "" || ep.TenantID == tenantID) {
				out = append(out, ep)
			}
			return err
		})
	})
	if err != nil {
		return nil, s.fail("list endpoints", err)
	}
	slices.SortFunc(out, func(a, b server.Endpoint) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare([]byte(a.ID), []byte(b.ID))
	})
	return out, nil
}

func (s *Store) UpdateEndpoint(_ context.Context, tenantID, id string, update func(*server.Endpoint) error) (server.Endpoint, error) {
	var ep server.Endpoint
	err := s.commit.write(func(tx *bolt.Tx) error {
		cur, err := getEndpoint(tx, tenantID, id)
		if err != nil {
			return err
		}
		next := cur
		next.Types, next.Secrets = slices.Clone(cur.Types), slices.Clone(cur.Secrets)
		if err := update(&next); err != nil {
			return err
		}
		next.ID, next.TenantID, next.CreatedAt = cur.ID, cur.TenantID, cur.CreatedAt
		next.UpdatedAt = s.now()
		wasEnabled := !cur.Disabled
		if wasEnabled && next.Disabled && next.DisabledReason != "" {
			// Disabled for failing: say so with an event, in the same write.
			e := server.NewEvent(server.EventEndpointDisabled, next.UpdatedAt, next.TenantID, "", next.ID, "",
				server.EventData{Endpoint: &server.EventEndpoint{ID: next.ID, URL: next.URL, Reason: next.DisabledReason}})
			if err := putEvent(tx, e); err != nil {
				return err
			}
		}
		ep = next
		return tx.Bucket(bucketEndpoints).Put([]byte(id), encode(next))
	})
	if err != nil {
		return server.Endpoint{}, s.fail("update endpoint", err)
	}
	return ep, nil
}

func (s *Store) DeleteEndpoint(_ context.Context, tenantID, id string) error {
	err := s.commit.write(func(tx *bolt.Tx) error {
		if _, err := getEndpoint(tx, tenantID, id); err != nil {
			return err
		}
		pfx := prefix(id)
		deliveries := tx.Bucket(bucketDeliveries)
		for _, name := range [][]byte{bucketDlvEndpoint, bucketDlvPending, bucketDlvSeq} {
			b := tx.Bucket(name)
			c := b.Cursor()
			for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Seek(pfx) {
				if bytes.Equal(name, bucketDlvEndpoint) { // the delivery goes with its index entry
					if err := deliveries.Delete([]byte(idFromTimeKey(k, len(pfx)))); err != nil {
						return err
					}
				}
				if err := b.Delete(k); err != nil {
					return err
				}
			}
		}
		return tx.Bucket(bucketEndpoints).Delete([]byte(id))
	})
	if err != nil {
		return s.fail("delete endpoint", err)
	}
	return nil
}

// pendingKey is endpoint 0 order key 0 seq: an endpoint's pending
// deliveries of one order key, by sequence.
func pendingKey(endpointID, orderKey string, seq int64) []byte {
	k := append(prefix(endpointID), prefix(orderKey)...)
	return binary.BigEndian.AppendUint64(k, uint64(seq))
}

func (s *Store) FanOut(_ context.Context, now time.Time, limit int) (int, error) {
	n := 0
	err := s.commit.write(func(tx *bolt.Tx) error {
		n = 0
		meta := tx.Bucket(bucketHookMeta)
		last := bytesUint64(meta.Get(keyFannedOut))
		var endpoints []server.Endpoint
		if err := tx.Bucket(bucketEndpoints).ForEach(func(_, v []byte) error {
			ep, err := decode[server.Endpoint](v)
			if err == nil && !ep.Disabled {
				endpoints = append(endpoints, ep)
			}
			return err
		}); err != nil {
			return err
		}
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(uint64Bytes(last + 1)); k != nil && n < limit; k, v = c.Next() {
			e, err := decode[server.Event](v)
			if err != nil {
				return err
			}
			for i := range endpoints {
				ep := &endpoints[i]
				if ep.TenantID != e.TenantID || !ep.Wants(e.Type) {
					continue
				}
				if err := putDelivery(tx, ep, e, now); err != nil {
					return err
				}
			}
			last = bytesUint64(k)
			n++
		}
		return meta.Put(keyFannedOut, uint64Bytes(last))
	})
	if err != nil {
		return 0, s.fail("fan out events", err)
	}
	return n, nil
}

// putDelivery writes a new pending delivery of e to ep, next in its
// (endpoint, order key) sequence.
func putDelivery(tx *bolt.Tx, ep *server.Endpoint, e server.Event, now time.Time) error {
	d := server.Delivery{
		ID: server.NewID("dlv_"), EndpointID: ep.ID, TenantID: ep.TenantID, Event: e,
		OrderKey: e.OrderKey(), State: server.DeliveryPending, CreatedAt: now, NextAt: now,
	}
	seqs := tx.Bucket(bucketDlvSeq)
	sk := append(prefix(ep.ID), d.OrderKey...)
	d.Seq = int64(bytesUint64(seqs.Get(sk))) + 1
	return putAll(
		put{seqs, sk, uint64Bytes(uint64(d.Seq))},
		put{tx.Bucket(bucketDeliveries), []byte(d.ID), encode(d)},
		put{tx.Bucket(bucketDlvEndpoint), timeKey(ep.ID, now, d.ID), nil},
		put{tx.Bucket(bucketDlvPending), pendingKey(ep.ID, d.OrderKey, d.Seq), []byte(d.ID)},
	)
}

func (s *Store) DueDeliveries(_ context.Context, now time.Time, limit int) ([]server.Delivery, error) {
	var out []server.Delivery
	err := s.view(func(tx *bolt.Tx) error {
		deliveries := tx.Bucket(bucketDeliveries)
		c := tx.Bucket(bucketDlvPending).Cursor()
		// Each line (endpoint 0 order key 0) is read to its first key
		// only: the next line starts past every key of this one (its last
		// separator, a NUL, plus one), so a backlog behind a retried head
		// costs nothing here.
		for k, v := c.First(); k != nil && len(out) < limit; {
			next := bytes.Clone(k[:len(k)-8])
			next[len(next)-1] = 1
			d, err := decode[server.Delivery](deliveries.Get(v))
			if err != nil {
				return err
			}
			if !d.NextAt.After(now) {
				out = append(out, d)
			}
			k, v = c.Seek(next)
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("due deliveries", err)
	}
	return out, nil
}

func (s *Store) RecordAttempt(_ context.Context, id string, a server.Attempt) (server.Delivery, error) {
	var d server.Delivery
	err := s.commit.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDeliveries)
		v := b.Get([]byte(id))
		if v == nil {
			return server.ErrDeliveryNotFound
		}
		var err error
		if d, err = decode[server.Delivery](v); err != nil {
			return err
		}
		if d.State != server.DeliveryPending {
			return server.ErrDeliveryNotFound
		}
		d.Attempts++
		d.LastAt, d.LastStatus, d.LastError, d.LastLatency = a.At, a.Status, a.Error, a.Latency
		d.State, d.NextAt = a.Next, a.NextAt
		if d.State != server.DeliveryPending {
			d.NextAt = time.Time{}
			if err := tx.Bucket(bucketDlvPending).Delete(pendingKey(d.EndpointID, d.OrderKey, d.Seq)); err != nil {
				return err
			}
		}
		return b.Put([]byte(id), encode(d))
	})
	if err != nil {
		return server.Delivery{}, s.fail("record attempt", err)
	}
	return d, nil
}

func (s *Store) ListDeliveries(_ context.Context, tenantID, endpointID string, p server.Page) ([]server.Delivery, string, error) {
	var (
		out  []server.Delivery
		next string
	)
	pfx := prefix(endpointID)
	err := s.view(func(tx *bolt.Tx) error {
		if _, err := getEndpoint(tx, tenantID, endpointID); err != nil {
			return err
		}
		deliveries := tx.Bucket(bucketDeliveries)
		var err error
		out, next, err = scanPage(tx.Bucket(bucketDlvEndpoint).Cursor(), pfx, p, true, func(k, _ []byte) (server.Delivery, bool, error) {
			d, err := decode[server.Delivery](deliveries.Get([]byte(idFromTimeKey(k, len(pfx)))))
			return d, err == nil, err
		})
		return err
	})
	if err != nil {
		return nil, "", s.fail("list deliveries", err)
	}
	return out, next, nil
}

func getDelivery(tx *bolt.Tx, tenantID, id string) (server.Delivery, error) {
	v := tx.Bucket(bucketDeliveries).Get([]byte(id))
	if v == nil {
		return server.Delivery{}, server.ErrDeliveryNotFound
	}
	d, err := decode[server.Delivery](v)
	if err == nil && d.TenantID != tenantID {
		return server.Delivery{}, server.ErrDeliveryNotFound
	}
	return d, err
}

func (s *Store) GetDelivery(_ context.Context, tenantID, id string) (server.Delivery, error) {
	var d server.Delivery
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		d, err = getDelivery(tx, tenantID, id)
		return err
	})
	if err != nil {
		return server.Delivery{}, s.fail("get delivery", err)
	}
	return d, nil
}

func (s *Store) ReplayDelivery(_ context.Context, tenantID, id string, now time.Time) (server.Delivery, error) {
	var d server.Delivery
	err := s.commit.write(func(tx *bolt.Tx) error {
		var err error
		if d, err = getDelivery(tx, tenantID, id); err != nil {
			return err
		}
		d.State, d.NextAt = server.DeliveryPending, now
		return putAll(
			put{tx.Bucket(bucketDeliveries), []byte(d.ID), encode(d)},
			put{tx.Bucket(bucketDlvPending), pendingKey(d.EndpointID, d.OrderKey, d.Seq), []byte(d.ID)},
		)
	})
	if err != nil {
		return server.Delivery{}, s.fail("replay delivery", err)
	}
	return d, nil
}

var _ server.WebhookStore = (*Store)(nil)

// pruneDeliveries removes delivered and failed deliveries made and last
// tried before before (server.RecordWebhookDeliveries), endpoint by
// endpoint, oldest first. A pending one is never removed; the line's last
// sequence (bucketDlvSeq) stays, so that the next delivery of its line
// still takes the next number.
func pruneDeliveries(tx *bolt.Tx, before time.Time, limit int) (int, error) {
	deliveries, byEndpoint := writable(tx, bucketDeliveries), writable(tx, bucketDlvEndpoint)
	n := 0
	for _, ep := range scopesOf(tx, bucketEndpoints) {
		pfx := prefix(string(ep))
		end := timeKey(string(ep), before, "")
		var doomed [][]byte
		c := byEndpoint.Cursor()
		for k, _ := c.Seek(pfx); k != nil && n+len(doomed) < limit && bytes.Compare(k, end) < 0; k, _ = c.Next() {
			id := k[len(pfx)+8:]
			d, err := decode[server.Delivery](deliveries.Get(id))
			if err != nil {
				return 0, err
			}
			if d.State == server.DeliveryPending || !d.LastAt.Before(before) {
				continue // still retrying, or tried (replayed) since
			}
			doomed = append(doomed, bytes.Clone(k))
		}
		for _, k := range doomed {
			if err := deleteAll(del{deliveries, k[len(pfx)+8:]}, del{byEndpoint, k}); err != nil {
				return 0, err
			}
		}
		n += len(doomed)
		if n == limit {
			break
		}
	}
	return n, nil
}

// pruneEvents removes outbox events of before before that are fanned out
// (server.RecordWebhookEvents), in the order they were written, with
// their dedupe keys. A delivery keeps a copy of its event, so a pending
// one still sends it. The scan stops at the first event too young or not
// fanned out: events are written at their time, so one a little older
// behind it (a clock step) goes at a later pass.
func pruneEvents(tx *bolt.Tx, before time.Time, limit int) (int, error) {
	events, dedupe := writable(tx, bucketEvents), writable(tx, bucketEventDedupe)
	fanned := bytesUint64(tx.Bucket(bucketHookMeta).Get(keyFannedOut))
	var doomed []server.Event
	c := events.Cursor()
	for k, v := c.First(); k != nil && len(doomed) < limit && bytesUint64(k) <= fanned; k, v = c.Next() {
		e, err := decode[server.Event](v)
		if err != nil {
			return 0, err
		}
		if !e.At.Before(before) {
			break
		}
		e.Seq = int64(bytesUint64(k))
		doomed = append(doomed, e)
	}
	for _, e := range doomed {
		ds := []del{{events, uint64Bytes(uint64(e.Seq))}}
		if e.DedupeKey != "" && bytesUint64(dedupe.Get([]byte(e.DedupeKey))) == uint64(e.Seq) {
			ds = append(ds, del{dedupe, []byte(e.DedupeKey)})
		}
		if err := deleteAll(ds...); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}
