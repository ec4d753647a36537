package service

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatd/seatd/server"
)

// okSeries remembers the "ok" series of a per-result counter, the one
// nearly every call adds to, so that the hot path skips the label lookup
// (hashing the label value, a locked map read). The series appears on
// /metrics when first counted, as before.
type okSeries struct {
	once sync.Once
	c    prometheus.Counter
}

// count adds a call's outcome to vec, whose "ok" series o remembers.
func (o *okSeries) count(vec *prometheus.CounterVec, err error) {
	if err != nil {
		vec.WithLabelValues(resultLabel(err)).Inc()
		return
	}
	o.once.Do(func() { o.c = vec.WithLabelValues("ok") })
	o.c.Inc()
}

// resultLabel is the metrics label for an outcome: "ok" or the error code.
func resultLabel(err error) string {
	if err == nil {
		return "ok"
	}
	return string(server.ErrorCode(err))
}
