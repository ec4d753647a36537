package embedded

// ref names a slot: one active lease in memory.
type ref uint32

// slot is an active lease in memory. It holds no pointers: the slot
// chunks are never scanned by the collector, however many leases there
// are. The lease's strings are one immutable text per lease (leasetext.go)
// in an arena (texts.go); its license and tenant ids are its license's.
type slot struct {
	deadline int64 // Unix ns; the lease stops counting at it
	beat     int64 // last heartbeat, Unix ns
	acquired int64 // Unix ns
	// The deadline under which the lease is filed in its license's live
	// or stale tree and in the expiry tree (deadlines.go): never later
	// than deadline; earlier when a renewal has not re-filed it yet.
	filedLive, filedDue int64
	rev                 uint64   // bumped on every change; orders writes (tx.go)
	token               [32]byte // SHA-256 of the lease token, unless flagTokenText
	text                textRef  // where its text is
	lic                 uint32   // the license's number (index.lics)
	gen                 uint32   // bumped each time the slot is freed
	flags               flags
}

// flags: the low byte is stored with the lease (record.go), the high
// byte is memory's own.
type flags uint16

const (
	flagBorrowed  flags = 1 << 0
	flagTokenText flags = 1 << 1 // the token hash is not 64 lowercase hex: kept in the text
	dedupeShift         = 2      // bits 2-4: the dedupe key's kind (dedupeNone...)
	dedupeMask    flags = 7 << dedupeShift
	flagFeature   flags = 1 << 5 // a lease of a feature: its feature and version are in the text
	flagReserved  flags = 1 << 6 // a lease that took a reserved seat: its reservation's key is in the text
	flagLingering flags = 1 << 7 // released by its client, held for its linger (server/linger.go): beat is the release
	storedFlags   flags = 0xff

	flagUsed  flags = 1 << 8  // the slot holds a lease
	flagBusy  flags = 1 << 9  // a write of the lease is in flight: others wait (Store.wait)
	flagDirty flags = 1 << 10 // heartbeats not yet flushed
	flagStale flags = 1 << 11 // filed in its license's stale tree, not live
)

func (f flags) dedupeKind() uint8 { return uint8(f&dedupeMask) >> dedupeShift }

func (s *slot) busy() bool { return s.flags&flagBusy != 0 }

func (s *slot) borrowed() bool { return s.flags&flagBorrowed != 0 }

func (s *slot) lingering() bool { return s.flags&flagLingering != 0 }

// live reports whether the lease holds a seat at now (invariant 2).
func (s *slot) live(now int64) bool { return now < s.deadline }

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
)

// slots stores slots in fixed chunks that never move, so a *slot stays
// valid while the slot is in use, and growth copies nothing. Freed slots
// are reused, most recently freed first.
type slots struct {
	chunks []*[chunkSize]slot
	texts  texts
	free   []ref
	n      ref // slots ever handed out
}

func (ss *slots) at(r ref) *slot { return &ss.chunks[r>>chunkBits][r&(chunkSize-1)] }

func (ss *slots) text(r ref) string { return ss.texts.get(ss.at(r).text) }

func (ss *slots) alloc(s slot, text string) ref {
	var r ref
	if k := len(ss.free); k > 0 {
		r = ss.free[k-1]
		ss.free = ss.free[:k-1]
	} else {
		r = ss.n
		ss.n++
		if int(r>>chunkBits) == len(ss.chunks) {
			ss.chunks = append(ss.chunks, new([chunkSize]slot))
		}
	}
	at := ss.at(r)
	s.gen = at.gen
	s.flags |= flagUsed
	s.text = ss.texts.add(r, text)
	*at = s
	return r
}

func (ss *slots) release(r ref) {
	at := ss.at(r)
	t := at.text
	*at = slot{gen: at.gen + 1}
	ss.free = append(ss.free, r)
	ss.dropText(t)
}

// setText gives slot r a new text (its token hash moved in or out of it).
func (ss *slots) setText(r ref, text string) {
	at := ss.at(r)
	old := at.text
	at.text = ss.texts.add(r, text)
	ss.dropText(old)
}

func (ss *slots) dropText(t textRef) {
	if i, ok := ss.texts.drop(t); ok {
		ss.texts.compact(i,
			func(r ref, t textRef) bool { s := ss.at(r); return s.flags&flagUsed != 0 && s.text == t },
			func(r ref, t textRef) { ss.at(r).text = t })
	}
}
