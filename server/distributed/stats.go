package distributed

import (
	"context"

	"github.com/seatd/seatd/server"
)

// ActiveLeases counts sessions not yet ended (a partial index covers it).
func (s *Store) ActiveLeases(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE state = 'active'`).Scan(&n); err != nil {
		return 0, server.Unavailable(err)
	}
	return n, nil
}
