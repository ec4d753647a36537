package server

// DefaultZombieTopLimit is how many licenses a zombie report ranks when
// the query leaves TopLimit at zero.
const DefaultZombieTopLimit = 20

// WithDefaults is q as every store answers it: TopLimit defaulted, and an
// INVALID error on field "end" for a window that ends before it starts (a
// zero End is open).
func (q ZombieQuery) WithDefaults() (ZombieQuery, error) {
	if !q.End.IsZero() && q.End.Before(q.Start) {
		return ZombieQuery{}, Invalid("end", "end must not be before start")
	}
	if q.TopLimit <= 0 {
		q.TopLimit = DefaultZombieTopLimit
	}
	return q, nil
}
