package service

import "sync"

// queueMoves wakes the waiters of a queue on this instance when one of
// them leaves it, so that the next in line learns at once that it moved up.
type queueMoves struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

// wait returns a channel closed at the next move of the named queue.
func (m *queueMoves) wait(name string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ch == nil {
		m.ch = map[string]chan struct{}{}
	}
	c, ok := m.ch[name]
	if !ok {
		c = make(chan struct{})
		m.ch[name] = c
	}
	return c
}

// moved wakes everyone waiting on the named queue.
func (m *queueMoves) moved(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.ch[name]; ok {
		close(c)
		delete(m.ch, name)
	}
}
