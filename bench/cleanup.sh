#!/usr/bin/env bash
# make bench/cleanup: one zombie-cleanup pass in distributed mode (seatd's
# Cleaner.Pass over the distributed store) beside the seed's algorithm
# (seeds/001: SMEMBERS per license, pipelined TTL per session, SREM and an
# UPDATE per zombie), on the same data shape, same machine, same run
# (server/distributed/cleanup_bench_test.go), then a comparison table.
#
# Needs the PostgreSQL and Redis of the tests (make services, or
# SEATD_TEST_POSTGRES_URL / SEATD_TEST_REDIS_URL); fails if they are down.
#   BENCH_CLEANUP_TIME   iterations per shape (go test -benchtime), default 3x
#   BENCH_CLEANUP_COUNT  runs of everything (go test -count), default 1;
#                        the table shows the median
#   BENCH_CLEANUP_SEED_RECORDS=0  skip the slow baseline variant that also
#                        writes the seed's usage event, cleanup event and
#                        audit entry per zombie (about a minute, run once)
set -euo pipefail
cd "$(dirname "$0")/.."

T=${BENCH_CLEANUP_TIME:-3x}
N=${BENCH_CLEANUP_COUNT:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

bench() { # pattern benchtime count [env...]
  local pattern=$1 time=$2 count=$3; shift 3
  env "$@" go test -run '^$' -bench "$pattern" -benchtime "$time" -count "$count" -timeout 60m \
    ./server/distributed/ | tee -a "$out"
}
bench '^(BenchmarkCleanupPass|BenchmarkSeedBaselinePass)$' "$T" "$N"
if [[ ${BENCH_CLEANUP_SEED_RECORDS:-1} != 0 ]]; then
  bench '^BenchmarkSeedBaselinePass$/^live=100000$/^expired=10000$/^records=seed$' 1x 1 SEATD_BENCH_SEED_RECORDS=1
fi

# The table: medians over the runs of ns/op (one whole Cleaner.Pass, or
# one seed pass) and of pass-ms (seatd's pass proper, Run.Duration, without
# the active-seats gauge query Pass runs after it).
awk -v iters="$T" -v runs="$N" '
function median(list,   a, n, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function ms(ns) { return ns >= 1e9 ? sprintf("%.2f s", ns / 1e9) : sprintf("%.1f ms", ns / 1e6) }
/^Benchmark(CleanupPass|SeedBaselinePass)\// {
  name = $1; sub(/-[0-9]+$/, "", name)
  split(name, p, "/"); kind = p[1]; shape = substr(name, length(kind) + 2)
  for (i = 3; i < NF; i++) {
    if ($(i + 1) == "ns/op") ns[kind, shape] = ns[kind, shape] " " $i
    if ($(i + 1) == "pass-ms") pass[kind, shape] = pass[kind, shape] " " $i
    if ($(i + 1) == "max-ms") mx[kind, shape] = (mx[kind, shape] > $i + 0) ? mx[kind, shape] : $i + 0
  }
}
END {
  seatd = "BenchmarkCleanupPass"; seed = "BenchmarkSeedBaselinePass"
  n = split("live=100000/expired=0|live=100000/expired=0/hints=stale|live=100000/expired=10000", shapes, "|")
  target["live=100000/expired=0"] = 20e6; target["live=100000/expired=0/hints=stale"] = 20e6
  target["live=100000/expired=10000"] = 2e9
  base["live=100000/expired=0"] = "live=100000/expired=0"; base["live=100000/expired=0/hints=stale"] = "live=100000/expired=0"
  base["live=100000/expired=10000"] = "live=100000/expired=10000"
  printf "\ncleanup pass, distributed mode: seatd vs the seed algorithm (-benchtime %s, -count %s, medians)\n\n", iters, runs
  printf "%-34s %11s %11s %9s %11s %10s %11s %9s %5s %5s\n", "shape", "seatd pass", "pass proper", "max", "seed pass",
    "seed/seatd", "seed/proper", "target", "met", ">=20x"
  for (i = 1; i <= n; i++) {
    s = shapes[i]
    if (!((seatd, s) in ns)) continue
    a = median(ns[seatd, s]); pp = ((seatd, s) in pass) ? median(pass[seatd, s]) : 0
    b = ((seed, base[s]) in ns) ? median(ns[seed, base[s]]) : 0
    ratio = b > 0 ? sprintf("%.1fx", b / a) : "-"
    ratio2 = (b > 0 && pp > 0) ? sprintf("%.0fx", b / (pp * 1e6)) : "-"
    met = (a < target[s]) ? "yes" : "NO"
    x20 = b > 0 ? ((b / a >= 20) ? "yes" : "NO") : "-"
    printf "%-34s %11s %11s %9s %11s %10s %11s %9s %5s %5s\n", s, ms(a), ms(pp * 1e6), sprintf("%.0f ms", mx[seatd, s]),
      (b > 0 ? ms(b) : "-"), ratio, ratio2, "< " ms(target[s]), met, x20
  }
  r = "live=100000/expired=10000/records=seed"
  if ((seed, r) in ns && (seatd, "live=100000/expired=10000") in ns) {
    b = median(ns[seed, r]); a = median(ns[seatd, "live=100000/expired=10000"])
    printf "%-34s %11s %11s %9s %11s %10s\n", "  seed also writing its records", "", "", "", ms(b), sprintf("%.1fx", b / a)
  }
  print "\nseatd pass: one Cleaner.Pass, wall clock (reconciliation, DueLeases, ExpireLeases batches, then the"
  print "active-seats gauge query); pass proper: its Run.Duration, without the gauge query. met and >=20x judge"
  print "the seatd pass. hints=stale: every license hint due although nothing expired (all leases renewed"
  print "since the last pass), against the same seed pass. seed also writing its records: per zombie the usage"
  print "event, cleanup event and audit entry seatd writes too (one INSERT each, as the seed does)."
}' "$out"
