#!/usr/bin/env bash
# make bench/queue: what WaitForSeat callers on other licenses cost an
# unrelated license's acquisitions, in distributed mode (the Redis queue).
# The same acquire phase runs twice against one seatd: alone, then with
# BENCH_WAITERS callers queued on each of 3 full licenses. Each phase is
# measured in BENCH_SLICES slices paired with the gRPC health ceiling (as
# make bench does), so the comparison is of acquire/ceiling ratios, which
# the machine's drift moves less than raw rates. Target: under 10 %.
set -euo pipefail
cd "$(dirname "$0")/.."
C=${BENCH_CONCURRENCY:-64}
SLICES=${BENCH_SLICES:-5}
D=${BENCH_DURATION:-10s}
N=${BENCH_WAITERS:-1000}
PG_URL=${SEATD_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
REDIS_URL=${SEATD_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
OP=benchmark-operator-key
work=$(mktemp -d)
pid=
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS seatd_benchq CASCADE" >/dev/null 2>&1 || true
  redis-cli -u "$REDIS_URL" --scan --pattern 'seatd-benchq:*' 2>/dev/null | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
scripts/services.sh >/dev/null
SEATD=${BENCH_SEATD:-bin/seatd} # another build, e.g. for a before/after comparison
[[ -n "${BENCH_SEATD:-}" ]] || go build -o bin/seatd ./server/cmd/seatd
go build -o bin/load ./bench/load

psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS seatd_benchq CASCADE; CREATE SCHEMA seatd_benchq" >/dev/null
sep='?'; [[ "$PG_URL" == *\?* ]] && sep='&'
# Every caller is one client address: the per-address call limit is off.
"$SEATD" --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --operator-key "$OP" --drain-delay 0s \
  --unauthenticated-call-rate 0 \
  --postgres-url "${PG_URL}${sep}search_path=seatd_benchq" --redis-url "$REDIS_URL" \
  --redis-key-prefix seatd-benchq: --wait-queue-max "$N" >"$work/seatd.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do grep -q 'seatd serving' "$work/seatd.log" 2>/dev/null && break; sleep 0.1; done
ADDR=$(grep -o 'grpc=[^ ]*' "$work/seatd.log" | head -1 | cut -d= -f2)

echo "bench/queue: $C callers, $D per phase, $SLICES slices; $N waiters on each of 3 other licenses" >&2
bin/load -target "$ADDR" -operator-key "$OP" -c "$C" -d "$D" -slices "$SLICES" -tsv -label alone -ops acquire >"$work/alone.tsv"
bin/load -target "$ADDR" -operator-key "$OP" -c "$C" -d "$D" -slices "$SLICES" -tsv -label waiters -ops acquire \
  -waiters "$N" -waiter-licenses 3 >"$work/waiters.tsv"

echo
echo "acquire on a license nobody waits for, $(nproc) cores ($(uname -m)), load generator on the same machine"
awk -F'\t' -v n="$N" '
  { rps[$1]=$3; p99[$1]=$5; ratio[$1]=$9 }
  END {
    printf "%-28s %10s %9s %10s\n", "", "req/s", "p99 ms", "vs gRPC"
    printf "%-28s %10.0f %9.2f %9.0f%%\n", "alone", rps["alone"], p99["alone"], 100*ratio["alone"]
    printf "%-28s %10.0f %9.2f %9.0f%%\n", sprintf("3 x %d waiters elsewhere", n), rps["waiters"], p99["waiters"], 100*ratio["waiters"]
    cost = 100 * (1 - ratio["waiters"] / ratio["alone"])
    printf "\ncost of the waiters: %.1f%% of the acquire rate (vs gRPC ratios); target < 10%%: %s\n", cost, (cost < 10 ? "met" : "NOT met")
  }' "$work/alone.tsv" "$work/waiters.tsv"
