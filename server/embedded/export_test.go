package embedded

import "github.com/seatd/seatd/server/storetest"

// Faulty is a Store whose commits the conformance suite can make fail.
type Faulty struct{ *Store }

var _ storetest.Faults = Faulty{}

func (f Faulty) Faults() []storetest.Fault { return []storetest.Fault{storetest.FaultRecord} }

func (f Faulty) SetFault(_ storetest.Fault, on bool) { f.commit.failing.Store(on) }
