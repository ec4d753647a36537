package distributed

import (
	"context"
	"fmt"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// CheckReady asks both servers to answer (a pooled PostgreSQL connection,
// every Redis master): an instance that reaches neither the record nor
// the live state can grant, end or record nothing, so it is not ready
// (server.ReadyChecker). It is a probe, not a write: a PostgreSQL that
// answers but refuses writes (a full disk) still shows as ready, and its
// failed calls as UNAVAILABLE answers.
func (s *Store) CheckReady(ctx context.Context) (reason string, err error) {
	if err := s.rec.Ping(ctx); err != nil {
		return "PostgreSQL unreachable", fmt.Errorf("ping PostgreSQL: %w", err)
	}
	if err := live.Ping(ctx, s.rdb); err != nil {
		return "Redis unreachable", fmt.Errorf("ping Redis: %w", err)
	}
	return "", nil
}

var _ server.ReadyChecker = (*Store)(nil)
