// Package cache is a bounded map of immutable facts for the distributed
// store's hot path.
package cache

import "sync"

// Bounded is a concurrent map of immutable facts (a license key's
// license, a lease's fixed fields) that forgets entries at random once it
// holds max of them. A miss costs only a read of the source.
type Bounded[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

// New makes a cache of at most max entries.
func New[K comparable, V any](max int) *Bounded[K, V] {
	return &Bounded[K, V]{m: make(map[K]V), max: max}
}

// Get returns the value of k, if cached.
func (c *Bounded[K, V]) Get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// Put caches v as the value of k.
func (c *Bounded[K, V]) Put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		n := c.max/10 + 1
		for old := range c.m { // map order is random enough
			delete(c.m, old)
			if n--; n == 0 {
				break
			}
		}
	}
	c.m[k] = v
}

// Drop forgets k.
func (c *Bounded[K, V]) Drop(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}
