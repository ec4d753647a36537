// Package connect retries reaching a server at start-up.
package connect

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Retry calls ping with exponential backoff until it succeeds or timeout
// passes, and returns ping's last error.
func Retry(ctx context.Context, timeout time.Duration, ping func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 100 * time.Millisecond
	b.MaxInterval = 2 * time.Second
	var last error
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		defer pcancel()
		last = ping(pctx)
		return struct{}{}, last
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(timeout))
	if err != nil && last != nil {
		return last
	}
	return err
}
