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

// scanRange pages, ascending, through the timeKeys of b under scope with
// their time in r ([Start, End), a zero side open), strictly after the key
// in p.Token: the event lists. It looks one item ahead so that a last page
// has no token.
func scanRange[T any](b *bolt.Bucket, scope string, r server.EventRange, p server.Page, fn func(v []byte) (T, error)) ([]T, string, error) {
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
	c := b.Cursor()
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
		if len(out) == size {
			return out, encodeToken(lastKey), nil
		}
		item, err := fn(v)
		if err != nil {
			return nil, "", err
		}
		out = append(out, item)
		lastKey = bytes.Clone(k)
	}
	return out, "", nil
}

// unionCursor walks two cursors whose keys never coincide as one.
type unionCursor struct {
	a, b   cursor
	ak, av []byte // a's position (nil: past its end in the walk's direction)
	bk, bv []byte
	back   bool // walking backwards: a and b are at or before the current key
	onA    bool // the current key is a's
}

func (u *unionCursor) First() ([]byte, []byte) {
	u.ak, u.av = u.a.First()
	u.bk, u.bv = u.b.First()
	u.back = false
	return u.pick()
}

func (u *unionCursor) Last() ([]byte, []byte) {
	u.ak, u.av = u.a.Last()
	u.bk, u.bv = u.b.Last()
	u.back = true
	return u.pick()
}

func (u *unionCursor) Seek(k []byte) ([]byte, []byte) {
	u.ak, u.av = u.a.Seek(k)
	u.bk, u.bv = u.b.Seek(k)
	u.back = false
	return u.pick()
}

func (u *unionCursor) Next() ([]byte, []byte) {
	if u.back { // turn: both to the first key after the current one
		cur := bytes.Clone(u.current())
		u.Seek(cur)
		if u.onA && bytes.Equal(u.ak, cur) || !u.onA && bytes.Equal(u.bk, cur) {
			return u.advance()
		}
		return u.pick()
	}
	return u.advance()
}

func (u *unionCursor) Prev() ([]byte, []byte) {
	if !u.back { // turn: both to the last key before the current one
		cur := bytes.Clone(u.current())
		u.ak, u.av = before(u.a, cur)
		u.bk, u.bv = before(u.b, cur)
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

func (u *unionCursor) current() []byte {
	if u.onA {
		return u.ak
	}
	return u.bk
}

// advance steps the cursor the current key came from, in the walk's
// direction.
func (u *unionCursor) advance() ([]byte, []byte) {
	switch {
	case u.onA && u.ak != nil:
		u.ak, u.av = step(u.a, u.back)
	case !u.onA && u.bk != nil:
		u.bk, u.bv = step(u.b, u.back)
	}
	return u.pick()
}

// pick makes the nearer of the two positions the current key.
func (u *unionCursor) pick() ([]byte, []byte) {
	switch {
	case u.ak == nil && u.bk == nil:
		u.onA = true
		return nil, nil
	case u.bk == nil:
		u.onA = true
	case u.ak == nil:
		u.onA = false
	default:
		c := bytes.Compare(u.ak, u.bk)
		u.onA = c < 0 != u.back
	}
	if u.onA {
		return u.ak, u.av
	}
	return u.bk, u.bv
}
