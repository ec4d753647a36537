package embedded

import "github.com/seatd/seatd/server/storetest"

// Faulty is a Store whose commits the conformance suite can make fail.
type Faulty struct{ *Store }

var _ storetest.Faults = Faulty{}

func (f Faulty) Faults() []storetest.Fault { return []storetest.Fault{storetest.FaultRecord} }

func (f Faulty) SetFault(_ storetest.Fault, on bool) { f.commit.failing.Store(on) }

// crash closes the store as a killed process leaves it: no flush of the
// heartbeats written behind, no clean-shutdown mark.
func crash(s *Store) {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.stopped
		s.closeErr = s.db.Close()
	})
}
