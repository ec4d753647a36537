package distributed

import "sync"

// boundedCache is a concurrent map of immutable facts (a license key's
// license, a lease's fixed fields) that forgets entries at random once it
// holds max of them. A miss only costs a PostgreSQL read.
type boundedCache[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func newBoundedCache[K comparable, V any](max int) *boundedCache[K, V] {
	return &boundedCache[K, V]{m: make(map[K]V), max: max}
}

func (c *boundedCache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *boundedCache[K, V]) put(k K, v V) {
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

func (c *boundedCache[K, V]) drop(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}
