package client

import (
	"context"
	"errors"
)

// errTryStream ends a stretch of unary heartbeats: time to try a stream again.
var errTryStream = errors.New("time to try the heartbeat stream again")

// unary heartbeats with unary calls, at once and then every interval. With
// beats > 0 it returns errTryStream after that many successes; otherwise it
// runs until a heartbeat fails.
func (k *keeper) unary(ctx context.Context, beats int) (answered bool, err error) {
	for n := 0; ; n++ {
		if n > 0 {
			if err := k.wait(ctx, k.l.pingEvery()); err != nil {
				return answered, err
			}
		}
		if beats > 0 && n == beats {
			return answered, errTryStream
		}
		if err := k.beat(ctx); err != nil {
			return answered, err
		}
		answered = true
	}
}

// beat is one unary heartbeat, given no longer than a normal interval and
// never past the deadline.
func (k *keeper) beat(ctx context.Context) error {
	left := k.l.untilDeadline()
	if left <= 0 {
		return errDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, min(left, k.l.pingEvery()))
	defer cancel()
	return k.l.heartbeat(ctx)
}
