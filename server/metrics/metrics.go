// Package metrics defines seatd's Prometheus metrics. No metric has a
// per-license label: license counts are unbounded, so the top licenses come
// from the admin zombie report instead.
package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatd/seatd/server"
)

// CleanupBuckets are the seed's cleanup duration buckets, in seconds.
var CleanupBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60}

// Metrics holds every seatd collector.
type Metrics struct {
	ZombiesCleaned  prometheus.Counter
	CleanupDuration prometheus.Histogram
	CleanupRuns     *prometheus.CounterVec // result: ok, partial, failed
	CleanupErrors   prometheus.Counter
	CleanupScanned  prometheus.Gauge
	CleanupExpired  prometheus.Gauge
	Leader          prometheus.Gauge
	// LeaderElectionFailing is 1 while this instance cannot reach the
	// leader lock (leader.Health.Failing); LeaderElectionErrors counts the
	// campaigns that could not reach it.
	LeaderElectionFailing prometheus.Gauge
	LeaderElectionErrors  prometheus.Counter
	ActiveSeats           prometheus.Gauge
	Acquisitions          *prometheus.CounterVec // result; AcquireSeat calls and WaitForSeat grants, not a waiter's refused tries
	WaitTries             prometheus.Counter     // a waiter's tries that found no seat free
	Heartbeats            *prometheus.CounterVec // result
	Releases              *prometheus.CounterVec // result
	RecordsPruned         *prometheus.CounterVec // kind; retention
	PruneFailures         *prometheus.CounterVec // kind; retention batches that failed
	Ready                 prometheus.Gauge       // what /readyz says
	// Webhooks (server/webhooks): attempts by result (delivered, retried,
	// failed) and endpoints disabled for failing continuously.
	WebhookAttempts          *prometheus.CounterVec
	WebhookEndpointsDisabled prometheus.Counter

	activeSeats *scrapeGauge
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ZombiesCleaned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_zombies_cleaned_total", Help: "Leases reclaimed by cleanup after their deadline passed.",
		}),
		CleanupDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seatd_cleanup_duration_seconds", Help: "Duration of cleanup passes.", Buckets: CleanupBuckets,
		}),
		CleanupRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_cleanup_runs_total", Help: "Cleanup passes by result (ok, partial, failed).",
		}, []string{"result"}),
		CleanupErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_cleanup_errors_total", Help: "Transient errors met by cleanup; affected leases are retried next pass.",
		}),
		CleanupScanned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_cleanup_last_scanned", Help: "Leases past their deadline looked at by the last cleanup pass.",
		}),
		CleanupExpired: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_cleanup_last_expired", Help: "Leases expired by the last cleanup pass.",
		}),
		Leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_leader", Help: "1 while this instance leads cleanup, else 0.",
		}),
		LeaderElectionFailing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_leader_election_failing", Help: "1 while this instance has not reached the cleanup leader lock for --leader-failing-after tries in a row (PostgreSQL unreachable, or refusing the lock connection): no leader can be elected from here. Distributed mode only.",
		}),
		LeaderElectionErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_leader_election_errors_total", Help: "Tries for the cleanup leader lock that could not reach it (a try that finds another instance leading reached it).",
		}),
		ActiveSeats: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatd_active_seats", Help: "Leases not ended (state active), all licenses, counted from the store at each scrape (CountActiveSeatsAtScrape) and after each cleanup pass.",
		}),
		Acquisitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_acquisitions_total", Help: "AcquireSeat calls by result, and WaitForSeat waits that ended in a grant or a refusal other than no seat free (a waiter's tries that found no seat are seatd_wait_tries_exhausted_total).",
		}, []string{"result"}),
		WaitTries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatd_wait_tries_exhausted_total", Help: "Tries for a seat by the head of a WaitForSeat queue that found none free.",
		}),
		Heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_heartbeats_total", Help: "Heartbeats by result.",
		}, []string{"result"}),
		Releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_releases_total", Help: "ReleaseSeat calls by result.",
		}, []string{"result"}),
		RecordsPruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_records_pruned_total", Help: "History removed by retention, by kind (leases, cleanup_events, seat_events, audit, returned_certificates, webhook_deliveries, webhook_events).",
		}, []string{"kind"}),
		PruneFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatd_retention_failures_total", Help: "Retention batches that failed, by kind (nothing of that batch was removed; retried next pass).",
		}, []string{"kind"}),
	}
	m.Ready = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seatd_ready", Help: "1 while this instance reports ready (gRPC health SERVING, /readyz 200); 0 while starting, draining, or while its store cannot write (/readyz and the log say why).",
	})
	m.WebhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "seatd_webhook_attempts_total", Help: "Webhook delivery attempts by result: delivered, retried (failed, tried again later), failed (its retry window over).",
	}, []string{"result"})
	m.WebhookEndpointsDisabled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "seatd_webhook_endpoints_disabled_total", Help: "Webhook endpoints disabled because every delivery to them failed for --webhook-disable-after.",
	})
	for _, r := range []string{"delivered", "retried", "failed"} {
		m.WebhookAttempts.WithLabelValues(r)
	}
	m.activeSeats = &scrapeGauge{Gauge: m.ActiveSeats}
	reg.MustRegister(m.WebhookAttempts, m.WebhookEndpointsDisabled, m.ZombiesCleaned, m.CleanupDuration, m.CleanupRuns, m.CleanupErrors, m.CleanupScanned,
		m.CleanupExpired, m.Leader, m.LeaderElectionFailing, m.LeaderElectionErrors, m.activeSeats, m.Acquisitions, m.WaitTries, m.Heartbeats, m.Releases,
		m.RecordsPruned, m.PruneFailures, m.Ready)
	return m
}

// ScrapeTimeout bounds a count made for a scrape.
const ScrapeTimeout = 5 * time.Second

// CountActiveSeatsAtScrape makes every scrape of seatd_active_seats count
// first (count sets ActiveSeats, e.g. cleanup.Cleaner.CountActive), so the
// gauge is the store's count at that moment: acquisitions, releases and
// manual cleanups show at once, not after the next scheduled pass.
func (m *Metrics) CountActiveSeatsAtScrape(count func(context.Context)) {
	m.activeSeats.refresh.Store(&count)
}

// scrapeGauge is a gauge refreshed at collection time.
type scrapeGauge struct {
	prometheus.Gauge
	refresh atomic.Pointer[func(context.Context)]
}

func (g *scrapeGauge) Collect(ch chan<- prometheus.Metric) {
	if f := g.refresh.Load(); f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
		(*f)(ctx)
		cancel()
	}
	g.Gauge.Collect(ch)
}

// RegisterBuildInfo exports seatd_build_info{version,revision,goversion},
// always 1: which seatd each instance runs.
func RegisterBuildInfo(reg prometheus.Registerer, version, revision, goVersion string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "seatd_build_info", Help: "Always 1; the labels say which build of seatd this instance runs.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	})
	g.Set(1)
	reg.MustRegister(g)
}

// RegisterBackground exports a store's background counts, read at scrape
// time.
func RegisterBackground(reg prometheus.Registerer, r server.BackgroundReporter) {
	counter := func(name, help string, get func(server.BackgroundStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(get(r.BackgroundStats())) })
	}
	gauge := func(name, help string, get func(server.BackgroundStats) int64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(get(r.BackgroundStats())) })
	}
	reg.MustRegister(
		counter("seatd_heartbeats_flushed_total", "Heartbeat timestamps written behind to durable storage.",
			func(s server.BackgroundStats) int64 { return s.HeartbeatsFlushed }),
		counter("seatd_heartbeat_flush_failures_total", "Write-behind passes that failed; their heartbeats are retried next tick.",
			func(s server.BackgroundStats) int64 { return s.FlushFailures }),
		counter("seatd_live_state_rebuilds_total", "Licenses whose live state in Redis was rebuilt from PostgreSQL after Redis lost it, or to drop a grant that was never recorded (distributed).",
			func(s server.BackgroundStats) int64 { return s.LiveStateRebuilds }),
		counter("seatd_orphans_adopted_total", "Recorded active leases unknown to Redis, handed to cleanup (distributed).",
			func(s server.BackgroundStats) int64 { return s.OrphansAdopted }),
		gauge("seatd_redis_writes_behind", "Licenses whose settings copy into the live state (Redis) was refused, waiting to be retried (distributed).",
			func(s server.BackgroundStats) int64 { return s.SettingsCopiesBehind }),
		counter("seatd_expiry_hints_rederived_total", "Expiry hints found lost by the cleanup leader's reconciliation and re-derived from the live state (distributed).",
			func(s server.BackgroundStats) int64 { return s.HintsRederived }),
		counter("seatd_ended_leases_dropped_total", "Leases whose release or revoke was recorded but that Redis still held (their removal failed, or their instance died first), removed by the cleanup leader (distributed).",
			func(s server.BackgroundStats) int64 { return s.EndedLeasesDropped }),
		gauge("seatd_ended_leases_behind", "Recorded releases and revokes the cleanup leader could not remove from Redis at its last pass, retried at the next (distributed).",
			func(s server.BackgroundStats) int64 { return s.EndedLeasesBehind }),
		gauge("seatd_end_repair_batch", "The recorded ends the cleanup leader removes from Redis per batch, --end-repair-batch (distributed).",
			func(s server.BackgroundStats) int64 { return s.EndRepairBatch }),
		gauge("seatd_lease_cache_entries", "Leases whose fixed fields this instance caches, so that their heartbeats read only Redis (distributed).",
			func(s server.BackgroundStats) int64 { return s.LeaseCacheEntries }),
		gauge("seatd_lease_cache_size", "The most leases this instance caches, --lease-cache-size (distributed).",
			func(s server.BackgroundStats) int64 { return s.LeaseCacheSize }),
		gauge("seatd_data_file_damaged", "1 once this instance met a damaged page of its data file (embedded): it refuses writes and reports not ready until the data dir is restored from a backup.",
			func(s server.BackgroundStats) int64 { return s.DataFileDamaged }),
		counter("seatd_lease_cache_misses_total", "Lease lookups the lease cache could not answer, each a read of PostgreSQL (distributed).",
			func(s server.BackgroundStats) int64 { return s.LeaseCacheMisses }),
	)
}

// Discard returns metrics registered nowhere, for tests.
func Discard() *Metrics { return New(prometheus.NewRegistry()) }

// RegisterTLSExpiry exports seatd_tls_certificate_expiry_timestamp_seconds,
// the not-after of the certificate served now, read at scrape time (the
// files may be replaced while seatd runs).
func RegisterTLSExpiry(reg prometheus.Registerer, notAfter func() time.Time) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seatd_tls_certificate_expiry_timestamp_seconds",
		Help: "When the TLS certificate served on the gRPC and HTTP ports expires (its leaf's not-after, Unix seconds); only with --tls-cert-file.",
	}, func() float64 { return float64(notAfter().Unix()) }))
}

// RegisterLogSuppressed exports seatd_log_lines_suppressed_total: per-call
// failure lines left out of the log by --log-repeat-interval.
func RegisterLogSuppressed(reg prometheus.Registerer, suppressed func() int64) {
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "seatd_log_lines_suppressed_total",
		Help: "Per-call failure log lines left out because one like it was logged within --log-repeat-interval (the next one logged says how many, similar_suppressed).",
	}, func() float64 { return float64(suppressed()) }))
}
