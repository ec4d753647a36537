package cache

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompactGetPutDrop(t *testing.T) {
	c := NewCompact(10)
	_, ok := c.Get("a")
	require.False(t, ok)
	c.Put("a", []byte("one"))
	c.Put("", []byte{})
	v, ok := c.Get("a")
	require.True(t, ok)
	require.Equal(t, "one", v)
	v, ok = c.Get("")
	require.True(t, ok, "an empty key and value are entries too")
	require.Empty(t, v)

	buf := []byte("two")
	c.Put("b", buf)
	buf[0] = 'x'
	v, _ = c.Get("b")
	require.Equal(t, "two", v, "Put copies the value")
	c.Put("b", []byte("other"))
	v, _ = c.Get("b")
	require.Equal(t, "two", v, "a cached fact is not replaced")

	c.Drop("a")
	_, ok = c.Get("a")
	require.False(t, ok)
	c.Put("a", []byte("again"))
	v, _ = c.Get("a")
	require.Equal(t, "again", v, "a dropped key is cached anew")
	st := c.Stats()
	require.Equal(t, 3, st.Entries)
	require.Equal(t, 10, st.Max)
	require.EqualValues(t, 5, st.Hits)
	require.EqualValues(t, 2, st.Misses)
}

// TestCompactIsBoundedFirstInFirstOut: the cache never holds more than its
// bound; once full, the oldest entries go (a segment, 1/64 of the bound,
// at a time), and the newest stay.
func TestCompactIsBoundedFirstInFirstOut(t *testing.T) {
	const bound = 640
	c := NewCompact(bound)
	for i := range 10 * bound {
		c.Put(fmt.Sprint("key", i), []byte(fmt.Sprint("value", i)))
		require.LessOrEqual(t, c.Stats().Entries, bound)
	}
	st := c.Stats()
	require.GreaterOrEqual(t, st.Entries, bound-bound/segments, "at most a segment short of the bound")
	require.EqualValues(t, 10*bound-st.Entries, st.Evicted)
	for i := range 10 * bound {
		v, ok := c.Get(fmt.Sprint("key", i))
		if i >= 10*bound-st.Entries {
			require.True(t, ok, "a newest entry (%d) stays", i)
			require.Equal(t, fmt.Sprint("value", i), v)
		} else {
			require.False(t, ok, "an oldest entry (%d) went", i)
		}
	}
	require.LessOrEqual(t, len(c.segs), segments+1)

	// Dropped entries' bytes go with their segments: the segments stay
	// bounded under churn, with the index far below its bound.
	for i := range 100 * bound {
		k := fmt.Sprint("churn", i)
		c.Put(k, []byte(k))
		c.Drop(k)
	}
	require.LessOrEqual(t, len(c.segs), 2*segments+1)
}

func TestCompactBoundOfOne(t *testing.T) {
	c := NewCompact(0) // taken as 1
	c.Put("a", []byte("1"))
	c.Put("b", []byte("2"))
	_, ok := c.Get("a")
	require.False(t, ok)
	v, ok := c.Get("b")
	require.True(t, ok)
	require.Equal(t, "2", v)
	require.Equal(t, 1, c.Stats().Entries)
}

func TestCompactConcurrentUse(t *testing.T) {
	c := NewCompact(1000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				k := fmt.Sprint(g, "/", i%1500)
				if v, ok := c.Get(k); ok {
					require.Equal(t, "v"+k, v)
				} else {
					c.Put(k, []byte("v"+k))
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, c.Stats().Entries, 1000)
}

// scannable is the heap the garbage collector scans (it marks only what
// may hold pointers), after a collection.
func scannable() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestCompactHoldsNoPointerPerEntry: 200,000 entries in a Compact add
// (almost) nothing to the heap the garbage collector scans; the same in a
// map of strings (the cache of lease facts before) add megabytes.
func TestCompactHoldsNoPointerPerEntry(t *testing.T) {
	const n = 200_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ls_%024x", i)
	}
	value := []byte("lic_0123456789abcdef01234567 tn_0123456789abcdef01234567 fingerprint")

	before := scannable()
	c := NewCompact(n)
	for _, k := range keys {
		c.Put(k, value)
	}
	compact := scannable() - before
	require.Equal(t, n, c.Stats().Entries)

	before = scannable()
	m := New[string, string](n)
	for _, k := range keys {
		m.Put(k, string(value))
	}
	strings := scannable() - before
	runtime.KeepAlive(c)
	runtime.KeepAlive(m)
	t.Logf("scannable heap added by %d entries: Compact %d B, map of strings %d B", n, compact, strings)
	require.Greater(t, strings, uint64(n*16), "the control: a map of strings is scanned entry by entry")
	require.Less(t, compact, uint64(64<<10), "a Compact is not")
}
