package embedded

import (
	"slices"

	"github.com/google/btree"
)

// The ordered indexes by deadline are lazy: a heartbeat, which only ever
// moves a deadline later, touches no tree. A lease's item may therefore be
// filed under an older deadline than its own (slot.filedLive, filedDue ≤
// slot.deadline). Whoever walks a tree up to a time first re-files the
// items it meets there whose lease has moved on (partition, fixDue), so
// the answers are exact; each renewal costs at most one re-filing per
// lease per walk, not one tree update per heartbeat. A deadline that moves
// earlier (a renewal undone, the revival of a lapsed lease) is re-filed at
// once, so that no item is ever filed later than its lease's deadline.

// item files a slot under a deadline (Unix ns), in 12 bytes: trees hold
// two items per lease.
type item struct {
	hi int32
	lo uint32
	r  ref
}

func itemAt(at int64, r ref) item { return item{hi: int32(at >> 32), lo: uint32(at), r: r} }

func (it item) at() int64 { return int64(it.hi)<<32 | int64(it.lo) }

// pivotRef is the ref of a search key that is no lease: its id is
// index.pivot.
const pivotRef = ref(1<<32 - 1)

const treeDegree = 32

// newTree orders items by (deadline, lease id), as DueLeases lists them.
func (x *index) newTree() *btree.BTreeG[item] {
	return btree.NewG(treeDegree, func(a, b item) bool {
		if a.hi != b.hi || a.lo != b.lo {
			return a.at() < b.at()
		}
		if a.r == b.r {
			return false
		}
		return x.itemID(a.r) < x.itemID(b.r)
	})
}

func (x *index) itemID(r ref) string {
	if r == pivotRef {
		return x.pivot
	}
	return textID(x.slots.text(r))
}

// partition moves items between the license's live and stale trees so
// that live holds exactly the leases with a deadline after now, and stale
// those at or before it, filed under their deadlines. Both directions are
// checked, so a clock stepping back cannot leave a lease that is live
// again uncounted.
func (x *index) partition(l *license, now int64) {
	for {
		it, ok := l.live.Min()
		if !ok || it.at() > now {
			break
		}
		l.live.DeleteMin()
		s := x.slots.at(it.r)
		s.filedLive = s.deadline
		if s.deadline > now { // renewed since it was filed
			l.live.ReplaceOrInsert(itemAt(s.deadline, it.r))
			continue
		}
		s.flags |= flagStale
		l.stale.ReplaceOrInsert(itemAt(s.deadline, it.r))
	}
	for {
		it, ok := l.stale.Max()
		if !ok || it.at() <= now {
			break
		}
		l.stale.DeleteMax()
		x.slots.at(it.r).flags &^= flagStale
		l.live.ReplaceOrInsert(it)
	}
}

// liveCount is the number of seats in use at now (invariant 2).
func (x *index) liveCount(l *license, now int64) int {
	x.partition(l, now)
	return l.live.Len()
}

// toDisplace returns the earliest lapsed leases whose seats a new grant
// needs: as many as the grant would put the active leases (live or
// lapsed) over the limit, besides those it ends already (ending, lapsed
// leases of its keys). ok is false if one of them is being written: wait.
func (x *index) toDisplace(l *license, now int64, ending []ref) (rs []ref, ok bool) {
	x.partition(l, now)
	need := l.live.Len() + l.stale.Len() + 1 - l.lic.SeatLimit() - len(ending)
	if need <= 0 {
		return nil, true
	}
	ok = true
	l.stale.Ascend(func(it item) bool {
		if slices.Contains(ending, it.r) {
			return true
		}
		if x.slots.at(it.r).busy() {
			ok = false
			return false
		}
		rs = append(rs, it.r)
		return len(rs) < need
	})
	return rs, ok
}

// empty reports whether pool l has no active lease (live or lapsed): then
// none of its keys is in the index either (add and remove file and hash a
// lease together), and a feature's acquisition skips its lookups, most
// of a license's 50 grants being empty ones.
func (l *license) empty() bool {
	return l.live.Len() == 0 && l.stale.Len() == 0
}

// inPool returns those of rs that are leases of pool l.
func (x *index) inPool(l *license, rs []ref) []ref {
	var out []ref
	for _, r := range rs {
		if x.slots.at(r).lic == l.num {
			out = append(out, r)
		}
	}
	return out
}

// file puts a new lease in its license's live tree and the expiry tree,
// under its deadline.
func (x *index) file(l *license, r ref) {
	s := x.slots.at(r)
	s.filedLive, s.filedDue = s.deadline, s.deadline
	l.live.ReplaceOrInsert(itemAt(s.deadline, r))
	x.expiry.ReplaceOrInsert(itemAt(s.deadline, r))
}

func (x *index) unfile(l *license, r ref) {
	s := x.slots.at(r)
	tree := l.live
	if s.flags&flagStale != 0 {
		tree = l.stale
	}
	tree.Delete(itemAt(s.filedLive, r))
	x.expiry.Delete(itemAt(s.filedDue, r))
}

// moveDeadline sets a lease's deadline. Later, and the lease live and
// filed in a range no walk has fixed yet, it stays where it is filed;
// otherwise it is re-filed now.
func (x *index) moveDeadline(l *license, r ref, t int64) {
	s := x.slots.at(r)
	s.deadline = t
	if s.flags&flagStale != 0 {
		l.stale.Delete(itemAt(s.filedLive, r))
		s.flags &^= flagStale
		s.filedLive = t
		l.live.ReplaceOrInsert(itemAt(t, r)) // the next partition files it right
	} else if t < s.filedLive {
		l.live.Delete(itemAt(s.filedLive, r))
		s.filedLive = t
		l.live.ReplaceOrInsert(itemAt(t, r))
	}
	if t < s.filedDue || s.filedDue <= x.exactDue {
		x.expiry.Delete(itemAt(s.filedDue, r))
		s.filedDue = t
		x.expiry.ReplaceOrInsert(itemAt(t, r))
	}
}

// fixDue re-files the expiry items filed at or before now whose leases
// have been renewed since, so that every item up to now is filed under
// its lease's deadline. Items at or before exactDue are exact already
// (moveDeadline keeps them so).
func (x *index) fixDue(now int64) {
	if now <= x.exactDue {
		return
	}
	var moved []item
	x.pivot = ""
	x.expiry.AscendRange(itemAt(x.exactDue+1, pivotRef), itemAt(now+1, pivotRef), func(it item) bool {
		if x.slots.at(it.r).deadline != it.at() {
			moved = append(moved, it)
		}
		return true
	})
	for _, it := range moved {
		x.expiry.Delete(it)
		s := x.slots.at(it.r)
		s.filedDue = s.deadline
		x.expiry.ReplaceOrInsert(itemAt(s.deadline, it.r))
	}
	x.exactDue = now
}

// due returns up to limit leases whose deadline is at or before now,
// ordered by (deadline, id), strictly after (afterAt, afterID) when after
// is set.
func (x *index) due(now int64, after bool, afterAt int64, afterID string, limit int) []ref {
	x.fixDue(now)
	var out []ref
	walk := func(it item) bool {
		if it.at() > now || len(out) == limit {
			return false
		}
		if after && it.at() == afterAt && x.itemID(it.r) <= afterID {
			return true // the cursor itself
		}
		out = append(out, it.r)
		return true
	}
	if !after {
		x.expiry.Ascend(walk)
		return out
	}
	x.pivot = afterID
	x.expiry.AscendGreaterOrEqual(itemAt(afterAt, pivotRef), walk)
	return out
}
