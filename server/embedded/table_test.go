package embedded

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestTableMatchesAMap: random inserts and removals, with hashes drawn
// from few values so that runs collide and wrap around the table's end,
// leave find yielding exactly the slots stored under each hash.
func TestTableMatchesAMap(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tbl table
		model := map[uint64][]ref{}
		hashes := make([]uint64, 1+rng.IntN(40))
		for i := range hashes {
			hashes[i] = rng.Uint64()
			if i > 0 && rng.IntN(3) == 0 { // the same fragment, another hash
				hashes[i] = hashes[i-1]&^0xffffffff | rng.Uint64()&0xffffffff
			}
		}
		next := ref(0)
		for step := range 3000 {
			h := hashes[rng.IntN(len(hashes))]
			if rs := model[h]; len(rs) > 0 && rng.IntN(2) == 0 {
				r := rs[rng.IntN(len(rs))]
				tbl.remove(h, r)
				model[h] = slices.DeleteFunc(rs, func(x ref) bool { return x == r })
			} else {
				tbl.insert(h, next)
				model[h] = append(model[h], next)
				next++
			}
			n := 0
			for _, h := range hashes {
				var got []ref
				tbl.find(h, func(r ref) bool { got = append(got, r); return true })
				// find yields every slot of the fragment: keep h's own.
				got = slices.DeleteFunc(got, func(r ref) bool { return !slices.Contains(model[h], r) })
				slices.Sort(got)
				want := slices.Sorted(slices.Values(model[h]))
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: hash %x holds %v, want %v", seed, step, h, got, want)
				}
			}
			for _, rs := range model {
				n += len(rs)
			}
			if tbl.n != n {
				t.Fatalf("seed %d step %d: %d entries, want %d", seed, step, tbl.n, n)
			}
		}
	}
}

// TestTextArenasCompact: leases come and go until arenas are compacted
// and dropped; every lease's text reads back as it was made, and a string
// handed out before a compaction still reads the same after it.
func TestTextArenasCompact(t *testing.T) {
	t.Parallel()
	x := newIndex()
	l := x.newLicense(server.License{ID: "lic_1", Seats: 1 << 20})
	x.addLicense(l)
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[ref]string{}
	var held []string // answers' strings, kept across compactions
	var heldWant []string
	for i := range 20000 {
		if len(want) > 0 && i > 8000 && rng.IntN(10) < 8 { // then mostly ends: old arenas empty
			for r := range want { // any one
				x.remove(r)
				delete(want, r)
				break
			}
			continue
		}
		id := fmt.Sprintf("lse_%06d", i)
		s, text := compact(&server.Lease{
			ID: id, TokenHash: "t", Fingerprint: strings.Repeat("f", rng.IntN(400)),
			Metadata: map[string]string{"k": strings.Repeat("v", rng.IntN(600))},
		}, 1)
		r := x.add(l, s, text)
		want[r] = text
		if i%1000 == 0 {
			held = append(held, x.lease(r).Fingerprint)
			heldWant = append(heldWant, x.text(r).fingerprint)
			heldWant[len(heldWant)-1] = strings.Clone(heldWant[len(heldWant)-1])
		}
	}
	require.NotEmpty(t, x.slots.texts.free, "arenas were compacted and dropped")
	for r, text := range want {
		require.Equal(t, text, x.slots.text(r))
		got, ok := x.lookup(textID(text))
		require.True(t, ok)
		require.Equal(t, r, got)
	}
	require.Equal(t, heldWant, held, "strings handed out survive the compaction of their arena")
	live := 0
	for r := range want {
		live += textHeader + int(x.slots.at(r).text.n)
	}
	sum := 0
	for _, n := range x.slots.texts.live {
		sum += n
	}
	require.Equal(t, live, sum, "the arenas count exactly the live texts")
}
