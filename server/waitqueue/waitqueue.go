// Package waitqueue keeps the FIFO queue of clients waiting for a seat on a
// license (SeatService/WaitForSeat). The queue only orders waiters; seats
// are still granted by the store's atomic acquire, tried by the waiters
// whose turn it is: the head of the queue, and, while every waiter ahead
// of one stands aside (refused for who it is, not for want of a seat), that
// one too. Memory serves one node; Redis serves many instances, so that the
// order holds across a load balancer.
package waitqueue

import (
	"context"
	"errors"
	"math/bits"
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

// Place is where a waiter stands in its queue.
type Place struct {
	Position int // 1-based: 1 is the head
	Length   int // the waiters in the queue
	// Turn: the waiter may try for a seat now. It is the head, or every
	// waiter ahead of it stands aside (Ticket.StandAside).
	Turn bool
}

// Ticket is one waiter's place.
//
// A waiter whose try was refused for who it is (a cap of its own, seats
// reserved for others) rather than for want of a seat stands aside: it
// keeps its place, and the waiter behind it may try too, as if it were not
// there. Those who may try are thus the waiters up to and including the
// first that does not stand aside: without a policy, the head alone.
type Ticket interface {
	// ID names the place, for a later Join to resume it (a resumed place
	// does not stand aside).
	ID() string
	// Position returns the waiter's place. It also proves the waiter is
	// alive (Redis: waiters that stop asking are dropped after a few
	// seconds).
	Position(ctx context.Context) (Place, error)
	// StandAside marks the waiter as standing aside (aside) or not. When
	// the waiter stands aside on its turn, it returns the ticket of the
	// waiter right behind it, whose turn that is now ("" when there is
	// none, or it was not the waiter's turn), so that the caller can tell
	// that waiter at once. An error when the ticket left the queue.
	StandAside(ctx context.Context, aside bool) (next string, err error)
	// Leave removes the waiter; calling it again does nothing. When it was
	// the waiter's turn and it did not stand aside, it returns the ticket
	// of the waiter now in its place, whose turn that is ("" otherwise,
	// when the queue is now empty, or cannot be reached): without a
	// policy, the new head. Only such a departure changes who tries.
	Leave(ctx context.Context) (next string)
}

// Memory is the one-node queue. Each license's queue numbers its waiters
// in their order of arrival (slots) and counts the slots still held, and
// those standing aside, in two Fenwick trees, so that a place is a prefix
// sum and a turn the comparison of two: Join, Position, StandAside and
// Leave are O(log n), and a drain of n waiters O(n log n). Slots left
// behind are compacted once they outnumber the waiters (amortized
// O(log n)).
type Memory struct {
	MaxLength int

	mu     sync.Mutex
	queues map[string]*memQueue
}

type memQueue struct {
	slots []*memTicket // in order of arrival; nil where a waiter left
	held  fenwick      // 1 at each slot a waiter holds
	aside fenwick      // 1 at each slot whose waiter stands aside
	ids   map[string]*memTicket
}

type memTicket struct {
	q     *Memory
	name  string
	id    string
	slot  int // in its queue's slots; -1 once it left
	aside bool
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
		// it had left (its Leave does nothing). The new one does not stand
		// aside: its stream has not tried yet.
		t.slot, old.slot = old.slot, -1
		if old.aside {
			q.aside.add(t.slot, -1)
		}
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
	q.aside.push(0)
	q.ids[t.id] = t
	return t, nil
}

func (t *memTicket) ID() string { return t.id }

func (m *Memory) Length(_ context.Context, name string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.queues[name].length(), nil
}

var errLeft = errors.New("ticket left the queue")

func (t *memTicket) Position(context.Context) (Place, error) {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	q := t.q.queues[t.name]
	if t.slot < 0 {
		return Place{Length: q.length()}, errLeft
	}
	pos, turn := q.place(t.slot)
	return Place{Position: pos, Length: q.length(), Turn: turn}, nil
}

func (t *memTicket) StandAside(_ context.Context, aside bool) (string, error) {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.slot < 0 {
		return "", errLeft
	}
	q := t.q.queues[t.name]
	if t.aside != aside {
		t.aside = aside
		q.aside.add(t.slot, 2*bit(aside)-1)
	}
	pos, turn := q.place(t.slot)
	if !aside || !turn || pos == q.length() {
		return "", nil
	}
	return q.slots[q.held.find(pos+1)].id, nil
}

func (t *memTicket) Leave(context.Context) string {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.slot < 0 {
		return ""
	}
	q := t.q.queues[t.name]
	pos, turn := q.place(t.slot)
	passes := turn && !t.aside // the waiter behind it may try now
	q.slots[t.slot] = nil
	q.held.add(t.slot, -1)
	if t.aside {
		q.aside.add(t.slot, -1)
	}
	delete(q.ids, t.id)
	t.slot = -1
	if len(q.ids) == 0 {
		delete(t.q.queues, t.name)
		return ""
	}
	if len(q.slots) >= 2*len(q.ids)+64 {
		q.compact()
	}
	if !passes || pos > len(q.ids) {
		return ""
	}
	return q.slots[q.held.find(pos)].id
}

// place is the position of the waiter at slot, and whether it is its
// turn: every waiter ahead of it stands aside.
func (q *memQueue) place(slot int) (pos int, turn bool) {
	pos = q.held.sum(slot + 1)
	return pos, q.aside.sum(slot) == pos-1
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

// compact drops the slots left behind, keeping the order.
func (q *memQueue) compact() {
	slots := make([]*memTicket, 0, 2*len(q.ids))
	q.held, q.aside = q.held[:0], q.aside[:0]
	for _, t := range q.slots {
		if t != nil {
			t.slot = len(slots)
			slots = append(slots, t)
			q.held.push(1)
			q.aside.push(bit(t.aside))
		}
	}
	q.slots = slots
}

// bit is 1 for true, 0 for false.
func bit(b bool) int {
	if b {
		return 1
	}
	return 0
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

// find is the first slot whose prefix sum (itself included) reaches k
// (k >= 1, at most the sum of all slots; slots hold 0 or 1): the slot of
// the k-th waiter. O(log n), a descent from the largest power of two.
func (f fenwick) find(k int) int {
	i := 0 // the node reached: every slot before it sums to less than k
	for step := 1 << (bits.Len(uint(len(f))) - 1); step > 0; step >>= 1 {
		if j := i + step; j <= len(f) && f[j-1] < k {
			i = j
			k -= f[j-1]
		}
	}
	return i
}
