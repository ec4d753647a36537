#!/usr/bin/env bash
# make bench/scale: SCALE_LEASES leases (default 1,000,000) in one seatd,
# loaded through the gRPC API, then what that size costs beside the targets
# of issue 15, one table per mode (bench/scale/main.go does the measuring;
# README, "Benchmarks at scale", says what each row means).
# Knobs: SCALE_LEASES (1000000), SCALE_MODES ("embedded distributed"),
# SCALE_CONCURRENCY (64 callers), SCALE_DURATION (10s per operation, and as
# long again for its ceiling), SCALE_SLICES (5), SCALE_SEATD (a seatd to use
# instead of building this tree's).
# Needs the PostgreSQL and Redis of the tests (scripts/services.sh) for
# distributed mode; its schema, keys and the data dir are removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${SCALE_LEASES:-1000000}
MODES=${SCALE_MODES:-embedded distributed}
C=${SCALE_CONCURRENCY:-64}
D=${SCALE_DURATION:-10s}
SLICES=${SCALE_SLICES:-5}
PG_URL=${SEATD_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
REDIS_URL=${SEATD_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
SCHEMA=seatd_scale
PREFIX=seatd-scale:
work=$(mktemp -d)
cleanup() {
  if [[ " $MODES " == *" distributed "* ]]; then
    psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
    redis-cli -u "$REDIS_URL" --scan --pattern "$PREFIX*" 2>/dev/null | xargs -r redis-cli -u "$REDIS_URL" unlink >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

SEATD=${SCALE_SEATD:-bin/seatd}
[[ -n "${SCALE_SEATD:-}" ]] || go build -o bin/seatd ./server/cmd/seatd
go build -o bin/scale ./bench/scale

built="seatd of commit $(git rev-parse --short HEAD)"
git diff --quiet HEAD -- server gen migrations 2>/dev/null || built+=" with uncommitted changes"
[[ -z "${SCALE_SEATD:-}" ]] || built=$SCALE_SEATD
echo "bench/scale: $N leases, $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), $built" >&2
status=0
for mode in $MODES; do
  args=(-mode "$mode" -leases "$N" -c "$C" -d "$D" -slices "$SLICES" -seatd "$SEATD" -log "$work/seatd-$mode.log")
  case $mode in
    embedded) args+=(-data-dir "$work/data") ;;
    distributed)
      scripts/services.sh >/dev/null
      psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS $SCHEMA CASCADE; CREATE SCHEMA $SCHEMA" >/dev/null
      redis-cli -u "$REDIS_URL" --scan --pattern "$PREFIX*" | xargs -r redis-cli -u "$REDIS_URL" unlink >/dev/null
      sep='?'; [[ "$PG_URL" == *\?* ]] && sep='&'
      args+=(-postgres-url "${PG_URL}${sep}search_path=$SCHEMA" -redis-url "$REDIS_URL" -redis-key-prefix "$PREFIX") ;;
    *) echo "bench/scale: unknown mode $mode (embedded or distributed)" >&2; exit 2 ;;
  esac
  if ! bin/scale "${args[@]}"; then
    status=1
    echo "bench/scale: $mode failed; the end of seatd's log:" >&2
    tail -20 "$work/seatd-$mode.log" >&2 || true
  fi
done
exit $status
