// Package waitqueue keeps the FIFO queue of clients waiting for a seat on a
// license (SeatService/WaitForSeat). The queue only orders waiters; seats
// are still granted by the store's atomic acquire, tried by the head of the
// queue. Memory serves one node; Redis serves many instances, so that the
// order holds across a load balancer.
package waitqueue

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/seatd/seatd/server"
)

// ErrFull is returned by Join when the license's queue is at its bound.
var ErrFull = errors.New("wait queue is full")

// Queue orders the waiters of each license. name identifies the license's
// queue (callers pass a hash of the license key).
type Queue interface {
	// Join adds a waiter at the tail, or returns ErrFull. A non-empty
	// resume names a ticket of an earlier stream: while that ticket is still
	// in this queue, the new ticket takes over its place (never ErrFull)
	// and the old one is gone, as if it had left.
	Join(ctx context.Context, name, resume string) (Ticket, error)
	// Length is how many waiters the queue holds now (0 for none).
	Length(ctx context.Context, name string) (int, error)
}

// Ticket is one waiter's place.
type Ticket interface {
	// ID names the place, for a later Join to resume it.
	ID() string
	// Position returns the 1-based place (1 = next) and the queue length.
	// It also proves the waiter is alive (Redis: waiters that stop asking
	// are dropped after a few seconds).
	Position(ctx context.Context) (position, length int, err error)
	// Leave removes the waiter; calling it again does nothing.
	Leave(ctx context.Context)
}

// Memory is the one-node queue.
type Memory struct {
	MaxLength int

	mu     sync.Mutex
	queues map[string][]*memTicket
}

type memTicket struct {
	q    *Memory
	name string
	id   string
	gone bool
}

// NewMemory returns a Memory queue holding at most maxLength waiters per license.
func NewMemory(maxLength int) *Memory {
	return &Memory{MaxLength: maxLength, queues: map[string][]*memTicket{}}
}

func (m *Memory) Join(_ context.Context, name, resume string) (Ticket, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &memTicket{q: m, name: name, id: server.NewID("w_")}
	if resume != "" {
		if i := slices.IndexFunc(m.queues[name], func(t *memTicket) bool { return t.id == resume }); i >= 0 {
			m.queues[name][i].gone = true
			m.queues[name][i] = t
			return t, nil
		}
	}
	if len(m.queues[name]) >= m.MaxLength {
		return nil, ErrFull
	}
	m.queues[name] = append(m.queues[name], t)
	return t, nil
}

func (t *memTicket) ID() string { return t.id }

func (m *Memory) Length(_ context.Context, name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queues[name]), nil
}

func (t *memTicket) Position(context.Context) (int, int, error) {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	q := t.q.queues[t.name]
	for i, o := range q {
		if o == t {
			return i + 1, len(q), nil
		}
	}
	return 0, len(q), errors.New("ticket left the queue")
}

func (t *memTicket) Leave(context.Context) {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.gone {
		return
	}
	t.gone = true
	q := t.q.queues[t.name]
	for i, o := range q {
		if o == t {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(t.q.queues, t.name)
	} else {
		t.q.queues[t.name] = q
	}
}
