package embedded

import (
	"encoding/binary"
	"unsafe"
)

// arenaSize is the size of one text arena: far more than the longest
// text (every string of a lease at its limit is ~45 kB).
const arenaSize = 1 << 20

// texts keeps the leases' texts (leasetext.go) in arenas of arenaSize
// bytes, one object each for the collector instead of one per lease. An
// arena is only ever appended to: the strings handed out alias it
// (unsafe.String) and it stays alive while any of them does. Each text is
// preceded by its slot's ref and its length, so that an arena can be
// walked. An arena whose texts have mostly ended is compacted: its live
// texts are copied to the arena being filled and it is dropped (never
// written again).
type texts struct {
	arenas [][]byte // nil: dropped, its index free for a new arena
	live   []int    // bytes of live texts (with their headers) per arena
	cur    int      // the arena being appended to
	free   []int    // indices of dropped arenas
}

// textRef locates a text: arena, offset of its bytes, length.
type textRef struct{ arena, off, n uint32 }

const textHeader = 8 // ref, length

func (ts *texts) get(t textRef) string {
	return unsafe.String(&ts.arenas[t.arena][t.off], t.n)
}

// add appends the text of slot r and returns where it is.
func (ts *texts) add(r ref, text string) textRef {
	need := textHeader + len(text)
	if len(ts.arenas) == 0 || len(ts.arenas[ts.cur])+need > arenaSize {
		ts.cur = ts.newArena()
	}
	a := ts.arenas[ts.cur]
	off := len(a) + textHeader
	a = binary.LittleEndian.AppendUint32(a, uint32(r))
	a = binary.LittleEndian.AppendUint32(a, uint32(len(text)))
	ts.arenas[ts.cur] = append(a, text...)
	ts.live[ts.cur] += need
	return textRef{uint32(ts.cur), uint32(off), uint32(len(text))}
}

func (ts *texts) newArena() int {
	a := make([]byte, 0, arenaSize)
	if k := len(ts.free); k > 0 {
		i := ts.free[k-1]
		ts.free = ts.free[:k-1]
		ts.arenas[i], ts.live[i] = a, 0
		return i
	}
	ts.arenas = append(ts.arenas, a)
	ts.live = append(ts.live, 0)
	return len(ts.arenas) - 1
}

// drop forgets a text that ended. It reports the arena to compact, if
// its live texts fell under a quarter of it (never the current one).
func (ts *texts) drop(t textRef) (compact int, ok bool) {
	i := int(t.arena)
	ts.live[i] -= textHeader + int(t.n)
	return i, i != ts.cur && ts.live[i] < arenaSize/4
}

// compact copies the live texts of arena i to the current arena, calling
// moved for each (holds reports whether slot r's text is still the one at
// that place), and drops arena i.
func (ts *texts) compact(i int, holds func(r ref, t textRef) bool, moved func(r ref, t textRef)) {
	a := ts.arenas[i]
	for off := 0; off < len(a); {
		r := ref(binary.LittleEndian.Uint32(a[off:]))
		n := binary.LittleEndian.Uint32(a[off+4:])
		t := textRef{uint32(i), uint32(off + textHeader), n}
		if holds(r, t) {
			moved(r, ts.add(r, unsafe.String(&a[t.off], n)))
		}
		off += textHeader + int(n)
	}
	ts.arenas[i], ts.live[i] = nil, 0
	ts.free = append(ts.free, i)
}
