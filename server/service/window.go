package service

import (
	"time"

	"github.com/seatd/seatd/server"
)

// timeRange is a report's range: end defaults to now and start to span
// before end; start must come before end.
func (s *Service) timeRange(start, end *time.Time, span time.Duration) (time.Time, time.Time, error) {
	e := s.now()
	if end != nil {
		e = *end
	}
	st := e.Add(-span)
	if start != nil {
		st = *start
	}
	if !st.Before(e) {
		return st, e, server.Invalid("start_time", "must be before end_time")
	}
	return st, e, nil
}

// limitOr is a request's count limit: def for 0, else between 1 and max.
func limitOr(n, def, max int, field string) (int, error) {
	if n == 0 {
		return def, nil
	}
	if n < 1 || n > max {
		return def, server.Invalid(field, "must be between 1 and %d", max)
	}
	return n, nil
}
