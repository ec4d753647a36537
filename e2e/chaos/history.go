// Package chaos holds the history and the checker of seatd's fault
// campaign (e2e TestChaos, `make chaos`): clients record every operation
// with its invocation and completion times and its answer, and Check
// proves from that history and the final records that the invariants held
// (the approach of Jepsen's and porcupine's checkers, for seatd's
// properties). It knows nothing of gRPC or of the servers: the driver turns
// answers into Ops.
package chaos

import (
	"sort"
	"sync"
	"time"
)

// Kind is what an operation did.
type Kind string

const (
	Acquire   Kind = "acquire"
	Wait      Kind = "wait" // WaitForSeat, which ends like an acquire
	Heartbeat Kind = "heartbeat"
	Release   Kind = "release"
	Revoke    Kind = "revoke" // by an admin (the nemesis)
)

// Outcome is how an operation ended, as its caller saw it.
type Outcome int

const (
	// OK: the server answered success.
	OK Outcome = iota
	// Failed: the server answered a definite refusal (Reason says which);
	// nothing changed.
	Failed
	// Unknown: no answer (timeout, connection lost, UNAVAILABLE): the
	// operation may or may not have taken effect.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// The reasons that tell a caller a lease ended.
const (
	ReasonExpired  = "LEASE_EXPIRED"
	ReasonReleased = "LEASE_RELEASED"
	ReasonRevoked  = "LEASE_REVOKED"
)

// Op is one operation of the history.
type Op struct {
	Client     int
	Kind       Kind
	License    string
	Lease      string // the lease granted (acquire, wait) or acted on
	Start, End time.Time
	Outcome    Outcome
	Reason     string    // the ErrorInfo reason (or code) of a failure
	Deadline   time.Time // OK acquire, wait, heartbeat: the deadline told
	State      string    // OK release, revoke: the lease state answered
	// Acquire, wait: the feature and version asked ("": the base pool),
	// and with OK the grant that granted the seat ("": the base pool).
	Feature, Version, Grant string
	// Acquire, wait: the user and hostname the client claimed (a site
	// policy's identities); with a refusal, the "rule" of its ErrorInfo
	// metadata, the index of the policy rule that refused ("" none).
	User, Host, Rule string
}

// Pool is the pool an OK acquire or wait took its seat from: the grant,
// or the license's base pool (its id).
func (op Op) Pool() string {
	if op.Grant != "" {
		return op.Grant
	}
	return op.License
}

// tellsEnded reports whether the answer told its caller the lease ended.
func (op Op) tellsEnded() bool {
	switch {
	case op.Outcome == OK && (op.Kind == Release || op.Kind == Revoke):
		return true
	case op.Outcome == Failed && (op.Kind == Heartbeat || op.Kind == Release || op.Kind == Revoke):
		// A revocation of an ended lease is refused with the reason of its end.
		return op.Reason == ReasonExpired || op.Reason == ReasonReleased || op.Reason == ReasonRevoked
	}
	return false
}

// History collects operations from many goroutines.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records an operation that has completed.
func (h *History) Add(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns the operations recorded so far, by invocation time.
func (h *History) Ops() []Op {
	h.mu.Lock()
	out := append([]Op(nil), h.ops...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Record is a lease as the record (PostgreSQL) holds it at the end.
type Record struct {
	ID            string
	License       string // the pool: the license's id, or the grant's
	State         string
	EndedAt       time.Time // zero while active
	UsageEvents   int
	CleanupEvents int
	User, Host    string // the identity the lease was granted to
}
