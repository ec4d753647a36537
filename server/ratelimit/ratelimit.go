// Package ratelimit keeps a token bucket per client address, in a map of
// bounded size: each of its shards forgets its least recently seen address
// when full. A forgotten address starts again with a full bucket, which is
// also what an address idle long enough to refill has, so forgetting idle
// addresses changes nothing; forgetting a busy one needs a flood of other
// addresses in between, and whoever has that many has that many buckets
// anyway.
package ratelimit

import (
	"container/list"
	"hash/maphash"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxAddresses bounds the addresses one Limiter remembers (about
// 250 bytes each).
const DefaultMaxAddresses = 100_000

const shards = 16 // spreads the lock over the calls of different addresses

// Limiter is a token bucket per address. A nil *Limiter allows everything.
type Limiter struct {
	limit  rate.Limit
	burst  int
	seed   maphash.Seed
	shards [shards]shard
}

type shard struct {
	mu      sync.Mutex
	max     int
	buckets map[string]*list.Element // of *bucket, most recently seen first
	order   list.List
}

type bucket struct {
	addr string
	lim  *rate.Limiter
}

// New returns a Limiter refilling perSecond tokens a second up to burst, for
// at most maxAddresses addresses (DefaultMaxAddresses if not positive). A
// perSecond of 0 or less means no limit: New returns nil.
func New(perSecond float64, burst, maxAddresses int) *Limiter {
	if perSecond <= 0 {
		return nil
	}
	if maxAddresses <= 0 {
		maxAddresses = DefaultMaxAddresses
	}
	l := &Limiter{limit: rate.Limit(perSecond), burst: max(burst, 1), seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i] = shard{max: max(maxAddresses/shards, 1), buckets: map[string]*list.Element{}}
	}
	return l
}

// Take spends a token of addr's bucket. When it is empty it spends nothing
// and returns false with the time until a token is back.
func (l *Limiter) Take(addr string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	s := l.shard(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	lim := s.bucket(addr, l, true)
	if lim.AllowN(now, 1) {
		return true, 0
	}
	return false, l.untilOne(lim, now)
}

// Empty reports whether addr's bucket has no token left (and the time until
// one is back), without spending one. An address never charged has a full
// bucket and costs no memory.
func (l *Limiter) Empty(addr string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return false, 0
	}
	s := l.shard(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	lim := s.bucket(addr, l, false)
	if lim == nil || lim.TokensAt(now) >= 1 {
		return false, 0
	}
	return true, l.untilOne(lim, now)
}

// Charge spends a token of addr's bucket if one is left: a failure that is
// counted against the address.
func (l *Limiter) Charge(addr string, now time.Time) {
	if l == nil {
		return
	}
	s := l.shard(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bucket(addr, l, true).AllowN(now, 1)
}

// Len is the number of addresses remembered.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}

// untilOne is how long until lim has a whole token again, at least a
// millisecond (a retry hint of 0 would say "now").
func (l *Limiter) untilOne(lim *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - lim.TokensAt(now)
	d := time.Duration(math.Ceil(missing / float64(l.limit) * float64(time.Second)))
	return max(d, time.Millisecond)
}

func (l *Limiter) shard(addr string) *shard {
	return &l.shards[maphash.String(l.seed, addr)%shards]
}

// bucket finds addr's limiter and marks it recently seen; when create is
// set a missing one is made, forgetting the least recently seen address if
// the shard is full. Called with s.mu held.
func (s *shard) bucket(addr string, l *Limiter, create bool) *rate.Limiter {
	if e, ok := s.buckets[addr]; ok {
		s.order.MoveToFront(e)
		return e.Value.(*bucket).lim
	}
	if !create {
		return nil
	}
	if len(s.buckets) >= s.max {
		oldest := s.order.Back()
		s.order.Remove(oldest)
		delete(s.buckets, oldest.Value.(*bucket).addr)
	}
	b := &bucket{addr: addr, lim: rate.NewLimiter(l.limit, l.burst)}
	s.buckets[addr] = s.order.PushFront(b)
	return b.lim
}
