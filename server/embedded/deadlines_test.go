package embedded

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// modelLease is a lease as the brute-force model knows it.
type modelLease struct {
	id       string
	lic      int
	deadline int64
	busy     bool
}

// TestLazyDeadlinesMatchAModel runs random operations on the index (new
// leases, renewals later and earlier, ends, a clock that steps both ways,
// busy marks) and checks every answer that depends on deadlines against a
// brute-force model: live seats per license, the leases a grant displaces,
// and DueLeases paged with cursors.
func TestLazyDeadlinesMatchAModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runDeadlineModel(t, rand.New(rand.NewPCG(seed, 15)), 1500)
		})
	}
}

func runDeadlineModel(t *testing.T, rng *rand.Rand, steps int) {
	x := newIndex()
	var lics []*license
	for i, seats := range []int{3, 8, 40} {
		l := x.newLicense(server.License{ID: fmt.Sprintf("lic_%d", i), Key: fmt.Sprint(i), Seats: seats})
		x.addLicense(l)
		lics = append(lics, l)
	}
	now := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	model := map[ref]*modelLease{}
	pick := func() (ref, *modelLease, bool) {
		if len(model) == 0 {
			return 0, nil, false
		}
		keys := slices.Sorted(func(yield func(ref) bool) {
			for r := range model {
				if !yield(r) {
					return
				}
			}
		})
		r := keys[rng.IntN(len(keys))]
		return r, model[r], true
	}
	// Deadlines fall on a coarse grid so that many are equal: ties are
	// ordered by id.
	deadline := func(from, to int) int64 { return now + int64(rng.IntN(to-from)+from)*int64(time.Second) }

	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 25: // a new lease, sometimes already lapsed (loaded after a crash)
			li := rng.IntN(len(lics))
			id := fmt.Sprintf("lse_%08x", rng.Uint32())
			if _, dup := x.lookup(id); dup {
				continue
			}
			d := deadline(-5, 60)
			s, text := compact(&server.Lease{ID: id, TokenHash: "t", ExpiresAt: timeOf(d)}, 1)
			model[x.add(lics[li], s, text)] = &modelLease{id: id, lic: li, deadline: d}
		case op < 50: // a renewal: later as a heartbeat, earlier under a lowered TTL
			if r, m, ok := pick(); ok {
				m.deadline = deadline(-3, 60)
				x.moveDeadline(lics[m.lic], r, m.deadline)
			}
		case op < 58:
			if r, _, ok := pick(); ok {
				x.remove(r)
				delete(model, r)
			}
		case op < 62:
			if r, m, ok := pick(); ok {
				m.busy = !m.busy
				x.slots.at(r).flags ^= flagBusy
			}
		case op < 75: // the clock, stepping back now and then
			now += int64(rng.IntN(40)-12) * int64(time.Second)
		case op < 85:
			for li, l := range lics {
				want := 0
				for _, m := range model {
					if m.lic == li && m.deadline > now {
						want++
					}
				}
				require.Equal(t, want, x.liveCount(l, now), "step %d: live seats of license %d", step, li)
			}
		case op < 92:
			li := rng.IntN(len(lics))
			var active, lapsed []*modelLease
			for _, m := range model {
				if m.lic == li {
					active = append(active, m)
					if m.deadline <= now {
						lapsed = append(lapsed, m)
					}
				}
			}
			slices.SortFunc(lapsed, byDeadline)
			need := len(active) + 1 - lics[li].lic.SeatLimit()
			var want []string
			wantOK := true
			for _, m := range lapsed[:max(0, min(need, len(lapsed)))] {
				if m.busy {
					wantOK = false
					break
				}
				want = append(want, m.id)
			}
			got, ok := x.toDisplace(lics[li], now, nil)
			require.Equal(t, wantOK, ok, "step %d: a lease to displace is busy", step)
			if ok {
				require.Equal(t, want, idsOf(x, got), "step %d: displaced, earliest lapsed first", step)
			}
		default:
			requireDue(t, x, rng, model, now, step)
		}
		requireFiling(t, x, lics, model)
	}
}

func byDeadline(a, b *modelLease) int {
	return cmp.Or(cmp.Compare(a.deadline, b.deadline), strings.Compare(a.id, b.id))
}

func idsOf(x *index, rs []ref) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, textID(x.slots.text(r)))
	}
	return ids
}

// requireDue pages through the due leases with a random page size, from
// the start and from a random cursor, and compares with the model.
func requireDue(t *testing.T, x *index, rng *rand.Rand, model map[ref]*modelLease, now int64, step int) {
	t.Helper()
	var due []*modelLease
	for _, m := range model {
		if m.deadline <= now {
			due = append(due, m)
		}
	}
	slices.SortFunc(due, byDeadline)
	page := func(after *modelLease) []string {
		var got []string
		limit := rng.IntN(7) + 1
		for {
			var rs []ref
			if after == nil {
				rs = x.due(now, false, 0, "", limit)
			} else {
				rs = x.due(now, true, after.deadline, after.id, limit)
			}
			require.LessOrEqual(t, len(rs), limit)
			if len(rs) == 0 {
				return got
			}
			for _, r := range rs {
				got = append(got, textID(x.slots.text(r)))
			}
			last := rs[len(rs)-1]
			after = &modelLease{id: textID(x.slots.text(last)), deadline: x.slots.at(last).deadline}
		}
	}
	var want []string
	for _, m := range due {
		want = append(want, m.id)
	}
	require.Equal(t, want, page(nil), "step %d: due leases", step)

	// A cursor that is no lease: between ids, at a deadline that may be
	// anyone's.
	cur := &modelLease{id: fmt.Sprintf("lse_%08x", rng.Uint32()), deadline: now - int64(rng.IntN(10))*int64(time.Second)}
	var wantAfter []string
	for _, m := range due {
		if byDeadline(m, cur) > 0 {
			wantAfter = append(wantAfter, m.id)
		}
	}
	require.Equal(t, wantAfter, page(cur), "step %d: due leases after a cursor", step)
}

// requireFiling checks the trees themselves: every lease in exactly one
// of its license's trees and in the expiry tree, never filed later than
// its deadline, stale ones filed at it. (Plain comparisons: it runs after
// every step.)
func requireFiling(t *testing.T, x *index, lics []*license, model map[ref]*modelLease) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format, args...)
	}
	if x.active != len(model) || x.expiry.Len() != len(model) {
		fail("%d leases, %d active, %d in the expiry tree", len(model), x.active, x.expiry.Len())
	}
	n := 0
	for _, l := range lics {
		n += l.live.Len() + l.stale.Len()
		l.live.Ascend(func(it item) bool {
			if s := x.slots.at(it.r); s.flags&flagStale != 0 || s.filedLive != it.at() || it.at() > s.deadline {
				fail("live item at %d of a lease with deadline %d, filed %d, flags %x", it.at(), s.deadline, s.filedLive, s.flags)
			}
			return true
		})
		l.stale.Ascend(func(it item) bool {
			if s := x.slots.at(it.r); s.flags&flagStale == 0 || s.deadline != it.at() {
				fail("stale item at %d of a lease with deadline %d, flags %x", it.at(), s.deadline, s.flags)
			}
			return true
		})
	}
	if n != len(model) {
		fail("%d leases in the license trees, %d active", n, len(model))
	}
	x.expiry.Ascend(func(it item) bool {
		s := x.slots.at(it.r)
		if s.filedDue != it.at() || it.at() > s.deadline || (it.at() <= x.exactDue && it.at() != s.deadline) {
			fail("expiry item at %d of a lease with deadline %d, filed %d, exact up to %d", it.at(), s.deadline, s.filedDue, x.exactDue)
		}
		return true
	})
}

// TestLoweredTTLTakesEffectAtOnce: a heartbeat under a lowered TTL moves
// the deadline earlier; seats, cleanup and displacement see the new
// deadline at once (a lazy index re-files only later deadlines lazily).
func TestLoweredTTLTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.LeaseTTL = time.Hour; l.RevivalWindow = time.Minute })
	lease, tok := b.mustAcquire(t, l, "a")
	_, err := b.s.UpdateLicense(ctx, b.tenant, l.ID, func(l *server.License) error {
		l.LeaseTTL = 10 * time.Second
		return nil
	})
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	hb, err := b.s.Heartbeat(ctx, lease.ID, tok)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().Add(10*time.Second), hb.ExpiresAt)

	b.clock.Advance(10 * time.Second)
	n, err := b.s.SeatsInUse(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	require.Zero(t, n, "the lease stopped counting at its new deadline")
	due, err := b.s.DueLeases(ctx, nil, 10)
	require.NoError(t, err)
	require.Equal(t, []server.LeaseRef{{LeaseID: lease.ID, LicenseID: l.ID, ExpiresAt: hb.ExpiresAt}}, due)
	other, _ := b.mustAcquire(t, l, "b")
	require.NotEqual(t, lease.ID, other.ID)
	_, err = b.s.Heartbeat(ctx, lease.ID, tok)
	requireReason(t, err, server.ReasonLeaseExpired)
}

// TestHeartbeatsKeepDueLeasesExact: leases renewed many times are found
// due at their last deadline, in order, after the clock passes the
// deadlines they were filed under.
func TestHeartbeatsKeepDueLeasesExact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 10 })
	type held struct {
		lease server.Lease
		tok   string
	}
	var hs []held
	for range 5 {
		lease, tok := b.mustAcquire(t, l, "x")
		hs = append(hs, held{lease, tok})
		b.clock.Advance(time.Second)
	}
	for round := range 4 { // every lease heartbeats past its first deadline
		for i := range hs {
			if (i+round)%2 == 0 {
				hb, err := b.s.Heartbeat(ctx, hs[i].lease.ID, hs[i].tok)
				require.NoError(t, err)
				hs[i].lease = hb
			}
		}
		b.clock.Advance(3 * time.Second)
	}
	slices.SortFunc(hs, func(a, c held) int {
		return cmp.Or(a.lease.ExpiresAt.Compare(c.lease.ExpiresAt), strings.Compare(a.lease.ID, c.lease.ID))
	})
	due, err := b.s.DueLeases(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, due, "none is past its last deadline")
	n, err := b.s.SeatsInUse(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, 5, n)

	b.clock.Set(hs[2].lease.ExpiresAt)
	due, err = b.s.DueLeases(ctx, nil, 10)
	require.NoError(t, err)
	var want []server.LeaseRef
	for _, h := range hs {
		if !h.lease.ExpiresAt.After(b.clock.Now()) {
			want = append(want, server.LeaseRef{LeaseID: h.lease.ID, LicenseID: l.ID, ExpiresAt: h.lease.ExpiresAt})
		}
	}
	require.GreaterOrEqual(t, len(want), 3)
	require.Equal(t, want, due)
	n, err = b.s.SeatsInUse(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, len(hs)-len(want), n)
}
