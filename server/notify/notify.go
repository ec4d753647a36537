// Package notify tells heartbeat streams that their lease was revoked, on
// this instance and (through Redis pub/sub) on every other one, so that a
// revoke on instance A reaches a stream on instance B within a second.
package notify

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hub fans revocations out to the local streams that watch a lease.
type Hub struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
}

// NewHub returns an empty Hub.
func NewHub() *Hub { return &Hub{watchers: map[string]map[chan struct{}]struct{}{}} }

// Watch returns a channel closed when leaseID is revoked, and a function
// to stop watching (always call it).
func (h *Hub) Watch(leaseID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	if h.watchers[leaseID] == nil {
		h.watchers[leaseID] = map[chan struct{}]struct{}{}
	}
	h.watchers[leaseID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if _, ok := h.watchers[leaseID][ch]; ok {
			delete(h.watchers[leaseID], ch)
			if len(h.watchers[leaseID]) == 0 {
				delete(h.watchers, leaseID)
			}
		}
	}
}

// deliver wakes the local watchers of leaseID.
func (h *Hub) deliver(leaseID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.watchers[leaseID] {
		close(ch)
		delete(h.watchers[leaseID], ch)
	}
	delete(h.watchers, leaseID)
}

// Publisher announces revocations.
type Publisher interface {
	Revoked(ctx context.Context, leaseID string)
}

// Local is the one-node Publisher: it delivers to this Hub only.
type Local struct{ Hub *Hub }

func (l Local) Revoked(_ context.Context, leaseID string) { l.Hub.deliver(leaseID) }

// PubSub is the part of a Redis client that Redis uses (go-redis has no interface with Subscribe narrower than UniversalClient).
type PubSub interface {
	Publish(ctx context.Context, channel string, message any) *redis.IntCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

var _ PubSub = redis.UniversalClient(nil)

// Redis publishes revocations on a channel every instance subscribes to.
type Redis struct {
	hub     *Hub
	rdb     PubSub
	channel string
	log     *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewRedis subscribes to <prefix>revocations and delivers what arrives to hub.
func NewRedis(hub *Hub, rdb PubSub, prefix string, log *slog.Logger) *Redis {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Redis{hub: hub, rdb: rdb, channel: prefix + "revocations", log: log, cancel: cancel, done: make(chan struct{})}
	go r.listen(ctx)
	return r
}

// Revoked publishes; delivery to local streams also happens directly, so a
// Redis hiccup never delays this instance's own streams.
func (r *Redis) Revoked(ctx context.Context, leaseID string) {
	r.hub.deliver(leaseID)
	if err := r.rdb.Publish(ctx, r.channel, leaseID).Err(); err != nil {
		r.log.Warn("revocation not published to other instances; their streams learn at the next heartbeat", "lease_id", leaseID, "err", err)
	}
}

// Close stops listening.
func (r *Redis) Close() {
	r.cancel()
	<-r.done
}

func (r *Redis) listen(ctx context.Context) {
	defer close(r.done)
	for ctx.Err() == nil {
		sub := r.rdb.Subscribe(ctx, r.channel)
		ch := sub.Channel(redis.WithChannelHealthCheckInterval(5 * time.Second))
	receive:
		for {
			select {
			case <-ctx.Done():
				break receive
			case m, ok := <-ch:
				if !ok {
					break receive
				}
				r.hub.deliver(m.Payload)
			}
		}
		_ = sub.Close()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // resubscribe after a broken connection
		}
	}
}
