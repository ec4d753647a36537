package waitqueue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
)

// Redis is the queue shared by every instance: per license a sorted set of
// waiters scored by a join sequence, and a sorted set of the times their
// liveness runs out, which Position pushes back. Waiters whose instance
// died stop refreshing and are dropped by the next call. Every key is
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

//go:embed leave.lua
var leaveLua string

//go:embed length.lua
var lengthLua string

var (
	joinScript     = redis.NewScript(commonLua + "\n" + joinLua)
	positionScript = redis.NewScript(commonLua + "\n" + positionLua)
	leaveScript    = redis.NewScript(commonLua + "\n" + leaveLua)
	lengthScript   = redis.NewScript(commonLua + "\n" + lengthLua)
)

type redisTicket struct {
	q    *Redis
	keys []string // waiters zset, sequence counter, alive zset
	id   string
}

func (q *Redis) keysFor(name string) []string {
	tag := "{waitq:" + name + "}"
	return []string{q.prefix + tag + ":waiters", q.prefix + tag + ":seq", q.prefix + tag + ":alive"}
}

func (q *Redis) Join(ctx context.Context, name, resume string) (Ticket, error) {
	t := &redisTicket{q: q, keys: q.keysFor(name), id: server.NewID("w_")}
	res, err := joinScript.Run(ctx, q.rdb, t.keys, t.id, q.maxLength, q.liveness.Milliseconds(), resume).Int64Slice()
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

func (t *redisTicket) Position(ctx context.Context) (int, int, error) {
	res, err := positionScript.Run(ctx, t.q.rdb, t.keys, t.id, t.q.liveness.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("wait queue position: %w", err)
	}
	if len(res) != 2 || res[0] == 0 {
		return 0, 0, errors.New("ticket left the queue")
	}
	return int(res[0]), int(res[1]), nil
}

func (t *redisTicket) Leave(ctx context.Context) string {
	ctx = context.WithoutCancel(ctx) // leave even when the client is gone
	// A failed leave is not retried: the waiter stops asking, and its
	// liveness runs out within seconds.
	head, _ := leaveScript.Run(ctx, t.q.rdb, t.keys, t.id).Text()
	return head
}
