package embedded

import "context"

// ActiveLeases counts leases not yet ended, from the in-memory index.
func (s *Store) ActiveLeases(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(s.idx.active), nil
}
