package embedded

import (
	"math/rand/v2"
	"slices"
	"testing"
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
