package waitqueue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

func redisQueue(t *testing.T, max int, liveness time.Duration) *Redis {
	t.Helper()
	url := os.Getenv("SEATD_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	require.NoError(t, rdb.Ping(context.Background()).Err(), "Redis is needed: run scripts/services.sh (or set SEATD_TEST_REDIS_URL)")
	prefix := fmt.Sprintf("seatd-test-wq-%d:", rand.Uint32())
	redisKeysOf.Store(t.Name(), func() []string { return rdb.Keys(context.Background(), prefix+"*").Val() })
	t.Cleanup(func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	return NewRedis(rdb, prefix, max, liveness)
}

// positionOf is a ticket's position and queue length.
func positionOf(ctx context.Context, tk Ticket) (int, int, error) {
	p, err := tk.Position(ctx)
	return p.Position, p.Length, err
}

func TestQueues(t *testing.T) {
	t.Parallel()
	impls := map[string]func(t *testing.T, max int) Queue{
		"memory": func(_ *testing.T, max int) Queue { return NewMemory(max) },
		"redis":  func(t *testing.T, max int) Queue { return redisQueue(t, max, 5*time.Second) },
	}
	for name, newQueue := range impls {
		t.Run(name+"/FIFO", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 100)
			ctx := context.Background()
			var tickets []Ticket
			for range 50 {
				tk, err := q.Join(ctx, "lic", 0, "")
				require.NoError(t, err)
				tickets = append(tickets, tk)
			}
			for i, tk := range tickets {
				pos, n, err := positionOf(ctx, tk)
				require.NoError(t, err)
				require.Equal(t, i+1, pos)
				require.Equal(t, 50, n)
			}
			n, err := q.Length(ctx, "lic")
			require.NoError(t, err)
			require.Equal(t, 50, n, "Length counts the waiters")
			n, err = q.Length(ctx, "other")
			require.NoError(t, err)
			require.Zero(t, n, "a queue nobody joined is empty")
			// The head leaves: everyone moves up by one, in order.
			tickets[0].Leave(ctx)
			tickets[0].Leave(ctx) // idempotent
			n, err = q.Length(ctx, "lic")
			require.NoError(t, err)
			require.Equal(t, 49, n, "Length after one left")
			for i, tk := range tickets[1:] {
				pos, n, err := positionOf(ctx, tk)
				require.NoError(t, err)
				require.Equal(t, i+1, pos)
				require.Equal(t, 49, n)
			}
			_, _, err = positionOf(ctx, tickets[0])
			require.Error(t, err, "a ticket that left has no position")
		})
		t.Run(name+"/NewHead", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 10)
			ctx := context.Background()
			var tk []Ticket
			for range 4 {
				x, err := q.Join(ctx, "lic", 0, "")
				require.NoError(t, err)
				tk = append(tk, x)
			}
			require.Empty(t, tk[2].Leave(ctx), "a waiter behind the head leaves: the head stays")
			require.Equal(t, tk[1].ID(), tk[0].Leave(ctx), "the head leaves: the next one is the head")
			require.Empty(t, tk[0].Leave(ctx), "a second Leave does nothing")
			require.Equal(t, tk[3].ID(), tk[1].Leave(ctx), "the one who left before is skipped")
			require.Empty(t, tk[3].Leave(ctx), "the last one leaves: nobody is the head")
		})
		t.Run(name+"/StandAside", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 10)
			ctx := context.Background()
			var tk []Ticket
			for range 4 {
				x, err := q.Join(ctx, "lic", 0, "")
				require.NoError(t, err)
				tk = append(tk, x)
			}
			turns := func() (out []bool) {
				for _, x := range tk {
					p, err := x.Position(ctx)
					if err == nil {
						out = append(out, p.Turn)
					}
				}
				return out
			}
			require.Equal(t, []bool{true, false, false, false}, turns(), "the head's turn alone")
			next, err := tk[0].StandAside(ctx, true)
			require.NoError(t, err)
			require.Equal(t, tk[1].ID(), next, "the head stands aside: the next one's turn too")
			next, err = tk[1].StandAside(ctx, true)
			require.NoError(t, err)
			require.Equal(t, tk[2].ID(), next)
			require.Equal(t, []bool{true, true, true, false}, turns(), "up to the first not standing aside")
			p, err := tk[2].Position(ctx)
			require.NoError(t, err)
			require.Equal(t, Place{Position: 3, Length: 4, Turn: true}, p, "its place is kept")

			next, err = tk[0].StandAside(ctx, false)
			require.NoError(t, err)
			require.Empty(t, next)
			require.Equal(t, []bool{true, false, false, false}, turns(), "the head stands back: its turn alone")
			next, err = tk[3].StandAside(ctx, true)
			require.NoError(t, err)
			require.Empty(t, next, "not its turn: nobody's turn begins")
			next, err = tk[0].StandAside(ctx, true)
			require.NoError(t, err)
			require.Equal(t, tk[1].ID(), next)
			require.Equal(t, []bool{true, true, true, false}, turns(), "tk[1] still stands aside, tk[2] does not")

			require.Equal(t, tk[3].ID(), tk[2].Leave(ctx), "the first not standing aside leaves: the one in its place")
			require.Empty(t, tk[1].Leave(ctx), "one standing aside leaves: nobody's turn begins")
			tk = []Ticket{tk[0], tk[3]}
			require.Equal(t, []bool{true, true}, turns())
			// A resumed place does not stand aside (its stream has not tried).
			again, err := q.Join(ctx, "lic", 0, tk[0].ID())
			require.NoError(t, err)
			tk[0] = again
			require.Equal(t, []bool{true, false}, turns())
			require.Equal(t, tk[1].ID(), again.Leave(ctx), "a head that did not stand aside leaves: the next one's turn")
			_, err = again.StandAside(ctx, true)
			require.Error(t, err, "a ticket that left cannot stand aside")
		})
		t.Run(name+"/Priority", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 20)
			ctx := context.Background()
			// Joins one after another at these levels: the queue's order is
			// by level, highest first, then by join.
			levels := []int{0, 5, 0, 10, 5, -3, 0, 1000, -1000}
			var tk []Ticket
			for _, lv := range levels {
				x, err := q.Join(ctx, "lic", lv, "")
				require.NoError(t, err)
				tk = append(tk, x)
			}
			order := func() []int { // join indexes by position
				out := make([]int, len(tk))
				for i, x := range tk {
					p, err := x.Position(ctx)
					require.NoError(t, err)
					require.Equal(t, len(tk), p.Length)
					out[p.Position-1] = i
				}
				return out
			}
			require.Equal(t, []int{7, 3, 1, 4, 0, 2, 6, 5, 8}, order())
			n, err := q.Length(ctx, "lic")
			require.NoError(t, err)
			require.Equal(t, len(levels), n)

			// A waiter never stands behind one that joined later at its
			// level: another 5 and another 0 join behind their levels.
			for _, lv := range []int{5, 0} {
				x, err := q.Join(ctx, "lic", lv, "")
				require.NoError(t, err)
				tk = append(tk, x)
			}
			require.Equal(t, []int{7, 3, 1, 4, 9, 0, 2, 6, 10, 5, 8}, order())

			// The head alone has the turn; leaving, it names the next in
			// the queue's order, across levels.
			p, err := tk[7].Position(ctx)
			require.NoError(t, err)
			require.True(t, p.Turn)
			p, err = tk[3].Position(ctx)
			require.NoError(t, err)
			require.False(t, p.Turn, "second in line")
			require.Equal(t, tk[3].ID(), tk[7].Leave(ctx))
			require.Equal(t, tk[1].ID(), tk[3].Leave(ctx), "the 10 leaves: the first 5")
			require.Empty(t, tk[4].Leave(ctx), "not its turn")
			require.Empty(t, tk[9].Leave(ctx), "not its turn")
			require.Equal(t, tk[0].ID(), tk[1].Leave(ctx), "the last 5 leaves: the first 0")
			tk = []Ticket{tk[0], tk[2], tk[5], tk[6], tk[8], tk[10]}
			require.Equal(t, []int{0, 1, 3, 5, 2, 4}, order())
		})
		t.Run(name+"/PriorityStandAside", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 10)
			ctx := context.Background()
			join := func(level int) Ticket {
				x, err := q.Join(ctx, "lic", level, "")
				require.NoError(t, err)
				return x
			}
			low := join(0)
			high := join(3)
			turn := func(x Ticket) bool {
				p, err := x.Position(ctx)
				require.NoError(t, err)
				return p.Turn
			}
			require.True(t, turn(high))
			require.False(t, turn(low), "the higher level is ahead")
			next, err := high.StandAside(ctx, true)
			require.NoError(t, err)
			require.Equal(t, low.ID(), next, "the head (level 3) stands aside: the level-0 waiter's turn")
			require.True(t, turn(low))
			// A waiter of a higher level joins ahead: the turn is its, and
			// the level-0 waiter's ends (behind one not standing aside).
			higher := join(7)
			require.True(t, turn(higher))
			require.False(t, turn(high), "standing aside, behind one that does not")
			require.False(t, turn(low))
			next, err = higher.StandAside(ctx, true)
			require.NoError(t, err)
			require.Equal(t, high.ID(), next)
			require.True(t, turn(low), "every waiter ahead stands aside, across levels")
			// Another level-3 waiter joins behind high, ahead of low: it
			// does not stand aside, so low's turn ends.
			mid := join(3)
			require.True(t, turn(mid))
			require.False(t, turn(low))
			require.Equal(t, low.ID(), mid.Leave(ctx), "the first not standing aside leaves: the one now in its place")
			require.Empty(t, high.Leave(ctx), "one standing aside leaves: nobody's turn begins")
			p, err := low.Position(ctx)
			require.NoError(t, err)
			require.Equal(t, Place{Position: 2, Length: 2, Turn: true}, p)
			_, err = higher.StandAside(ctx, false)
			require.NoError(t, err)
			require.False(t, turn(low), "the head stands back")
		})
		t.Run(name+"/PriorityResume", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 3)
			ctx := context.Background()
			a, err := q.Join(ctx, "lic", 2, "")
			require.NoError(t, err)
			b, err := q.Join(ctx, "lic", 2, "")
			require.NoError(t, err)
			c, err := q.Join(ctx, "lic", 0, "")
			require.NoError(t, err)
			// b's stream ends; it waits again with its ticket, its level
			// now 0 (the policy changed): it keeps its place and level 2,
			// even with the queue full.
			again, err := q.Join(ctx, "lic", 0, b.ID())
			require.NoError(t, err)
			pos, n, err := positionOf(ctx, again)
			require.NoError(t, err)
			require.Equal(t, [2]int{2, 3}, [2]int{pos, n})
			a.Leave(ctx)
			d, err := q.Join(ctx, "lic", 2, "")
			require.NoError(t, err)
			for want, x := range []Ticket{again, d, c} {
				pos, _, err := positionOf(ctx, x)
				require.NoError(t, err)
				require.Equal(t, want+1, pos, "the resumed place is still of level 2, ahead of the later 2")
			}
		})
		t.Run(name+"/PriorityLevelBounded", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 3)
			ctx := context.Background()
			for _, lv := range []int{server.MinPriorityLevel - 1, server.MaxPriorityLevel + 1} {
				_, err := q.Join(ctx, "lic", lv, "")
				require.ErrorContains(t, err, "out of range", "level %d", lv)
			}
			n, err := q.Length(ctx, "lic")
			require.NoError(t, err)
			require.Zero(t, n, "a refused join joins nobody")
		})
		t.Run(name+"/Bounded", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 2)
			ctx := context.Background()
			a, err := q.Join(ctx, "lic", 0, "")
			require.NoError(t, err)
			_, err = q.Join(ctx, "lic", 0, "")
			require.NoError(t, err)
			_, err = q.Join(ctx, "lic", 0, "")
			require.ErrorIs(t, err, ErrFull)
			_, err = q.Join(ctx, "other", 0, "")
			require.NoError(t, err, "queues are per license")
			a.Leave(ctx)
			_, err = q.Join(ctx, "lic", 0, "")
			require.NoError(t, err, "a place frees when a waiter leaves")
		})
		t.Run(name+"/Resume", func(t *testing.T) {
			t.Parallel()
			q := newQueue(t, 3)
			ctx := context.Background()
			var tickets []Ticket
			for range 3 {
				tk, err := q.Join(ctx, "lic", 0, "")
				require.NoError(t, err)
				tickets = append(tickets, tk)
			}
			// The first waiter's stream ended without Leave (its server shut
			// down); it waits again with its ticket and keeps its place,
			// even though the queue is full.
			again, err := q.Join(ctx, "lic", 0, tickets[0].ID())
			require.NoError(t, err, "a resumed place is not a new one: no ErrFull")
			require.NotEqual(t, tickets[0].ID(), again.ID(), "the place moves to a new ticket")
			pos, n, err := positionOf(ctx, again)
			require.NoError(t, err)
			require.Equal(t, [2]int{1, 3}, [2]int{pos, n}, "first again")
			pos, _, err = positionOf(ctx, tickets[1])
			require.NoError(t, err)
			require.Equal(t, 2, pos, "the others stay behind it")
			// The old ticket (a stream its client gave up on) lost the place;
			// its Leave takes nothing from the new one.
			_, _, err = positionOf(ctx, tickets[0])
			require.Error(t, err, "the old ticket has no place any more")
			tickets[0].Leave(ctx)
			pos, _, err = positionOf(ctx, again)
			require.NoError(t, err)
			require.Equal(t, 1, pos, "the old ticket's Leave does not touch the new one")

			// A ticket of another license, or one that left, gives no place.
			_, err = q.Join(ctx, "other", 0, tickets[1].ID())
			require.NoError(t, err)
			pos, n, err = positionOf(ctx, tickets[1])
			require.NoError(t, err)
			require.Equal(t, [2]int{2, 3}, [2]int{pos, n}, "resuming into another queue moves nobody")
			again.Leave(ctx)
			fresh, err := q.Join(ctx, "lic", 0, again.ID())
			require.NoError(t, err)
			pos, n, err = positionOf(ctx, fresh)
			require.NoError(t, err)
			require.Equal(t, [2]int{3, 3}, [2]int{pos, n}, "at the back")
		})
	}
}

func TestRedisDropsDeadWaiters(t *testing.T) {
	t.Parallel()
	q := redisQueue(t, 10, 300*time.Millisecond)
	ctx := context.Background()
	dead, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)
	alive, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)
	pos, _, err := positionOf(ctx, alive)
	require.NoError(t, err)
	require.Equal(t, 2, pos)
	_ = dead // its instance died: it never asks again
	require.Eventually(t, func() bool {
		pos, _, err := positionOf(ctx, alive)
		return err == nil && pos == 1
	}, 3*time.Second, 50*time.Millisecond)
	n, err := q.Length(ctx, "lic")
	require.NoError(t, err)
	require.Equal(t, 1, n, "Length does not count the dead waiter")
}

func TestRedisResumeOnlyWhileTheTicketLives(t *testing.T) {
	t.Parallel()
	q := redisQueue(t, 10, 300*time.Millisecond)
	ctx := context.Background()
	first, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)
	second, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)

	// first's server went away; its client is back within the liveness.
	again, err := q.Join(ctx, "lic", 0, first.ID())
	require.NoError(t, err)
	pos, _, err := positionOf(ctx, again)
	require.NoError(t, err)
	require.Equal(t, 1, pos)

	// Now it stays away past the liveness while second keeps asking.
	require.Eventually(t, func() bool {
		pos, _, err := positionOf(ctx, second)
		return err == nil && pos == 1
	}, 3*time.Second, 50*time.Millisecond)
	late, err := q.Join(ctx, "lic", 0, again.ID())
	require.NoError(t, err)
	pos, n, err := positionOf(ctx, late)
	require.NoError(t, err)
	require.Equal(t, [2]int{2, 2}, [2]int{pos, n})
}

// redisKeysOf lists, by test name, the Redis keys under a test's prefix.
var redisKeysOf sync.Map // test name -> func() []string

// TestRedisLeavesNoKeyBehind: once its last waiter leaves (or dies), a
// queue leaves no key in Redis: queues are named by whatever key a caller
// sends, so nothing of theirs may outlive them.
func TestRedisLeavesNoKeyBehind(t *testing.T) {
	q := redisQueue(t, 10, 300*time.Millisecond)
	v, _ := redisKeysOf.Load(t.Name())
	keys := v.(func() []string)
	ctx := context.Background()
	a, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)
	b, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)
	_, err = b.StandAside(ctx, true)
	require.NoError(t, err)
	require.NotEmpty(t, keys())
	a.Leave(ctx)
	b.Leave(ctx)
	require.Empty(t, keys(), "keys left after the last waiter left")

	dead, err := q.Join(ctx, "lic", 0, "")
	require.NoError(t, err)
	_, err = dead.StandAside(ctx, true)
	require.NoError(t, err)
	// It never asks again.
	require.Eventually(t, func() bool {
		probe, err := q.Join(ctx, "lic", 0, "")
		if err != nil {
			return false
		}
		pos, _, _ := positionOf(ctx, probe)
		probe.Leave(ctx)
		return pos == 1 && len(keys()) == 0
	}, 3*time.Second, 50*time.Millisecond, "the dead waiter is dropped and the queue's keys with it")
	for _, k := range keys() {
		require.NotContains(t, k, "alive:", "no liveness key per waiter")
	}
}

// TestRedisScriptsTouchOnlyDeclaredKeys: every key the queue scripts use
// is one of the KEYS they are given (a Redis Cluster routes by them).
func TestRedisScriptsTouchOnlyDeclaredKeys(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{"common": commonLua, "join": joinLua, "position": positionLua, "aside": asideLua, "leave": leaveLua, "length": lengthLua} {
		require.NotContains(t, body, "KEYS[3] ..", "%s.lua builds key names", name)
		require.NotContains(t, body, "'PX'", "%s.lua sets a TTL", name)
	}
}

// TestQueuesMatchAList: the queues' places and turns (the memory queue's
// counted in two Fenwick trees over slots it compacts, a pair per level,
// the Redis queue's in sorted sets) are those of a plain list of the
// waiters, through random joins at random priority levels (each inserted
// behind the last waiter of its level or a higher one), resumes, waiters
// standing aside and back, and leaves from anywhere; StandAside and Leave
// name the waiter whose turn they make it.
func TestQueuesMatchAList(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		q     Queue
		steps int
	}{
		"memory": {NewMemory(300), 20000},
		"redis":  {redisQueue(t, 300, time.Hour), 3000},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			matchAList(t, c.q, c.steps)
		})
	}
}

func matchAList(t *testing.T, q Queue, steps int) {
	ctx := context.Background()
	rnd := rand.New(rand.NewPCG(1, 2))
	type waiter struct {
		t     Ticket
		level int
		aside bool
	}
	var list []waiter // the waiters, in order
	turn := func(i int) bool {
		for _, w := range list[:i] {
			if !w.aside {
				return false
			}
		}
		return true
	}
	idAt := func(i int) string {
		if i < len(list) {
			return list[i].t.ID()
		}
		return ""
	}
	for step := range steps {
		switch r := rnd.IntN(10); {
		case r < 4 || len(list) == 0:
			level := 0 // most waiters have no priority
			if rnd.IntN(3) == 0 {
				level = rnd.IntN(5) - 2
			}
			x, err := q.Join(ctx, "lic", level, "")
			if len(list) == 300 {
				require.ErrorIs(t, err, ErrFull)
				continue
			}
			require.NoError(t, err)
			at := len(list)
			for at > 0 && list[at-1].level < level {
				at--
			}
			list = slices.Insert(list, at, waiter{t: x, level: level})
		case r < 5:
			i := rnd.IntN(len(list))
			x, err := q.Join(ctx, "lic", rnd.IntN(5)-2, list[i].t.ID())
			require.NoError(t, err)
			// A resumed place keeps its level, and does not stand aside.
			list[i] = waiter{t: x, level: list[i].level}
		case r < 7:
			i := rnd.IntN(min(len(list), 8)) // near the head, where turns are
			aside := rnd.IntN(3) > 0
			next, err := list[i].t.StandAside(ctx, aside)
			require.NoError(t, err)
			list[i].aside = aside
			want := ""
			if aside && turn(i) {
				want = idAt(i + 1)
			}
			require.Equal(t, want, next, "step %d: standing aside at %d", step, i+1)
		default:
			i := rnd.IntN(len(list))
			if rnd.IntN(2) == 0 {
				i = 0 // drains from the head are the common case
			}
			passes := turn(i) && !list[i].aside
			next := list[i].t.Leave(ctx)
			list = append(list[:i:i], list[i+1:]...)
			want := ""
			if passes {
				want = idAt(i)
			}
			require.Equal(t, want, next, "step %d: leaving from %d", step, i+1)
		}
		n, err := q.Length(ctx, "lic")
		require.NoError(t, err)
		require.Equal(t, len(list), n, "step %d", step)
		if step%97 == 0 {
			for i, w := range list {
				p, err := w.t.Position(ctx)
				require.NoError(t, err)
				require.Equal(t, Place{Position: i + 1, Length: len(list), Turn: turn(i)}, p, "step %d", step)
			}
		}
	}
}
