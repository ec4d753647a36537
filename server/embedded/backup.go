package embedded

import (
	"io"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole database to w while the
// store keeps serving (bbolt's Tx.WriteTo inside one read transaction)
// and returns the bytes written. Heartbeats written behind are flushed
// first, so that the copy holds the deadlines acknowledged so far.
//
// The copy records the store as open, so a server started from it
// gives active leases the write-behind slack, as after a crash.
//
// A read transaction keeps bbolt from remapping a growing file, which
// stalls writers that need more room: give w a fast destination (a local
// file), not a slow network peer.
func (s *Store) Backup(w io.Writer) (n int64, err error) {
	if err := s.flush(); err != nil {
		s.log.Warn("embedded store: backup: flush heartbeats first failed; the copy may hold older deadlines", "err", err)
	}
	err = s.view(func(tx *bolt.Tx) error {
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}
