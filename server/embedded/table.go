package embedded

// table is an open-addressing multimap from 64-bit key hashes to slots,
// with linear probing. An entry is one uint64: the hash's upper 32 bits
// (the fragment, which also picks the home position) and slot+1 (0 marks
// an empty entry). It holds no pointers, so the collector never scans it,
// and costs 8 bytes per entry at a load of at most 3/4.
//
// It stores hashes, not keys: find yields every slot whose fragment
// matches, and the caller compares the slot's own key. Several slots may
// share a key (a lapsed lease and its successor share a dedupe key).
type table struct {
	entries []uint64
	n       int
}

const minTableSize = 16

func entryOf(h uint64, r ref) uint64 { return h&^0xffffffff | uint64(r) + 1 }

func (t *table) home(e uint64) int { return int(e>>32) & (len(t.entries) - 1) }

// insert adds r under h (r must not be there already).
func (t *table) insert(h uint64, r ref) {
	if (t.n+1)*4 > len(t.entries)*3 {
		t.grow()
	}
	t.put(entryOf(h, r))
	t.n++
}

// insertUnique adds r under h unless find would yield a slot for which
// same is true; it reports whether it added r. One walk of the probe run.
func (t *table) insertUnique(h uint64, r ref, same func(ref) bool) bool {
	if (t.n+1)*4 > len(t.entries)*3 {
		t.grow()
	}
	mask := len(t.entries) - 1
	frag := h >> 32
	i := int(frag) & mask
	for ; t.entries[i] != 0; i = (i + 1) & mask {
		if e := t.entries[i]; e>>32 == frag && same(ref(uint32(e)-1)) {
			return false
		}
	}
	t.entries[i] = entryOf(h, r)
	t.n++
	return true
}

func (t *table) put(e uint64) {
	mask := len(t.entries) - 1
	for i := t.home(e); ; i = (i + 1) & mask {
		if t.entries[i] == 0 {
			t.entries[i] = e
			return
		}
	}
}

func (t *table) grow() {
	old := t.entries
	t.entries = make([]uint64, max(minTableSize, 2*len(old)))
	for _, e := range old {
		if e != 0 {
			t.put(e)
		}
	}
}

// find calls yield with each slot stored under a hash whose fragment is
// h's, until yield returns false.
func (t *table) find(h uint64, yield func(ref) bool) {
	if t.n == 0 {
		return
	}
	mask := len(t.entries) - 1
	frag := h >> 32
	for i := int(frag) & mask; t.entries[i] != 0; i = (i + 1) & mask {
		if e := t.entries[i]; e>>32 == frag && !yield(ref(uint32(e)-1)) {
			return
		}
	}
}

// remove deletes r stored under h, if it is there, and shifts the entries
// after it back so that no probe sequence breaks (no tombstones).
func (t *table) remove(h uint64, r ref) {
	if t.n == 0 {
		return
	}
	mask := len(t.entries) - 1
	want := entryOf(h, r)
	i := t.home(want)
	for ; t.entries[i] != want; i = (i + 1) & mask {
		if t.entries[i] == 0 {
			return
		}
	}
	t.n--
	// Backward shift: move each later entry of the run into the hole
	// when its home is not between the hole and its position.
	for j := (i + 1) & mask; t.entries[j] != 0; j = (j + 1) & mask {
		h := t.home(t.entries[j])
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.entries[i] = t.entries[j]
			i = j
		}
	}
	t.entries[i] = 0
}
