package embedded

import (
	"crypto/subtle"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/seatd/seatd/server"
)

// license is a license in memory with its active leases, split by
// deadline so that counting live seats costs O(log n), not a scan.
type license struct {
	lic      server.License
	num      uint32 // its number: index.lics[num], slot.lic
	deleted  bool
	creating bool // CreateLicense's write is in flight: invisible
	busy     bool // an update or delete is in flight: acquisitions wait

	live     *btree.BTreeG[item] // deadline after the last partition time (deadlines.go)
	stale    *btree.BTreeG[item] // at or past deadline, not cleaned up yet
	borrowed map[ref]struct{}    // the active borrowed leases

	// A feature grant is a pool of its own (invariant 12), kept as a
	// license of its own: lic is then grant.Pool(&parent.lic), and its
	// leases are counted, filed and cleaned up as a license's (grants.go).
	parent *license
	grant  server.Grant
	// A license's grants: the undeleted ones in server.SortGrants order
	// (lic.Grants lists them), and the deleted ones, whose history stays.
	grants, former []*license
	// covered memoizes covering (feature.go) until the grants change
	// (syncGrants): the pools are read-only to its callers.
	covered map[coverKey][]*license

	// policy: a license's site policy as acquisitions judge it, nil
	// without one (policy.go).
	policy *policyState
}

// index is all in-memory state, guarded by Store.mu. Memory is
// authoritative for active leases: heartbeats reach the database later
// (write-behind). A lease is a ref to a slot; nothing per lease holds a
// pointer but its text, so the collector's work does not grow with the
// leases' fields.
type index struct {
	licenses map[string]*license // by id, deleted ones too
	// returned: the returned certificates by lease id (returned.go)
	returned map[string]server.ReturnedCertificate
	keys     map[string]*license // by key, undeleted only
	lics     []*license          // by number

	slots  slots
	ids    table // lease id → ref
	dedupe table // (license, dedupe key) → refs
	idem   table // (license, idempotency key) → refs
	seed   maphash.Seed
	active int

	expiry   *btree.BTreeG[item] // every active lease, for DueLeases (deadlines.go)
	exactDue int64               // expiry items filed at or before it are filed at their deadline
	pivot    string              // the id of pivotRef during a search

	dirty []ref // heartbeats waiting for the flusher (flagDirty; a ref may repeat)

	// policied: each tenant's licenses with a site policy (policy.go);
	// groupsBusy: the tenants whose policies or groups are being written.
	policied   map[string]map[*license]struct{}
	groupsBusy map[string]bool
}

func newIndex() *index {
	x := &index{
		licenses:   map[string]*license{},
		returned:   map[string]server.ReturnedCertificate{},
		keys:       map[string]*license{},
		seed:       maphash.MakeSeed(),
		policied:   map[string]map[*license]struct{}{},
		groupsBusy: map[string]bool{},
		exactDue:   zeroTime,
	}
	x.expiry = x.newTree()
	return x
}

func (x *index) newLicense(l server.License) *license {
	return &license{
		lic:      l,
		num:      uint32(len(x.lics)),
		live:     x.newTree(),
		stale:    x.newTree(),
		borrowed: map[ref]struct{}{},
	}
}

// addLicense indexes l; a new license takes the next number.
func (x *index) addLicense(l *license) {
	if int(l.num) == len(x.lics) {
		x.lics = append(x.lics, l)
	}
	x.licenses[l.lic.ID] = l
	if !l.deleted && l.parent == nil { // no key opens a grant
		x.keys[l.lic.Key] = l
	}
}

// removeLicense forgets a license whose creation failed. Its number stays
// taken (nil), so that no slot can name another license by it.
func (x *index) removeLicense(l *license) {
	delete(x.licenses, l.lic.ID)
	if l.parent == nil && x.keys[l.lic.Key] == l {
		delete(x.keys, l.lic.Key)
	}
	x.lics[l.num] = nil
}

func (x *index) licenseOf(r ref) *license { return x.lics[x.slots.at(r).lic] }

// lookup finds an active lease by id.
func (x *index) lookup(id string) (ref, bool) {
	var found ref
	ok := false
	x.ids.find(maphash.String(x.seed, id), func(r ref) bool {
		if textID(x.slots.text(r)) == id {
			found, ok = r, true
			return false
		}
		return true
	})
	return found, ok
}

// keyHash hashes a (license, key) pair of the dedupe and idempotency
// tables; the key may come in two parts (prefix, rest).
func (x *index) keyHash(lic uint32, prefix, rest string) uint64 {
	var h maphash.Hash
	h.SetSeed(x.seed)
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], lic)
	_, _ = h.Write(n[:])
	_, _ = h.WriteString(prefix)
	_, _ = h.WriteString(rest)
	return h.Sum64()
}

// add indexes a new active lease of l and returns its ref. It keeps a
// copy of text, not text itself. The caller has checked that no active
// lease has its id.
func (x *index) add(l *license, s slot, text string) ref {
	r := x.store(l, s, text)
	if !x.hashID(r) {
		panic("embedded: a second active lease with the id " + textID(text))
	}
	x.hashKeys(r)
	x.file(l, r)
	if l.licenseOf().policy != nil {
		t := x.text(r)
		x.hold(l, r, &t)
	}
	return r
}

// store puts a lease of l in a slot, findable by nothing yet (hashID,
// hashKeys, file; load does them for all leases at once: indexAll).
func (x *index) store(l *license, s slot, text string) ref {
	s.lic = l.num
	r := x.slots.alloc(s, text)
	if s.flags&flagBorrowed != 0 {
		l.borrowed[r] = struct{}{}
	}
	x.active++
	return r
}

// hashID makes a stored lease findable by its id; false if another
// active lease has that id.
func (x *index) hashID(r ref) bool {
	id := textID(x.slots.text(r))
	return x.ids.insertUnique(maphash.String(x.seed, id), r, func(o ref) bool { return textID(x.slots.text(o)) == id })
}

// hashKeys makes a stored lease findable by its idempotency and dedupe
// keys.
func (x *index) hashKeys(r ref) {
	s, t := x.slots.at(r), x.text(r)
	if t.idem != "" {
		x.idem.insert(x.keyHash(s.lic, "", t.idem), r)
	}
	if p, rest := t.dedupeParts(s.flags.dedupeKind()); p+rest != "" {
		x.dedupe.insert(x.keyHash(s.lic, p, rest), r)
	}
}

// indexAll makes stored leases findable and files them by deadline, in
// two goroutines that share nothing but the slots both only read: ids and
// the expiry tree, keys and the licenses' trees. It returns a lease whose
// id another one has, if any (ok false).
func (x *index) indexAll(rs []ref) (dup ref, ok bool) {
	for _, r := range rs {
		s := x.slots.at(r)
		s.filedLive, s.filedDue = s.deadline, s.deadline
	}
	ok = true
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, r := range rs {
			if ok && !x.hashID(r) {
				dup, ok = r, false
			}
		}
		for _, r := range rs {
			x.expiry.ReplaceOrInsert(itemAt(x.slots.at(r).deadline, r))
		}
	})
	for _, r := range rs {
		x.hashKeys(r)
		s := x.slots.at(r)
		x.lics[s.lic].live.ReplaceOrInsert(itemAt(s.deadline, r))
	}
	wg.Wait()
	return dup, ok
}

// remove forgets an active lease (it ended, or its grant failed).
func (x *index) remove(r ref) {
	s := x.slots.at(r)
	l := x.lics[s.lic]
	t := mustParseText(x.slots.text(r), s.flags)
	x.unfile(l, r)
	x.unhold(l, r, &t)
	x.ids.remove(maphash.String(x.seed, t.id), r)
	if t.idem != "" {
		x.idem.remove(x.keyHash(l.num, "", t.idem), r)
	}
	if p, rest := t.dedupeParts(s.flags.dedupeKind()); p+rest != "" {
		x.dedupe.remove(x.keyHash(l.num, p, rest), r)
	}
	delete(l.borrowed, r)
	x.slots.release(r)
	x.active--
}

// lease is the answer for an active lease: built on demand; its strings
// share the lease's text.
func (x *index) lease(r ref) server.Lease {
	l := x.licenseOf(r)
	return expand(x.slots.at(r), x.slots.text(r), l.lic.ID, l.lic.TenantID)
}

// ownLease is lease for a caller whose token hash tokenMatches checked:
// the answer holds the caller's string, which equals the lease's.
func (x *index) ownLease(r ref, tokenHash string) server.Lease {
	l := x.licenseOf(r)
	return expandWith(x.slots.at(r), x.slots.text(r), l.lic.ID, l.lic.TenantID, tokenHash)
}

// text is an active lease's strings.
func (x *index) text(r ref) leaseText {
	return mustParseText(x.slots.text(r), x.slots.at(r).flags)
}

// tokenMatches compares a token hash with the lease's in constant time.
func (x *index) tokenMatches(r ref, tokenHash string) bool {
	s := x.slots.at(r)
	if s.flags&flagTokenText != 0 {
		t := x.text(r)
		return subtle.ConstantTimeCompare([]byte(t.token), []byte(tokenHash)) == 1
	}
	b, ok := tokenBytes(tokenHash)
	return ok && subtle.ConstantTimeCompare(s.token[:], b[:]) == 1
}

// match returns a live lease of l sharing the idempotency key or the
// dedupe key (invariant 4): a borrow finds only borrowed leases, and any
// other acquisition only leases that are not.
func (x *index) match(l *license, idem, dedupe string, borrowing bool, now int64) (ref, bool) {
	if idem != "" {
		idemOf := func(t *leaseText, _ flags) (string, string) { return "", t.idem }
		if r, ok := x.earliest(&x.idem, l, idem, borrowing, now, idemOf); ok {
			return r, true
		}
	}
	if dedupe != "" {
		dedupeOf := func(t *leaseText, f flags) (string, string) { return t.dedupeParts(f.dedupeKind()) }
		return x.earliest(&x.dedupe, l, dedupe, borrowing, now, dedupeOf)
	}
	return 0, false
}

// earliest finds, in tbl, the earliest acquired live lease of l whose key
// (keyOf: a prefix and a rest) is key.
func (x *index) earliest(tbl *table, l *license, key string, borrowing bool, now int64, keyOf func(*leaseText, flags) (string, string)) (ref, bool) {
	var (
		best   ref
		bestID string
		found  bool
	)
	tbl.find(x.keyHash(l.num, "", key), func(r ref) bool {
		s := x.slots.at(r)
		if s.lic != l.num || !s.live(now) || s.borrowed() != borrowing {
			return true
		}
		t := x.text(r)
		if p, rest := keyOf(&t, s.flags); !joinedEqual(key, p, rest) {
			return true
		}
		if !found || cmpAcquired(s, x.slots.at(best), t.id, bestID) < 0 {
			best, bestID, found = r, t.id, true
		}
		return true
	})
	return best, found
}

// lapsed returns the leases of l past their deadline that share the
// idempotency key or the dedupe key (of the same kind, as match): a grant
// that takes those keys ends them (invariant 4: none may revive beside the
// new lease). ok is false if one of them is being written.
func (x *index) lapsed(l *license, idem, dedupe string, borrowing bool, now int64) (rs []ref, ok bool) {
	ok = true
	collect := func(tbl *table, key string, keyOf func(*leaseText, flags) (string, string)) {
		tbl.find(x.keyHash(l.num, "", key), func(r ref) bool {
			s := x.slots.at(r)
			if s.lic != l.num || s.live(now) || s.borrowed() != borrowing || slices.Contains(rs, r) {
				return true
			}
			t := x.text(r)
			if p, rest := keyOf(&t, s.flags); !joinedEqual(key, p, rest) {
				return true
			}
			if s.busy() {
				ok = false
				return false
			}
			rs = append(rs, r)
			return true
		})
	}
	if idem != "" {
		collect(&x.idem, idem, func(t *leaseText, _ flags) (string, string) { return "", t.idem })
	}
	if dedupe != "" && ok {
		collect(&x.dedupe, dedupe, func(t *leaseText, f flags) (string, string) { return t.dedupeParts(f.dedupeKind()) })
	}
	return rs, ok
}

// joinedEqual reports whether s == prefix+rest, without building it.
func joinedEqual(s, prefix, rest string) bool {
	return len(s) == len(prefix)+len(rest) && s[:len(prefix)] == prefix && s[len(prefix):] == rest
}

// returnedCount is the number of l's borrowed leases returned early whose
// deadline is after now (they count against its borrow cap).
func (x *index) returnedCount(l *license, now int64) int {
	n := 0
	for _, rc := range x.returned {
		if rc.LicenseID == l.lic.ID && rc.ExpiresAt.UnixNano() > now {
			n++
		}
	}
	return n
}

// borrowedCount is the number of borrowed leases of l live at now.
func (x *index) borrowedCount(l *license, now int64) int {
	n := 0
	for r := range l.borrowed {
		if x.slots.at(r).live(now) {
			n++
		}
	}
	return n
}

// entries returns every active lease of l.
func (x *index) entries(l *license) []ref {
	rs := make([]ref, 0, l.live.Len()+l.stale.Len())
	collect := func(it item) bool { rs = append(rs, it.r); return true }
	l.live.Ascend(collect)
	l.stale.Ascend(collect)
	return rs
}

// setDeadline moves an active lease to a new deadline (deadlines.go).
func (x *index) setDeadline(r ref, t time.Time) {
	x.moveDeadline(x.licenseOf(r), r, t.UnixNano())
}

// markDirty queues a lease's heartbeat for the flusher.
func (x *index) markDirty(r ref) {
	s := x.slots.at(r)
	if s.flags&flagDirty == 0 {
		s.flags |= flagDirty
		x.dirty = append(x.dirty, r)
	}
}

// setToken gives an active lease a new token hash. The text changes only
// when the hash moves between the slot and the text (flagTokenText).
func (x *index) setToken(r ref, tokenHash string) {
	s := x.slots.at(r)
	b, ok := tokenBytes(tokenHash)
	if ok && s.flags&flagTokenText == 0 {
		s.token = b
		return
	}
	t := x.text(r)
	meta := t.metadata()
	s.token, t.token = b, ""
	s.flags &^= flagTokenText
	if !ok {
		s.flags |= flagTokenText
		t.token = tokenHash
	}
	x.slots.setText(r, string(appendText(nil, &t, s.flags, meta)))
}
