package service

import "sync"

// queueMoves tells a waiter of this instance at once that its turn to try
// for a seat began because a waiter here left its place (without a policy:
// the head left, and it is the new head) or stood aside on its turn
// (wait.go), so that it tries without waiting out a poll. Only that waiter
// is told: the others see their new place at their own next look (every
// idleWaitPolls polls). A departure thus costs the queue one look, not one
// per waiter still queued (a drain of n waiters cost ~n²/2 Position
// scripts when every departure woke them all). A move on another instance
// is seen at the next look too.
type queueMoves struct {
	mu sync.Mutex
	ch map[string]chan struct{} // by ticket
}

// watch returns a channel that receives when the ticket's turn begins, and
// a func that stops watching.
func (m *queueMoves) watch(ticket string) (<-chan struct{}, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ch == nil {
		m.ch = map[string]chan struct{}{}
	}
	c := make(chan struct{}, 1) // a move that comes between two looks is kept
	m.ch[ticket] = c
	return c, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.ch, ticket)
	}
}

// turnOf tells the waiter holding ticket, if it is here, that its turn
// began ("" tells nobody).
func (m *queueMoves) turnOf(ticket string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case m.ch[ticket] <- struct{}{}:
	default:
	}
}
