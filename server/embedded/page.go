package embedded

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// cursor is what scanPage walks: a bbolt cursor, or unionCursor.
type cursor interface {
	First() ([]byte, []byte)
	Last() ([]byte, []byte)
	Seek(k []byte) ([]byte, []byte)
	Next() ([]byte, []byte)
	Prev() ([]byte, []byte)
}

var _ cursor = (*bolt.Cursor)(nil)

// scanPage walks the keys of b that start with pfx, ascending (or
// descending), strictly after the key in p.Token, and returns one page of
// the items fn accepts with the token of the next page ("" on the last).
// It looks one accepted item ahead so that a last page has no token.
func scanPage[T any](c cursor, pfx []byte, p server.Page, desc bool, fn func(k, v []byte) (T, bool, error)) ([]T, string, error) {
	after, err := decodeToken(p.Token, pfx)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var (
		out     []T
		lastKey []byte
	)
	for k, v := start(c, pfx, after, desc); k != nil && bytes.HasPrefix(k, pfx); k, v = step(c, desc) {
		item, ok, err := fn(k, v)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		if len(out) == size {
			return out, encodeToken(lastKey), nil
		}
		out = append(out, item)
		lastKey = bytes.Clone(k)
	}
	return out, "", nil
}

func step(c cursor, desc bool) ([]byte, []byte) {
	if desc {
		return c.Prev()
	}
	return c.Next()
}

// start positions c on the first key of the walk.
func start(c cursor, pfx, after []byte, desc bool) ([]byte, []byte) {
	switch {
	case !desc && after != nil:
		k, v := c.Seek(after)
		if bytes.Equal(k, after) {
			return c.Next()
		}
		return k, v
	case !desc:
		if pfx == nil {
			return c.First()
		}
		return c.Seek(pfx)
	}
	// Descending: seek to the first key at or past the bound, step back.
	bound := after
	if bound == nil {
		bound = prefixEnd(pfx)
	}
	if bound == nil {
		return c.Last()
	}
	if k, _ := c.Seek(bound); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// prefixEnd is the smallest key greater than every key with prefix pfx, or
// nil for no bound.
func prefixEnd(pfx []byte) []byte {
	end := bytes.Clone(pfx)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// scanRange pages, ascending, through the timeKeys of c under scope with
// their time in r ([Start, End), a zero side open), strictly after the key
// in p.Token, of the items fn accepts: the event lists. It looks one item
// ahead so that a last page has no token.
func scanRange[T any](c cursor, scope string, r server.EventRange, p server.Page, fn func(v []byte) (T, bool, error)) ([]T, string, error) {
	pfx := prefix(scope)
	after, err := decodeToken(p.Token, pfx)
	if err != nil {
		return nil, "", err
	}
	var hi []byte
	if !r.End.IsZero() {
		hi = timeKey(scope, r.End, "")
	}
	size := p.PageSize()
	var out []T
	var k, v []byte
	switch {
	case after != nil:
		if k, v = c.Seek(after); bytes.Equal(k, after) {
			k, v = c.Next()
		}
	default:
		k, v = c.Seek(timeKey(scope, r.Start, ""))
	}
	var lastKey []byte
	for ; k != nil && bytes.HasPrefix(k, pfx) && (hi == nil || bytes.Compare(k, hi) < 0); k, v = c.Next() {
		if !r.Start.IsZero() && bytes.Compare(k, timeKey(scope, r.Start, "")) < 0 {
			continue // a token from before the range
		}
		item, ok, err := fn(v)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		if len(out) == size {
			return out, encodeToken(lastKey), nil
		}
		out = append(out, item)
		lastKey = bytes.Clone(k)
	}
	return out, "", nil
}

// unionCursor walks cursors whose keys never coincide as one.
type unionCursor struct {
	cs     []cursor
	ks, vs [][]byte // each cursor's position (nil: past its end in the walk's direction)
	back   bool     // walking backwards: the cursors are at or before the current key
	cur    int      // the cursor the current key is of
}

func union(cs ...cursor) *unionCursor {
	return &unionCursor{cs: cs, ks: make([][]byte, len(cs)), vs: make([][]byte, len(cs))}
}

// each moves every cursor with move.
func (u *unionCursor) each(move func(c cursor) ([]byte, []byte)) {
	for i, c := range u.cs {
		u.ks[i], u.vs[i] = move(c)
	}
}

func (u *unionCursor) First() ([]byte, []byte) {
	u.each(cursor.First)
	u.back = false
	return u.pick()
}

func (u *unionCursor) Last() ([]byte, []byte) {
	u.each(cursor.Last)
	u.back = true
	return u.pick()
}

func (u *unionCursor) Seek(k []byte) ([]byte, []byte) {
	u.each(func(c cursor) ([]byte, []byte) { return c.Seek(k) })
	u.back = false
	return u.pick()
}

func (u *unionCursor) Next() ([]byte, []byte) {
	if len(u.cs) == 0 {
		return nil, nil
	}
	if u.back { // turn: every cursor to the first key after the current one
		cur := bytes.Clone(u.ks[u.cur])
		if k, _ := u.Seek(cur); bytes.Equal(k, cur) {
			return u.advance()
		}
		return u.pick()
	}
	return u.advance()
}

func (u *unionCursor) Prev() ([]byte, []byte) {
	if len(u.cs) == 0 {
		return nil, nil
	}
	if !u.back { // turn: every cursor to the last key before the current one
		cur := bytes.Clone(u.ks[u.cur])
		u.each(func(c cursor) ([]byte, []byte) { return before(c, cur) })
		u.back = true
		return u.pick()
	}
	return u.advance()
}

// before positions c on its last key before k.
func before(c cursor, k []byte) ([]byte, []byte) {
	if k == nil {
		return c.Last()
	}
	if got, _ := c.Seek(k); got == nil {
		return c.Last()
	}
	return c.Prev()
}

// advance steps the cursor the current key came from, in the walk's
// direction.
func (u *unionCursor) advance() ([]byte, []byte) {
	if u.ks[u.cur] != nil {
		u.ks[u.cur], u.vs[u.cur] = step(u.cs[u.cur], u.back)
	}
	return u.pick()
}

// pick makes the nearest of the positions the current key.
func (u *unionCursor) pick() ([]byte, []byte) {
	u.cur = 0
	if len(u.cs) == 0 {
		return nil, nil
	}
	for i, k := range u.ks {
		if k == nil {
			continue
		}
		if best := u.ks[u.cur]; best == nil || bytes.Compare(k, best) < 0 != u.back {
			u.cur = i
		}
	}
	return u.ks[u.cur], u.vs[u.cur]
}

// rescoped shows the keys of one scope under another: a key
// prefix(from)+rest as prefix(to)+rest, and nothing outside from. Under
// a union of rescoped cursors, the history of a license's grants reads
// as the license's own, in one order and with page tokens of its scope.
type rescoped struct {
	c        cursor
	from, to []byte // prefixes
}

func (r *rescoped) show(k, v []byte) ([]byte, []byte) {
	if k == nil || !bytes.HasPrefix(k, r.from) {
		return nil, nil
	}
	return append(bytes.Clone(r.to), k[len(r.from):]...), v
}

func (r *rescoped) First() ([]byte, []byte) { return r.show(r.c.Seek(r.from)) }

func (r *rescoped) Last() ([]byte, []byte) {
	if end := prefixEnd(r.from); end != nil {
		if k, _ := r.c.Seek(end); k != nil {
			return r.show(r.c.Prev())
		}
	}
	return r.show(r.c.Last())
}

func (r *rescoped) Seek(k []byte) ([]byte, []byte) {
	if !bytes.HasPrefix(k, r.to) {
		if bytes.Compare(k, r.to) < 0 {
			return r.First()
		}
		return nil, nil
	}
	return r.show(r.c.Seek(append(bytes.Clone(r.from), k[len(r.to):]...)))
}

func (r *rescoped) Next() ([]byte, []byte) { return r.show(r.c.Next()) }

func (r *rescoped) Prev() ([]byte, []byte) { return r.show(r.c.Prev()) }
