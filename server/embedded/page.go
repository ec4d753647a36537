package embedded

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// scanPage walks the keys of b that start with pfx, ascending (or
// descending), strictly after the key in p.Token, and returns one page of
// the items fn accepts with the token of the next page ("" on the last).
// It looks one accepted item ahead so that a last page has no token.
func scanPage[T any](b *bolt.Bucket, pfx []byte, p server.Page, desc bool, fn func(k, v []byte) (T, bool, error)) ([]T, string, error) {
	after, err := decodeToken(p.Token, pfx)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var (
		out     []T
		lastKey []byte
	)
	c := b.Cursor()
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

func step(c *bolt.Cursor, desc bool) ([]byte, []byte) {
	if desc {
		return c.Prev()
	}
	return c.Next()
}

// start positions c on the first key of the walk.
func start(c *bolt.Cursor, pfx, after []byte, desc bool) ([]byte, []byte) {
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
