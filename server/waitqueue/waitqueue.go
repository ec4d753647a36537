// Package waitqueue keeps the queue of clients waiting for a seat on a
// license (SeatService/WaitForSeat): by priority level, highest first, and
// first in, first out within a level. The queue only orders waiters; seats
// are still granted by the store's atomic acquire, tried by the waiters
// whose turn it is: the head of the queue, and, while every waiter ahead
// of one stands aside (refused for who it is, not for want of a seat), that
// one too. Memory serves one node; Redis serves many instances, so that the
// order holds across a load balancer.
package waitqueue

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/seatd/seatd/server"
)

// ErrFull is returned by Join when the license's queue is at its bound.
var ErrFull = errors.New("wait queue is full")

// Queue orders the waiters of each license. name identifies the license's
// queue (callers pass a hash of the license key).
type Queue interface {
	// Join adds a waiter behind every waiter of its level or a higher one
	// and ahead of every waiter of a lower level (level 0 without a
	// priority; server.MinPriorityLevel to server.MaxPriorityLevel, else
	// an error), or returns ErrFull. So a waiter never stands behind one
	// that joined later at its level. A non-empty resume names a ticket of
	// an earlier stream: while that ticket is still in this queue, the new
	// ticket takes over its place and its level (level is not looked at;
	// never ErrFull) and the old one is gone, as if it had left.
	Join(ctx context.Context, name string, level int, resume string) (Ticket, error)
	// Length is how many waiters the queue holds now (0 for none).
	Length(ctx context.Context, name string) (int, error)
}

// checkLevel refuses a level out of the policy's range (the caller's bug:
// the service joins with a validated policy's level).
func checkLevel(level int) error {
	if level < server.MinPriorityLevel || level > server.MaxPriorityLevel {
		return fmt.Errorf("wait queue: priority level %d out of range [%d, %d]", level, server.MinPriorityLevel, server.MaxPriorityLevel)
	}
	return nil
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
// "Ahead" and "behind" are in the queue's order, levels included: a waiter
// of a higher level that joins ahead of the waiter whose turn it was ends
// that turn (seen at that waiter's next look).
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

// Memory is the one-node queue. Each license's queue is a line per
// priority level present, highest first. A line numbers its waiters in
// their order of arrival (slots) and counts the slots still held, and
// those standing aside, in two Fenwick trees, so that a place within it is
// a prefix sum and a turn the comparison of two; the lines ahead add their
// counts. Join, Position, StandAside and Leave are O(L + log n) for L
// levels present (1 without priorities; at most the policy's levels and
// 0), and a drain of n waiters O(n (L + log n)). Slots left behind are
// compacted once they outnumber a line's waiters (amortized O(log n)).
type Memory struct {
	MaxLength int

	mu     sync.Mutex
	queues map[string]*memQueue
}

type memQueue struct {
	lines []*memLine // one per level present, highest level first
	ids   map[string]*memTicket
}

// memLine is the waiters of one level, in their order of arrival.
type memLine struct {
	level  int
	slots  []*memTicket // nil where a waiter left
	held   fenwick      // 1 at each slot a waiter holds
	aside  fenwick      // 1 at each slot whose waiter stands aside
	n      int          // waiters held
	nAside int          // of which stand aside
}

type memTicket struct {
	q     *Memory
	name  string
	id    string
	line  *memLine
	slot  int // in its line's slots; -1 once it left
	aside bool
}

// NewMemory returns a Memory queue holding at most maxLength waiters per license.
func NewMemory(maxLength int) *Memory {
	return &Memory{MaxLength: maxLength, queues: map[string]*memQueue{}}
}

func (m *Memory) Join(_ context.Context, name string, level int, resume string) (Ticket, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &memTicket{q: m, name: name, id: server.NewID("w_")}
	q := m.queues[name]
	if err := checkLevel(level); err != nil {
		return nil, err
	}
	if old := q.ticket(resume); old != nil {
		// The place (and level) moves to the new ticket; the old one is
		// gone, as if it had left (its Leave does nothing). The new one
		// does not stand aside: its stream has not tried yet.
		t.line, t.slot, old.slot = old.line, old.slot, -1
		if old.aside {
			t.line.setAside(t.slot, false)
		}
		t.line.slots[t.slot] = t
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
	t.line = q.lineOf(level)
	t.slot = len(t.line.slots)
	t.line.slots = append(t.line.slots, t)
	t.line.held.push(1)
	t.line.aside.push(0)
	t.line.n++
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
	pos, turn := q.place(t)
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
		t.line.setAside(t.slot, aside)
	}
	pos, turn := q.place(t)
	if !aside || !turn || pos == q.length() {
		return "", nil
	}
	return q.at(pos + 1).id, nil
}

func (t *memTicket) Leave(context.Context) string {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.slot < 0 {
		return ""
	}
	q := t.q.queues[t.name]
	pos, turn := q.place(t)
	passes := turn && !t.aside // the waiter behind it may try now
	l := t.line
	l.slots[t.slot] = nil
	l.held.add(t.slot, -1)
	l.n--
	if t.aside {
		l.setAside(t.slot, false)
	}
	delete(q.ids, t.id)
	t.slot, t.line = -1, nil
	if len(q.ids) == 0 {
		delete(t.q.queues, t.name)
		return ""
	}
	switch {
	case l.n == 0:
		q.lines = slices.DeleteFunc(q.lines, func(x *memLine) bool { return x == l })
	case len(l.slots) >= 2*l.n+64:
		l.compact()
	}
	if !passes || pos > len(q.ids) {
		return ""
	}
	return q.at(pos).id
}

// lineOf is the line of level, made (in its place) if the queue has none.
func (q *memQueue) lineOf(level int) *memLine {
	i, found := slices.BinarySearchFunc(q.lines, level, func(l *memLine, level int) int { return level - l.level })
	if !found {
		q.lines = slices.Insert(q.lines, i, &memLine{level: level})
	}
	return q.lines[i]
}

// place is the position of t's waiter, and whether it is its turn: every
// waiter ahead of it stands aside, in the lines ahead and in its own.
func (q *memQueue) place(t *memTicket) (pos int, turn bool) {
	turn = true
	for _, l := range q.lines {
		if l == t.line {
			break
		}
		pos += l.n
		turn = turn && l.nAside == l.n
	}
	in := t.line.held.sum(t.slot + 1)
	return pos + in, turn && t.line.aside.sum(t.slot) == in-1
}

// at is the waiter at position pos (1 <= pos <= length).
func (q *memQueue) at(pos int) *memTicket {
	for _, l := range q.lines {
		if pos <= l.n {
			return l.slots[l.held.find(pos)]
		}
		pos -= l.n
	}
	panic("waitqueue: position past the queue's end")
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

// setAside marks the slot's waiter as standing aside or not (it was the
// other).
func (l *memLine) setAside(slot int, aside bool) {
	d := 2*bit(aside) - 1
	l.aside.add(slot, d)
	l.nAside += d
}

// compact drops the slots left behind, keeping the order.
func (l *memLine) compact() {
	slots := make([]*memTicket, 0, 2*l.n)
	l.held, l.aside = l.held[:0], l.aside[:0]
	for _, t := range l.slots {
		if t != nil {
			t.slot = len(slots)
			slots = append(slots, t)
			l.held.push(1)
			l.aside.push(bit(t.aside))
		}
	}
	l.slots = slots
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
