// Package waitqueue keeps the FIFO queue of clients waiting for a seat on a
// license (SeatService/WaitForSeat). The queue only orders waiters; seats
// are still granted by the store's atomic acquire, tried by the head of the
// queue. Memory serves one node; Redis serves many instances, so that the
// order holds across a load balancer.
package waitqueue

import (
	"context"
	"errors"
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
	// Leave removes the waiter; calling it again does nothing. When the
	// waiter was the head, it returns the ticket of the new head ("" when
	// it was not, the queue is now empty, or the queue cannot be reached),
	// so that the caller can tell that waiter at once: only the head's
	// departure changes who tries for a seat.
	Leave(ctx context.Context) (newHead string)
}

// Memory is the one-node queue. Each license's queue numbers its waiters
// in their order of arrival (slots) and counts the slots still held in a
// Fenwick tree, so that a place is a prefix sum: Join, Position and Leave
// are O(log n), and a drain of n waiters O(n log n). Slots left behind are
// compacted once they outnumber the waiters (amortized O(log n)).
type Memory struct {
	MaxLength int

	mu     sync.Mutex
	queues map[string]*memQueue
}

type memQueue struct {
	slots []*memTicket // in order of arrival; nil where a waiter left
	held  fenwick      // 1 at each slot a waiter holds
	ids   map[string]*memTicket
	head  int // every slot before it is nil
}

type memTicket struct {
	q    *Memory
	name string
	id   string
	slot int // in its queue's slots; -1 once it left
}

// NewMemory returns a Memory queue holding at most maxLength waiters per license.
func NewMemory(maxLength int) *Memory {
	return &Memory{MaxLength: maxLength, queues: map[string]*memQueue{}}
}

func (m *Memory) Join(_ context.Context, name, resume string) (Ticket, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &memTicket{q: m, name: name, id: server.NewID("w_")}
	q := m.queues[name]
	if old := q.ticket(resume); old != nil {
		// The place moves to the new ticket; the old one is gone, as if
		// it had left (its Leave does nothing).
		t.slot, old.slot = old.slot, -1
		q.slots[t.slot] = t
		delete(q.ids, old.id)
		q.ids[t.id] = t
		return t, nil
	}
	if q.length() >= m.MaxLength {
		return nil, ErrFull
	}
	if q == nil {
		q = &memQueue{ids: map[string]*memTicket{}}
		m.queues[name] = q
	}
	t.slot = len(q.slots)
	q.slots = append(q.slots, t)
	q.held.push(1)
	q.ids[t.id] = t
	return t, nil
}

func (t *memTicket) ID() string { return t.id }

func (m *Memory) Length(_ context.Context, name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.queues[name].length(), nil
}

func (t *memTicket) Position(context.Context) (int, int, error) {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	q := t.q.queues[t.name]
	if t.slot < 0 {
		return 0, q.length(), errors.New("ticket left the queue")
	}
	return q.held.sum(t.slot + 1), q.length(), nil
}

func (t *memTicket) Leave(context.Context) string {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.slot < 0 {
		return ""
	}
	q := t.q.queues[t.name]
	wasHead := t.slot == q.first()
	q.slots[t.slot] = nil
	q.held.add(t.slot, -1)
	delete(q.ids, t.id)
	t.slot = -1
	if len(q.ids) == 0 {
		delete(t.q.queues, t.name)
		return ""
	}
	if len(q.slots) >= 2*len(q.ids)+64 {
		q.compact()
	}
	if !wasHead {
		return ""
	}
	return q.slots[q.first()].id
}

func (q *memQueue) length() int {
	if q == nil {
		return 0
	}
	return len(q.ids)
}

// ticket is the waiter holding id in q, or nil.
func (q *memQueue) ticket(id string) *memTicket {
	if q == nil || id == "" {
		return nil
	}
	return q.ids[id]
}

// first is the slot of the head of a queue that has waiters.
func (q *memQueue) first() int {
	for q.slots[q.head] == nil {
		q.head++
	}
	return q.head
}

// compact drops the slots left behind, keeping the order.
func (q *memQueue) compact() {
	slots := make([]*memTicket, 0, 2*len(q.ids))
	q.held = q.held[:0]
	for _, t := range q.slots {
		if t != nil {
			t.slot = len(slots)
			slots = append(slots, t)
			q.held.push(1)
		}
	}
	q.slots, q.head = slots, 0
}

// fenwick is a binary indexed tree over slots: its node i (1-based, at
// index i-1) holds the sum of the slots (i - i&-i, i].
type fenwick []int

// push appends a slot holding v: the new node is v plus the nodes that
// cover the rest of its range. O(log n).
func (f *fenwick) push(v int) {
	i := len(*f) + 1
	for j := i - 1; j > i-i&-i; j -= j & -j {
		v += (*f)[j-1]
	}
	*f = append(*f, v)
}

// add adds d to slot s.
func (f fenwick) add(s, d int) {
	for i := s + 1; i <= len(f); i += i & -i {
		f[i-1] += d
	}
}

// sum is the sum of the first k slots.
func (f fenwick) sum(k int) int {
	n := 0
	for i := k; i > 0; i -= i & -i {
		n += f[i-1]
	}
	return n
}
