package embedded

import (
	"slices"
	"time"

	"github.com/google/btree"

	"github.com/seatd/seatd/server"
)

// entry is an active lease in memory. Memory is authoritative for active
// leases: heartbeats reach the database later (write-behind).
type entry struct {
	lease server.Lease
	lic   *license
	rev   uint64 // bumped on every change; see leaseRecord.Rev
	busy  bool   // a write of this lease is in flight: others wait on Store.idle
}

func (e *entry) record() leaseRecord { return leaseRecord{Lease: e.lease, Rev: e.rev} }

// license is a license in memory with its active leases, split by deadline
// so that counting live seats costs O(log n), not a scan.
type license struct {
	lic      server.License
	deleted  bool
	creating bool // CreateLicense's write is in flight: invisible
	busy     bool // an update or delete is in flight: acquisitions wait

	live     *btree.BTreeG[deadlineItem] // deadline after the last partition time
	stale    *btree.BTreeG[deadlineItem] // at or past deadline, not cleaned up yet
	byIdem   map[string][]*entry
	byDedupe map[string][]*entry
	borrowed map[*entry]struct{} // the active borrowed leases
}

func newLicense(l server.License) *license {
	return &license{
		lic:      l,
		live:     newDeadlineTree(),
		stale:    newDeadlineTree(),
		byIdem:   map[string][]*entry{},
		byDedupe: map[string][]*entry{},
		borrowed: map[*entry]struct{}{},
	}
}

// partition moves leases between live and stale so that live holds exactly
// those with a deadline after now. Both directions are checked, so a clock
// stepping back cannot make a lease that is live again go uncounted.
func (l *license) partition(now time.Time) {
	n := now.UnixNano()
	for {
		it, ok := l.live.Min()
		if !ok || it.at > n {
			break
		}
		l.live.DeleteMin()
		l.stale.ReplaceOrInsert(it)
	}
	for {
		it, ok := l.stale.Max()
		if !ok || it.at <= n {
			break
		}
		l.stale.DeleteMax()
		l.live.ReplaceOrInsert(it)
	}
}

// liveCount is the number of seats in use at now (invariant 2).
func (l *license) liveCount(now time.Time) int {
	l.partition(now)
	return l.live.Len()
}

// borrowedCount is the number of borrowed leases live at now.
func (l *license) borrowedCount(now time.Time) int {
	n := 0
	for e := range l.borrowed {
		if e.lease.Live(now) {
			n++
		}
	}
	return n
}

// match returns a live lease sharing the idempotency key or the dedupe key
// (invariant 4), or nil. A borrow finds only borrowed leases, and any
// other acquisition only leases that are not.
func (l *license) match(idem, dedupe string, borrowing bool, now time.Time) *entry {
	find := func(es []*entry) *entry {
		for _, e := range es {
			if e.lease.Live(now) && e.lease.Borrowed == borrowing {
				return e
			}
		}
		return nil
	}
	if idem != "" {
		if e := find(l.byIdem[idem]); e != nil {
			return e
		}
	}
	if dedupe != "" {
		return find(l.byDedupe[dedupe])
	}
	return nil
}

// toDisplace returns the earliest lapsed leases whose seats a new grant
// needs: as many as the grant would put the active leases (live or lapsed)
// over the limit. ok is false if one of them is being written: wait.
func (l *license) toDisplace(now time.Time) (es []*entry, ok bool) {
	l.partition(now)
	need := l.live.Len() + l.stale.Len() + 1 - l.lic.SeatLimit()
	if need <= 0 {
		return nil, true
	}
	ok = true
	l.stale.Ascend(func(it deadlineItem) bool {
		if it.e.busy {
			ok = false
			return false
		}
		es = append(es, it.e)
		return len(es) < need
	})
	return es, ok
}

// entries returns every active lease of the license.
func (l *license) entries() []*entry {
	es := make([]*entry, 0, l.live.Len()+l.stale.Len())
	collect := func(it deadlineItem) bool { es = append(es, it.e); return true }
	l.live.Ascend(collect)
	l.stale.Ascend(collect)
	return es
}

// deadlineItem orders leases by (deadline, id).
type deadlineItem struct {
	at int64 // deadline, Unix nanoseconds
	id string
	e  *entry
}

func itemOf(e *entry) deadlineItem {
	return deadlineItem{at: e.lease.ExpiresAt.UnixNano(), id: e.lease.ID, e: e}
}

func lessDeadline(a, b deadlineItem) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id < b.id
}

func newDeadlineTree() *btree.BTreeG[deadlineItem] { return btree.NewG(32, lessDeadline) }

// index is all in-memory state, guarded by Store.mu.
type index struct {
	licenses map[string]*license         // by id, deleted ones too
	keys     map[string]*license         // by key, undeleted only
	leases   map[string]*entry           // active leases by id
	expiry   *btree.BTreeG[deadlineItem] // active leases of all licenses, for DueLeases
	dirty    map[*entry]struct{}         // heartbeats waiting for the flusher
}

func newIndex() index {
	return index{
		licenses: map[string]*license{},
		keys:     map[string]*license{},
		leases:   map[string]*entry{},
		expiry:   newDeadlineTree(),
		dirty:    map[*entry]struct{}{},
	}
}

func (x *index) addLicense(l *license) {
	x.licenses[l.lic.ID] = l
	if !l.deleted {
		x.keys[l.lic.Key] = l
	}
}

func (x *index) removeLicense(l *license) {
	delete(x.licenses, l.lic.ID)
	if x.keys[l.lic.Key] == l {
		delete(x.keys, l.lic.Key)
	}
}

func (x *index) addLease(e *entry) {
	x.leases[e.lease.ID] = e
	x.expiry.ReplaceOrInsert(itemOf(e))
	e.lic.live.ReplaceOrInsert(itemOf(e)) // the next partition files it right
	if k := e.lease.IdempotencyKey; k != "" {
		e.lic.byIdem[k] = append(e.lic.byIdem[k], e)
	}
	if k := e.lease.DedupeKey; k != "" {
		e.lic.byDedupe[k] = append(e.lic.byDedupe[k], e)
	}
	if e.lease.Borrowed {
		e.lic.borrowed[e] = struct{}{}
	}
}

func (x *index) removeLease(e *entry) {
	delete(x.leases, e.lease.ID)
	delete(x.dirty, e)
	x.unfile(e)
	removeFrom(e.lic.byIdem, e.lease.IdempotencyKey, e)
	removeFrom(e.lic.byDedupe, e.lease.DedupeKey, e)
	delete(e.lic.borrowed, e)
}

// setDeadline moves e to a new deadline in every ordered index.
func (x *index) setDeadline(e *entry, t time.Time) {
	x.unfile(e)
	e.lease.ExpiresAt = t
	x.expiry.ReplaceOrInsert(itemOf(e))
	e.lic.live.ReplaceOrInsert(itemOf(e))
}

func (x *index) unfile(e *entry) {
	it := itemOf(e)
	x.expiry.Delete(it)
	e.lic.live.Delete(it)
	e.lic.stale.Delete(it)
}

func removeFrom(m map[string][]*entry, k string, e *entry) {
	if k == "" {
		return
	}
	es := slices.DeleteFunc(m[k], func(x *entry) bool { return x == e })
	if len(es) == 0 {
		delete(m, k)
	} else {
		m[k] = es
	}
}
