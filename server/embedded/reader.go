package embedded

import (
	"encoding/binary"
	"fmt"
)

// reader reads a lease's text (a string) or record (bytes) field by
// field. The first error names its field, and stops the rest: every later
// read returns zero.
type reader[T string | []byte] struct {
	b   T
	err error
}

func (r *reader[T]) fail(field, why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s", field, why)
	}
	r.b = r.b[:0]
}

// take returns the next n bytes.
func (r *reader[T]) take(field string, n uint64) T {
	if n > uint64(len(r.b)) {
		r.fail(field, "truncated")
		return r.b[:0]
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader[T]) byte(field string) byte {
	if v := r.take(field, 1); len(v) == 1 {
		return v[0]
	}
	return 0
}

// int64 reads 8 bytes, big-endian.
func (r *reader[T]) int64(field string) int64 {
	var n uint64
	for _, c := range []byte(r.take(field, 8)) {
		n = n<<8 | uint64(c)
	}
	return int64(n)
}

func (r *reader[T]) uvarint(field string) uint64 {
	n, k := uvarint(r.b)
	if k <= 0 {
		r.fail(field, "bad length")
		return 0
	}
	r.b = r.b[k:]
	return n
}

// bytes reads a uvarint length and that many bytes (sharing r's).
func (r *reader[T]) bytes(field string) T {
	return r.take(field, r.uvarint(field))
}

// uvarint is binary.Uvarint of bytes or a string (without converting it).
func uvarint[T string | []byte](b T) (uint64, int) {
	var x uint64
	var sh uint
	for i := 0; i < len(b) && i < binary.MaxVarintLen64; i++ {
		c := b[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<sh, i + 1
		}
		x |= uint64(c&0x7f) << sh
		sh += 7
	}
	return 0, 0
}
