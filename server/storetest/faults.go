package storetest

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Fault names a part of a backend's storage that a test can make fail, as
// it would if that storage went away.
type Fault string

const (
	// FaultRecord fails the durable record: bbolt commits, PostgreSQL
	// statements.
	FaultRecord Fault = "record"
	// FaultLive fails the live state of a backend that keeps one apart
	// from the record (Redis, in distributed mode).
	FaultLive Fault = "live"
)

// Faults is what every backend's store under test implements (its Opener
// returns a store that does), so that the tests of "transient errors change
// nothing" take their failure path on every backend, not only on those
// that happen to fail by themselves.
type Faults interface {
	// Faults lists the faults the backend can inject.
	Faults() []Fault
	// SetFault makes every call to that part of the storage fail while on.
	SetFault(f Fault, on bool)
}

// faultsOf returns the fault hooks of a store under test.
func faultsOf(t *testing.T, s server.Store) Faults {
	t.Helper()
	f, ok := s.(Faults)
	require.True(t, ok, "the store under test must implement storetest.Faults (%T)", s)
	require.NotEmpty(t, f.Faults())
	require.True(t, slices.Contains(f.Faults(), FaultRecord), "every backend has a record that can fail")
	return f
}

// withFault runs f with the fault on and turns it off again, also when f
// fails the test.
func withFault(t *testing.T, fs Faults, fault Fault, f func()) {
	t.Helper()
	fs.SetFault(fault, true)
	defer fs.SetFault(fault, false)
	f()
}
