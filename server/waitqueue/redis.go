package waitqueue

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// Redis is the queue shared by every instance: per license a sorted set of
// waiters scored by their place, a sorted set of the times their liveness
// runs out, which Position pushes back, and a sorted set of the waiters
// standing aside, scored by place too (a turn is then two counts: ZRANK
// and ZCOUNT). A place is the join sequence less level × 2^42 (join.lua):
// higher levels first, join order within a level, and at level 0 the
// sequence itself, as before priorities (instances of either version
// order one queue alike). Every score is an integer below 2^53 in
// magnitude, exact in a float64, while a queue that never empties takes
// fewer than 2^42 joins. Waiters whose instance died stop refreshing
// and are dropped by the next call. Every key is
// declared to the scripts and hash-tagged per queue (one cluster slot),
// none has a TTL, and the last waiter out removes them.
type Redis struct {
	rdb       redis.Scripter // the queue only runs its scripts
	prefix    string
	maxLength int
	liveness  time.Duration
}

// NewRedis returns a Redis queue. liveness is how long a waiter survives
// without asking for its position (a few poll intervals).
func NewRedis(rdb redis.Scripter, prefix string, maxLength int, liveness time.Duration) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, maxLength: maxLength, liveness: liveness}
}

//go:embed common.lua
var commonLua string

//go:embed join.lua
var joinLua string

//go:embed position.lua
var positionLua string

//go:embed aside.lua
var asideLua string

//go:embed leave.lua
var leaveLua string

//go:embed length.lua
var lengthLua string

var (
	joinScript     = redis.NewScript(commonLua + "\n" + joinLua)
	positionScript = redis.NewScript(commonLua + "\n" + positionLua)
	asideScript    = redis.NewScript(commonLua + "\n" + asideLua)
	leaveScript    = redis.NewScript(commonLua + "\n" + leaveLua)
	lengthScript   = redis.NewScript(commonLua + "\n" + lengthLua)
)

type redisTicket struct {
	q    *Redis
	keys []string // waiters zset, sequence counter, alive zset, aside zset
	id   string
}

func (q *Redis) keysFor(name string) []string {
	tag := "{waitq:" + name + "}"
	return []string{q.prefix + tag + ":waiters", q.prefix + tag + ":seq", q.prefix + tag + ":alive", q.prefix + tag + ":aside"}
}

func (q *Redis) Join(ctx context.Context, name string, level int, resume string) (Ticket, error) {
	if err := checkLevel(level); err != nil {
		return nil, err
	}
	t := &redisTicket{q: q, keys: q.keysFor(name), id: server.NewID("w_")}
	res, err := joinScript.Run(ctx, q.rdb, t.keys, t.id, q.maxLength, q.liveness.Milliseconds(), resume, level).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("join wait queue: %w", err)
	}
	switch {
	case len(res) != 2:
		return nil, fmt.Errorf("join wait queue: unexpected reply %v", res)
	case res[0] < 0:
		return nil, ErrFull
	}
	return t, nil
}

func (t *redisTicket) ID() string { return t.id }

func (q *Redis) Length(ctx context.Context, name string) (int, error) {
	n, err := lengthScript.Run(ctx, q.rdb, q.keysFor(name)).Int()
	if err != nil {
		return 0, fmt.Errorf("wait queue length: %w", err)
	}
	return n, nil
}

func (t *redisTicket) Position(ctx context.Context) (Place, error) {
	res, err := positionScript.Run(ctx, t.q.rdb, t.keys, t.id, t.q.liveness.Milliseconds()).Int64Slice()
	if err != nil {
		return Place{}, fmt.Errorf("wait queue position: %w", err)
	}
	if len(res) != 3 || res[0] == 0 {
		return Place{}, errLeft
	}
	return Place{Position: int(res[0]), Length: int(res[1]), Turn: res[2] == 1}, nil
}

func (t *redisTicket) StandAside(ctx context.Context, aside bool) (string, error) {
	flag := "0"
	if aside {
		flag = "1"
	}
	res, err := asideScript.Run(ctx, t.q.rdb, t.keys, t.id, flag).Slice()
	if err != nil {
		return "", fmt.Errorf("wait queue stand aside: %w", err)
	}
	if len(res) != 2 {
		return "", fmt.Errorf("wait queue stand aside: unexpected reply %v", res)
	}
	if found, _ := res[0].(int64); found == 0 {
		return "", errLeft
	}
	next, _ := res[1].(string)
	return next, nil
}

func (t *redisTicket) Leave(ctx context.Context) string {
	ctx = context.WithoutCancel(ctx) // leave even when the client is gone
	// A failed leave is not retried: the waiter stops asking, and its
	// liveness runs out within seconds.
	head, _ := leaveScript.Run(ctx, t.q.rdb, t.keys, t.id).Text()
	return head
}
