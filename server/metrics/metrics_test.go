package metrics

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// family is what a test reads of one gathered metric family.
type family struct {
	typ, help string
	labels    []string  // label names over all series
	values    []float64 // counter or gauge value of each series
}

// gather returns the registry's metric families by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]family {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]family{}
	for _, mf := range mfs {
		f := family{typ: mf.GetType().String(), help: mf.GetHelp()}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				f.labels = append(f.labels, l.GetName())
			}
			f.values = append(f.values, m.GetCounter().GetValue()+m.GetGauge().GetValue())
		}
		out[mf.GetName()] = f
	}
	return out
}

func TestNewRegistersEveryMetric(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg)
	// Vectors appear once they have a series.
	m.CleanupRuns.WithLabelValues("ok").Inc()
	m.Acquisitions.WithLabelValues("ok").Inc()
	m.Heartbeats.WithLabelValues("lease_expired").Inc()
	m.Releases.WithLabelValues("ok").Inc()
	m.ZombiesCleaned.Add(3)
	m.Leader.Set(1)

	want := map[string]string{
		"seatd_zombies_cleaned_total":            "COUNTER",
		"seatd_cleanup_duration_seconds":         "HISTOGRAM",
		"seatd_cleanup_runs_total":               "COUNTER",
		"seatd_cleanup_errors_total":             "COUNTER",
		"seatd_cleanup_last_scanned":             "GAUGE",
		"seatd_cleanup_last_expired":             "GAUGE",
		"seatd_leader":                           "GAUGE",
		"seatd_leader_election_failing":          "GAUGE",
		"seatd_leader_election_errors_total":     "COUNTER",
		"seatd_active_seats":                     "GAUGE",
		"seatd_acquisitions_total":               "COUNTER",
		"seatd_wait_tries_exhausted_total":       "COUNTER",
		"seatd_heartbeats_total":                 "COUNTER",
		"seatd_releases_total":                   "COUNTER",
		"seatd_ready":                            "GAUGE",
		"seatd_webhook_attempts_total":           "COUNTER",
		"seatd_webhook_endpoints_disabled_total": "COUNTER",
	}
	got := gather(t, reg)
	require.Len(t, got, len(want))
	for name, typ := range want {
		require.Contains(t, got, name)
		require.Equal(t, typ, got[name].typ, name)
		require.NotEmpty(t, got[name].help, name)
		for _, l := range got[name].labels {
			require.Equal(t, "result", l, "%s: the only label is the result (no per-license label)", name)
		}
	}
	require.Equal(t, []float64{3}, got["seatd_zombies_cleaned_total"].values)
	require.Equal(t, []float64{1}, got["seatd_leader"].values)
	require.Equal(t, []float64{1}, got["seatd_heartbeats_total"].values)
}

func TestCleanupDurationBuckets(t *testing.T) {
	t.Parallel()
	require.Equal(t, []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60}, CleanupBuckets, "the seed's buckets")
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.CleanupDuration.Observe(0.7)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var bounds []float64
	for _, mf := range mfs {
		if mf.GetName() == "seatd_cleanup_duration_seconds" {
			for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	require.Equal(t, CleanupBuckets, bounds, "the histogram uses them")
}

type fakeReporter struct{ flushed atomic.Int64 }

func (f *fakeReporter) BackgroundStats() server.BackgroundStats {
	return server.BackgroundStats{
		HeartbeatsFlushed: f.flushed.Load(), FlushFailures: 2, LiveStateRebuilds: 3, OrphansAdopted: 4, SettingsCopiesBehind: 5,
		HintsRederived: 6, LeaseCacheEntries: 7, LeaseCacheSize: 8, LeaseCacheMisses: 9,
		EndedLeasesDropped: 10, EndedLeasesBehind: 11, EndRepairBatch: 12,
		DataFileDamaged: 1,
	}
}

func TestBackgroundIsReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	r := &fakeReporter{}
	RegisterBackground(reg, r)
	value := func(name string) float64 {
		f, ok := gather(t, reg)[name]
		require.True(t, ok, "no metric %s", name)
		require.Len(t, f.values, 1, name)
		return f.values[0]
	}
	r.flushed.Store(10)
	require.Equal(t, 10.0, value("seatd_heartbeats_flushed_total"))
	r.flushed.Store(11)
	require.Equal(t, 11.0, value("seatd_heartbeats_flushed_total"), "each scrape reads the store anew")
	require.Equal(t, 2.0, value("seatd_heartbeat_flush_failures_total"))
	require.Equal(t, 3.0, value("seatd_live_state_rebuilds_total"))
	require.Equal(t, 4.0, value("seatd_orphans_adopted_total"))
	require.Equal(t, 5.0, value("seatd_redis_writes_behind"))
	require.Equal(t, 6.0, value("seatd_expiry_hints_rederived_total"))
	require.Equal(t, 7.0, value("seatd_lease_cache_entries"))
	require.Equal(t, 8.0, value("seatd_lease_cache_size"))
	require.Equal(t, 9.0, value("seatd_lease_cache_misses_total"))
	require.Equal(t, 1.0, value("seatd_data_file_damaged"))
	require.Equal(t, 10.0, value("seatd_ended_leases_dropped_total"))
	require.Equal(t, 11.0, value("seatd_ended_leases_behind"))
	require.Equal(t, 12.0, value("seatd_end_repair_batch"))
	for _, name := range []string{"seatd_redis_writes_behind", "seatd_lease_cache_entries", "seatd_lease_cache_size",
		"seatd_ended_leases_behind", "seatd_end_repair_batch", "seatd_data_file_damaged"} {
		require.Equal(t, "GAUGE", gather(t, reg)[name].typ, "%s: a level, not a count", name)
	}
	for _, name := range []string{"seatd_heartbeats_flushed_total", "seatd_expiry_hints_rederived_total", "seatd_lease_cache_misses_total",
		"seatd_ended_leases_dropped_total"} {
		require.Equal(t, "COUNTER", gather(t, reg)[name].typ, name)
	}
}

func TestDiscardIsIndependent(t *testing.T) {
	t.Parallel()
	a, b := Discard(), Discard() // would panic if both registered in one registry
	a.Leader.Set(1)
	b.Leader.Set(0)
	require.NotSame(t, a.Leader, b.Leader)
}

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	RegisterBuildInfo(reg, "v1.2.3", "abc123", "go1.26.8")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	require.Equal(t, "seatd_build_info", mfs[0].GetName())
	labels := map[string]string{}
	for _, l := range mfs[0].GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, map[string]string{"version": "v1.2.3", "revision": "abc123", "goversion": "go1.26.8"}, labels)
	require.Equal(t, 1.0, mfs[0].GetMetric()[0].GetGauge().GetValue())
}

func TestActiveSeatsCountedAtEachScrape(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := New(reg)
	var active atomic.Int64
	m.CountActiveSeatsAtScrape(func(ctx context.Context) {
		_, ok := ctx.Deadline()
		require.True(t, ok, "a count for a scrape is bounded in time")
		m.ActiveSeats.Set(float64(active.Load()))
	})
	value := func() float64 {
		f := gather(t, reg)["seatd_active_seats"]
		require.Len(t, f.values, 1)
		return f.values[0]
	}
	active.Store(3)
	require.Equal(t, 3.0, value())
	active.Store(1)
	require.Equal(t, 1.0, value(), "each scrape counts anew, not once per cleanup pass")
}

func TestTLSExpiryIsReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	var at atomic.Int64
	at.Store(1_900_000_000)
	RegisterTLSExpiry(reg, func() time.Time { return time.Unix(at.Load(), 0) })
	f := gather(t, reg)["seatd_tls_certificate_expiry_timestamp_seconds"]
	require.Equal(t, "GAUGE", f.typ)
	require.Equal(t, []float64{1_900_000_000}, f.values)
	at.Store(1_950_000_000) // the files were replaced
	require.Equal(t, []float64{1_950_000_000}, gather(t, reg)["seatd_tls_certificate_expiry_timestamp_seconds"].values)
}
