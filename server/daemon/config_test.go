package daemon

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server/distributed"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/leader"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			require.Equal(t, "127.0.0.1:7070", c.GRPCAddr)
			require.Equal(t, "127.0.0.1:8080", c.HTTPAddr)
			require.Equal(t, "./seatd-data", c.DataDir)
			require.Equal(t, 60*time.Second, c.CleanupInterval)
			require.Equal(t, 500, c.CleanupBatch)
			require.Equal(t, 20, c.CleanupConcurrency)
			require.Equal(t, 50*time.Second, c.CleanupSoftLimit)
			require.Equal(t, 55*time.Second, c.CleanupHardLimit)
			require.Equal(t, 31*24*time.Hour, c.RetainWebhookEvents)
			require.Equal(t, 20, c.TenantMaxWebhookEndpoints)
		}},
		{name: "env fills unset flags", env: map[string]string{"SEATD_GRPC_ADDR": ":9000", "SEATD_CLEANUP_INTERVAL": "5s"},
			check: func(t *testing.T, c Config) {
				require.Equal(t, ":9000", c.GRPCAddr)
				require.Equal(t, 5*time.Second, c.CleanupInterval)
			}},
		{name: "flag beats env", args: []string{"--grpc-addr", ":1"}, env: map[string]string{"SEATD_GRPC_ADDR": ":2"},
			check: func(t *testing.T, c Config) { require.Equal(t, ":1", c.GRPCAddr) }},
		{name: "bad flag value names the flag", args: []string{"--cleanup-interval=abc"}, wantErr: "cleanup-interval"},
		{name: "bad env value names the variable", env: map[string]string{"SEATD_CLEANUP_BATCH": "x"}, wantErr: "SEATD_CLEANUP_BATCH"},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "nope"},
		{name: "stray argument", args: []string{"serve"}, wantErr: `unexpected argument "serve"`},
		// The mode's own flags come first: with one URL of the two, the
		// missing URL is the error, not the operator key.
		{name: "redis url alone", args: []string{"--redis-url=redis://127.0.0.1:6379/0"}, wantErr: "--redis-url needs --postgres-url"},
		{name: "postgres url alone", args: []string{"--postgres-url=postgres://127.0.0.1/x"}, wantErr: "--postgres-url needs --redis-url"},
		{name: "distributed without operator key", args: []string{"--postgres-url=postgres://127.0.0.1/x", "--redis-url=redis://127.0.0.1:6379/0"},
			wantErr: "distributed mode needs --operator-key"},
		{name: "interval too short", args: []string{"--cleanup-interval=10ms"}, wantErr: "--cleanup-interval"},
		{name: "negative retention", args: []string{"--retain-audit=-1h"}, wantErr: "--retain-audit"},
		{name: "webhook retention shorter than an expiring threshold", args: []string{"--retain-webhook-events=100h"}, wantErr: "--retain-webhook-events must be 0 (keep forever) or at least 720h0m0s"},
		{name: "webhook retention shorter than the signal window", args: []string{"--retain-webhook-events=2h", "--webhook-expiring-before=1h", "--webhook-signal-window=3h"}, wantErr: "at least 3h0m0s"},
		{name: "webhook retention of the thresholds", args: []string{"--retain-webhook-events=2h", "--webhook-expiring-before=2h,1h", "--webhook-signal-window=1h"},
			check: func(t *testing.T, c Config) { require.Equal(t, 2*time.Hour, c.RetainWebhookEvents) }},
		{name: "webhook retention off", args: []string{"--retain-webhook-events=0"},
			check: func(t *testing.T, c Config) { require.Zero(t, c.RetainWebhookEvents) }},
		{name: "no webhook endpoints", args: []string{"--tenant-max-webhook-endpoints=0"}, wantErr: "--tenant-max-webhook-endpoints"},
		{name: "retention batch too large", args: []string{"--retention-batch=20000"}, wantErr: "--retention-batch"},
		{name: "retention interval too short", args: []string{"--retention-interval=10ms"}, wantErr: "--retention-interval"},
		{name: "soft above hard", args: []string{"--cleanup-soft-limit=60s", "--cleanup-hard-limit=55s"}, wantErr: "--cleanup-soft-limit"},
		{name: "short operator key", args: []string{"--operator-key=abc"}, wantErr: "--operator-key"},
		{name: "blank operator key", args: []string{"--operator-key=" + strings.Repeat(" ", 20)}, wantErr: "whitespace"},
		{name: "example operator key", args: []string{"--operator-key=a-long-random-secret"}, wantErr: "example"},
		{name: "guessable operator key", args: []string{"--operator-key=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, wantErr: "different characters"},
		{name: "TLS key without cert", args: []string{"--tls-key-file=k.pem"}, wantErr: "--tls-cert-file and --tls-key-file"},
		{name: "client CA without TLS", args: []string{"--tls-client-ca-file=ca.pem"}, wantErr: "--tls-client-ca-file"},
		{name: "tiny request limit", args: []string{"--max-request-bytes=10"}, wantErr: "--max-request-bytes"},
		{name: "no streams", args: []string{"--max-streams=0"}, wantErr: "--max-streams"},
		{name: "bad log level", args: []string{"--log-level=loud"}, wantErr: "--log-level"},
		{name: "wait poll too fast", args: []string{"--wait-poll=1ms"}, wantErr: "--wait-poll"},
		{name: "wait poll too slow for the queue's liveness", args: []string{"--wait-poll=1s"}, wantErr: "--wait-poll"},
		{name: "wait poll", args: []string{"--wait-poll=50ms"}, check: func(t *testing.T, c Config) { require.Equal(t, 50*time.Millisecond, c.WaitPoll) }},
		{name: "limits and quotas by default", check: func(t *testing.T, c Config) {
			failed, calls, quotas := c.apiLimits()
			require.Equal(t, grpcapi.DefaultFailedLookups, failed)
			require.Equal(t, grpcapi.DefaultUnauthenticatedCalls, calls)
			require.Equal(t, grpcapi.DefaultQuotas, quotas)
		}},
		{name: "0 switches a limit or quota off", args: []string{"--failed-lookup-rate=0", "--unauthenticated-call-rate=0", "--tenant-max-licenses=0", "--tenant-max-seats=0", "--tenant-max-api-keys=0", "--tenant-max-signing-keys=0"},
			check: func(t *testing.T, c Config) {
				failed, calls, quotas := c.apiLimits()
				require.Zero(t, failed.PerSecond)
				require.Zero(t, calls.PerSecond)
				require.Equal(t, grpcapi.Quotas{}, quotas)
			}},
		{name: "limits from env", env: map[string]string{"SEATD_FAILED_LOOKUP_RATE": "0.5", "SEATD_FAILED_LOOKUP_BURST": "3", "SEATD_TENANT_MAX_SEATS": "7"},
			check: func(t *testing.T, c Config) {
				failed, _, quotas := c.apiLimits()
				require.Equal(t, grpcapi.RateLimit{PerSecond: 0.5, Burst: 3}, failed)
				require.Equal(t, int64(7), quotas.Seats)
			}},
		{name: "negative rate", args: []string{"--failed-lookup-rate=-1"}, wantErr: "--failed-lookup-rate"},
		{name: "NaN rate", args: []string{"--unauthenticated-call-rate=NaN"}, wantErr: "--unauthenticated-call-rate"},
		{name: "zero burst", args: []string{"--failed-lookup-burst=0"}, wantErr: "--failed-lookup-burst"},
		{name: "negative quota", args: []string{"--tenant-max-api-keys=-1"}, wantErr: "--tenant-max-api-keys"},
		{name: "negative signing keys quota", args: []string{"--tenant-max-signing-keys=-1"}, wantErr: "--tenant-max-signing-keys"},
		{name: "signing keys quota from env", env: map[string]string{"SEATD_TENANT_MAX_SIGNING_KEYS": "4"},
			check: func(t *testing.T, c Config) {
				_, _, quotas := c.apiLimits()
				require.Equal(t, int64(4), quotas.SigningKeys)
			}},
		{name: "lease cache size", args: []string{"--lease-cache-size=5000"}, check: func(t *testing.T, c Config) { require.Equal(t, 5000, c.LeaseCacheSize) }},
		{name: "lease cache size by default", check: func(t *testing.T, c Config) {
			require.Equal(t, distributed.DefaultLeaseCacheSize, c.LeaseCacheSize)
		}},
		{name: "no lease cache", args: []string{"--lease-cache-size=0"}, wantErr: "--lease-cache-size"},
		{name: "end repair batch", args: []string{"--end-repair-batch=50"}, check: func(t *testing.T, c Config) { require.Equal(t, 50, c.EndRepairBatch) }},
		{name: "end repair batch default", check: func(t *testing.T, c Config) {
			require.Equal(t, distributed.DefaultEndRepairBatch, c.EndRepairBatch)
		}},
		{name: "no end repair batch", args: []string{"--end-repair-batch=0"}, wantErr: "--end-repair-batch"},
		{name: "end repair batch from env", env: map[string]string{"SEATD_END_REPAIR_BATCH": "7"},
			check: func(t *testing.T, c Config) { require.Equal(t, 7, c.EndRepairBatch) }},
		{name: "leader election by default", check: func(t *testing.T, c Config) {
			require.Equal(t, leader.DefaultPingTimeout, c.LeaderPingTimeout)
			require.Equal(t, leader.DefaultFailingAfter, c.LeaderFailingAfter)
			require.False(t, c.LeaderFailingUnready, "ready by default while no leader can be elected")
		}},
		{name: "leader election from env", env: map[string]string{"SEATD_LEADER_PING_TIMEOUT": "2s", "SEATD_LEADER_FAILING_AFTER": "5", "SEATD_LEADER_FAILING_UNREADY": "true"},
			check: func(t *testing.T, c Config) {
				require.Equal(t, 2*time.Second, c.LeaderPingTimeout)
				require.Equal(t, 5, c.LeaderFailingAfter)
				require.True(t, c.LeaderFailingUnready)
			}},
		{name: "leader failing after no tries", args: []string{"--leader-failing-after=0"}, wantErr: "--leader-failing-after"},
		{name: "leader ping timeout too short", args: []string{"--leader-ping-timeout=1ms"}, wantErr: "--leader-ping-timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig(tt.args, env(tt.env), io.Discard)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, c)
		})
	}
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "SEATD_GRPC_ADDR", EnvName("grpc-addr"))
	require.Equal(t, "SEATD_CLEANUP_SOFT_LIMIT", EnvName("cleanup-soft-limit"))
}

func TestLoadOperatorKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, generated, err := loadOperatorKey("", dir)
	require.NoError(t, err)
	require.True(t, generated)
	require.NoFileExists(t, filepath.Join(dir, operatorKeyFile), "kept only once the ports are bound")
	require.NoError(t, saveOperatorKey(dir, key))
	again, generated, err := loadOperatorKey("", dir)
	require.NoError(t, err)
	require.False(t, generated, "a kept key is not printed again")
	require.Equal(t, key, again)
	configured, generated, err := loadOperatorKey("configured-key-123456", dir)
	require.NoError(t, err)
	require.False(t, generated)
	require.Equal(t, "configured-key-123456", configured)
}

// TestLoggerThrottlesPerCallFailures: the daemon's logger writes a
// per-call failure line once per --log-repeat-interval (issue 24, item 14:
// each failed call on a full disk logged 2.5 lines), and every line with
// --log-repeat-interval 0.
func TestLoggerThrottlesPerCallFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want int
	}{{nil, 1}, {[]string{"--log-repeat-interval", "0s"}, 50}} {
		cfg, err := ParseConfig(tc.args, func(string) string { return "" }, io.Discard)
		require.NoError(t, err)
		var out bytes.Buffer
		log, throttle := cfg.logger(&out)
		for range 50 {
			log.Error("embedded store: acquire", "err", "write seatd.db: no space left on device")
			log.Warn("request failed", "code", "unavailable")
		}
		require.Equal(t, tc.want, strings.Count(out.String(), "embedded store: acquire"), "%v", tc.args)
		require.Equal(t, tc.want, strings.Count(out.String(), "request failed"), "%v", tc.args)
		require.Equal(t, int64(2*(50-tc.want)), throttle.Suppressed())
	}
	_, err := ParseConfig([]string{"--log-repeat-interval", "-1s"}, func(string) string { return "" }, io.Discard)
	require.ErrorContains(t, err, "--log-repeat-interval")
}
