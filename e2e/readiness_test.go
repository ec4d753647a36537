package e2e

import (
	"testing"
)

// TestReadinessFollowsTheBackends: a distributed instance whose PostgreSQL
// or Redis is down reports not ready, saying which (gRPC health, /readyz
// 503, seatd_ready 0), and ready again once it is back (issue 24, item 14:
// /readyz stayed ready with PostgreSQL down).
func TestReadinessFollowsTheBackends(t *testing.T) {
	t.Parallel()
	pgc := startPrivatePostgres(t)
	rs := startPrivateRedis(t)
	b := privateBackend(pgc, rs.URL())
	p := b.startSeatd(t, "readiness-"+randomHex(3), "--readiness-interval", "100ms")
	readyz := func(want string) {
		t.Helper()
		waitUntil(t, startTimeout, "/readyz: "+want, func() (bool, string) {
			r := p.do(t, "GET", "/readyz", "", nil)
			return string(r.Raw) == want, string(r.Raw)
		})
	}
	readyz("ready\n")

	pgc.stop("immediate")
	readyz("not ready: PostgreSQL unreachable\n")
	if v, _ := p.metricValue(t, "seatd_ready"); v != 0 {
		t.Fatalf("seatd_ready = %v while not ready", v)
	}
	pgc.start()
	readyz("ready\n")

	rs.kill()
	readyz("not ready: Redis unreachable\n")
	rs.restartEmpty()
	readyz("ready\n")
	if v, _ := p.metricValue(t, "seatd_ready"); v != 1 {
		t.Fatalf("seatd_ready = %v once ready", v)
	}
}
