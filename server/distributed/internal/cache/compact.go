package cache

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// Compact is a concurrent map of immutable facts from string keys to
// bytes, bounded to max entries, that holds no pointer per entry: the
// garbage collector never scans it, however many entries it holds (a
// map of strings holds two pointers per entry, and the values theirs).
//
// Entries are appended to segments (byte slices) in the order they come;
// an index maps the 64-bit hash of each key (maphash, seeded per cache)
// to its entry's place, and the entry holds its key, so that two keys of
// the same hash never answer for each other (the later one wins its
// place; the other one misses). Once the cache holds max entries, the
// oldest segment goes, with every entry in it: about 1/64 of the cache
// at a time, first in, first out. A miss costs only a read of the source.
type Compact struct {
	mu     sync.RWMutex
	seed   maphash.Seed
	index  map[uint64]uint64 // key hash -> segment number << 32 | offset
	segs   [][]byte          // segment number first+i is segs[i]
	first  uint32
	inLast int // entries in the last segment (live or not)
	max    int
	perSeg int // entries per segment

	hits, misses, evicted atomic.Int64
}

// segments is how many segments a full cache spreads over: each eviction
// drops about 1/segments of it.
const segments = 64

// NewCompact makes a cache of at most limit entries (at least 1).
func NewCompact(limit int) *Compact {
	limit = max(limit, 1)
	return &Compact{
		seed:   maphash.MakeSeed(),
		index:  make(map[uint64]uint64),
		max:    limit,
		perSeg: (limit + segments - 1) / segments,
	}
}

// Get returns a copy of the value of k (one allocation), if cached.
func (c *Compact) Get(k string) (string, bool) {
	h := maphash.String(c.seed, k)
	c.mu.RLock()
	v, ok := c.lookup(h, k)
	var out string
	if ok {
		out = string(v)
	}
	c.mu.RUnlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return out, ok
}

// lookup finds the value of k (hash h) in its segment. Under c.mu.
func (c *Compact) lookup(h uint64, k string) ([]byte, bool) {
	loc, ok := c.index[h]
	if !ok {
		return nil, false
	}
	seg := c.segs[uint32(loc>>32)-c.first]
	key, val, _ := entryAt(seg, uint32(loc))
	if string(key) != k {
		return nil, false
	}
	return val, true
}

// entryAt reads the entry at off of a segment: its key, value and the
// offset of the next entry. An entry is the key's hash (8 bytes), the
// key's length (uvarint), the key, the value's length (uvarint), the
// value.
func entryAt(seg []byte, off uint32) (key, val []byte, next uint32) {
	p := seg[off+8:]
	n, w := binary.Uvarint(p)
	key, p = p[w:w+int(n)], p[w+int(n):]
	m, w2 := binary.Uvarint(p)
	val = p[w2 : w2+int(m)]
	next = off + 8 + uint32(w) + uint32(n) + uint32(w2) + uint32(m) //nolint:gosec // entries are far below 4 GiB
	return key, val, next
}

// Put caches v (copied) as the value of k, unless k is cached already:
// the values are immutable facts.
func (c *Compact) Put(k string, v []byte) {
	h := maphash.String(c.seed, k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lookup(h, k); ok {
		return
	}
	if _, taken := c.index[h]; !taken {
		// Dropped entries keep their bytes until their segment goes:
		// the segments are bounded too.
		for len(c.segs) > 0 && (len(c.index) >= c.max || len(c.segs) > 2*segments) {
			c.evictOldest()
		}
	}
	if len(c.segs) == 0 || c.inLast >= c.perSeg {
		c.newSegment()
	}
	last := len(c.segs) - 1
	seg := c.segs[last]
	off := uint32(len(seg)) //nolint:gosec // a segment holds perSeg entries, far below 4 GiB
	seg = binary.LittleEndian.AppendUint64(seg, h)
	seg = binary.AppendUvarint(seg, uint64(len(k)))
	seg = append(seg, k...)
	seg = binary.AppendUvarint(seg, uint64(len(v)))
	seg = append(seg, v...)
	c.segs[last] = seg
	c.inLast++
	c.index[h] = uint64(c.first+uint32(last))<<32 | uint64(off) //nolint:gosec // fewer than 2^32 segments live at once
}

// newSegment starts a segment, and trims the one before to its size
// (segments grow by append, which leaves up to half of them unused).
func (c *Compact) newSegment() {
	if n := len(c.segs); n > 0 {
		c.segs[n-1] = slices.Clip(slices.Clone(c.segs[n-1]))
	}
	c.segs = append(c.segs, nil)
	c.inLast = 0
}

// evictOldest drops the oldest segment and the entries in it. Under c.mu.
func (c *Compact) evictOldest() {
	seg := c.segs[0]
	for off := uint32(0); off < uint32(len(seg)); { //nolint:gosec // see Put
		h := binary.LittleEndian.Uint64(seg[off:])
		_, _, next := entryAt(seg, off)
		if c.index[h] == uint64(c.first)<<32|uint64(off) {
			delete(c.index, h)
			c.evicted.Add(1)
		}
		off = next
	}
	c.segs[0] = nil
	c.segs = c.segs[1:]
	c.first++
	if len(c.segs) == 0 {
		c.inLast = 0
	}
}

// Drop forgets k (its bytes go with its segment).
func (c *Compact) Drop(k string) {
	h := maphash.String(c.seed, k)
	c.mu.Lock()
	if _, ok := c.lookup(h, k); ok {
		delete(c.index, h)
	}
	c.mu.Unlock()
}

// Stats are a cache's size and use.
type Stats struct {
	Entries, Max          int
	Bytes                 int64 // of the segments, dropped and evicted entries' included
	Hits, Misses, Evicted int64
}

// Stats reports the cache's size and use.
func (c *Compact) Stats() Stats {
	c.mu.RLock()
	st := Stats{Entries: len(c.index), Max: c.max}
	for _, s := range c.segs {
		st.Bytes += int64(cap(s))
	}
	c.mu.RUnlock()
	st.Hits, st.Misses, st.Evicted = c.hits.Load(), c.misses.Load(), c.evicted.Load()
	return st
}
