package metrics

import "github.com/seatd/seatd/server"

// Retention counts what retention pruned (retention.Counter).
type Retention struct{ M *Metrics }

func (r Retention) Add(kind server.RecordKind, n int) {
	r.M.RecordsPruned.WithLabelValues(string(kind)).Add(float64(n))
}

func (r Retention) Failed(kind server.RecordKind) {
	r.M.PruneFailures.WithLabelValues(string(kind)).Inc()
}
