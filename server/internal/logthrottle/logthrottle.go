// Package logthrottle keeps per-call failure lines from flooding the log:
// a slog.Handler that lets the first WARN-or-worse record of a message
// through, then at most one per interval, carrying how many like it were
// left out since (similar_suppressed). On a full disk every failed call
// logged two or three lines; now each kind of line shows once per
// interval, and the count of the rest goes to a metric.
package logthrottle

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxKinds bounds the messages remembered; beyond it records pass as they
// are (messages are constants and op names: a few dozen).
const maxKinds = 1000

// Handler throttles the records whose message starts with one of its
// prefixes; the rest pass unchanged.
type Handler struct {
	next     slog.Handler
	every    time.Duration
	prefixes []string
	state    *state // shared by the handlers WithAttrs and WithGroup make
}

type state struct {
	now        func() time.Time
	mu         sync.Mutex
	kinds      map[string]*kind
	suppressed atomic.Int64
}

type kind struct {
	last    time.Time
	dropped int64
}

// New wraps next; every <= 0 throttles nothing. now is the clock (nil:
// time.Now).
func New(next slog.Handler, every time.Duration, now func() time.Time, prefixes ...string) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{next: next, every: every, prefixes: prefixes, state: &state{now: now, kinds: map[string]*kind{}}}
}

// Suppressed is how many records were left out so far.
func (h *Handler) Suppressed() int64 { return h.state.suppressed.Load() }

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if h.every <= 0 || r.Level < slog.LevelWarn || !h.throttled(r.Message) {
		return h.next.Handle(ctx, r)
	}
	s := h.state
	s.mu.Lock()
	k := s.kinds[r.Message]
	if k == nil {
		if len(s.kinds) >= maxKinds {
			s.mu.Unlock()
			return h.next.Handle(ctx, r)
		}
		k = &kind{}
		s.kinds[r.Message] = k
	}
	now := s.now()
	if !k.last.IsZero() && now.Sub(k.last) < h.every {
		k.dropped++
		s.mu.Unlock()
		s.suppressed.Add(1)
		return nil
	}
	dropped := k.dropped
	k.last, k.dropped = now, 0
	s.mu.Unlock()
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int64("similar_suppressed", dropped))
	}
	return h.next.Handle(ctx, r)
}

func (h *Handler) throttled(msg string) bool {
	for _, p := range h.prefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	return &c
}

func (h *Handler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
