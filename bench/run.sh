#!/usr/bin/env bash
# make bench: gRPC throughput and latency of acquire, heartbeat and release at
# BENCH_CONCURRENCY callers against one seatd, embedded and distributed, each
# beside the ceilings measured in the same run on the same machine:
#   grpc ceiling     the same load generator calling grpc.health.v1.Health/Check
#                    on the same server;
#   redis ceiling    (distributed) a gRPC call that runs one no-op script
#                    through the hot path's batching, as a heartbeat does
#                    (seatd --bench-ceiling): the floor of a design with one
#                    Redis round trip per call;
#   storage ceiling  redis-benchmark EVALSHA of a heartbeat-shaped script, and a
#                    one-row INSERT pgbench script (durable commit), both at the
#                    same concurrency.
# The load generator runs on the same cores as the server (2 here): the
# ratios, not the absolute numbers, are what to compare across machines.
# The machine's load drifts (a ceiling measured at the start of a run can be
# 30% off one measured a minute later), so each operation runs in
# BENCH_SLICES slices, each right after a health slice as long, and "vs gRPC"
# is the median over those pairs of the operation's rate over the ceiling's.
# feature-acquire, feature-heartbeat, feature-release: the same operations on
# a feature of a license holding 50 grants of it (issue 26; bench/load's
# featurePool says how they are laid out), measured after the base rows in
# the same run, each beside its base row ("NN% of base"): the ratio of
# their "vs gRPC" ratios (the machine's drift between the two phases cancels).
# policy-acquire, policy-heartbeat: the same on the base pool of a license
# with a site policy of 10 groups x 100 members, reservations and caps
# (issue 27; bench/load's policyPool), each beside its base row as the
# feature rows are.
# rest-ceil, rest-acquire, rest-heartbeat, rest-release (issue 32): the HTTP
# ceiling (GET /healthz: no gRPC, no store) and the same three operations
# through the REST API (JSON over HTTP/1.1 keep-alive, one connection per
# caller), measured right after the base rows and each slice paired with a
# gRPC health slice as they are; each row shows "REST/gRPC", the ratio of
# its "vs gRPC" to its gRPC namesake's, and the summary line the p99s.
# hooks-acquire, hooks-heartbeat, hooks-release (issue 29, BENCH_WEBHOOKS=n):
# the same three operations on the same seatd with n webhook endpoints
# subscribed to every event registered on a receiver on loopback (run by
# bench/load -webhooks n; seatd runs with --webhook-allow-private-addresses),
# measured after the base rows in BENCH_WEBHOOK_ROUNDS rounds, each of a
# slice with the endpoints and one without (ctl-acquire, ...), the order
# alternating (run_hooks); "NN% of ctl" is the median over the rounds of
# the first's ratio to the gRPC ceiling over the second's, the target line
# (within 5%) judges it.
# Knobs: BENCH_WEBHOOKS (0; e.g. 3 adds the webhook rows), BENCH_WEBHOOK_ROUNDS (6), BENCH_REST (1; 0 leaves the REST rows out), BENCH_DURATION (per phase, default 10s), BENCH_SLICES (5), BENCH_CONCURRENCY (64),
# BENCH_MODES ("embedded distributed"), BENCH_FEATURES (1; 0 leaves the feature
# rows out), BENCH_POLICY (1; 0 leaves the policy rows out), BENCH_COVERING (50: how many of the 50 grants cover the request;
# the others are of other features), BENCH_SEATD and BENCH_LOAD (a seatd and a load binary to use
# instead of building this tree's, e.g. for a before/after comparison: with a
# load binary from before issue 26, set BENCH_FEATURES=0; a seatd from before
# it has its feature rows skipped).
set -euo pipefail
cd "$(dirname "$0")/.."

C=${BENCH_CONCURRENCY:-64}
SLICES=${BENCH_SLICES:-5}
D=${BENCH_DURATION:-10s}
MODES=${BENCH_MODES:-embedded distributed} # which storage modes to measure
SECS=${D%s}
FEATURE_OPS=
[[ "${BENCH_FEATURES:-1}" == 0 ]] || FEATURE_OPS=,feature-acquire,feature-heartbeat,feature-release
POLICY_OPS=
[[ "${BENCH_POLICY:-1}" == 0 ]] || POLICY_OPS=,policy-acquire,policy-heartbeat
REST_OPS=
[[ "${BENCH_REST:-1}" == 0 ]] || REST_OPS=,rest-health,rest-acquire,rest-heartbeat,rest-release
HOOKS=${BENCH_WEBHOOKS:-0}
[[ "$HOOKS" =~ ^[0-9]+$ ]] || { echo "bench: BENCH_WEBHOOKS must be a number of endpoints (got '$HOOKS')" >&2; exit 2; }
ROUNDS=${BENCH_WEBHOOK_ROUNDS:-6}
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench: BENCH_WEBHOOK_ROUNDS must be a positive number (got '$ROUNDS')" >&2; exit 2; }
HOOK_ARGS=()
[[ "$HOOKS" == 0 ]] || HOOK_ARGS=(--webhook-allow-private-addresses)
PG_URL=${SEATD_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
REDIS_URL=${SEATD_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
# A schema and key prefix of its own (seatd_bench_PID, seatd-bench-PID:): two runs
# on one machine (helpers sharing PostgreSQL and Redis) do not drop each
# other's.
OP=benchmark-operator-key
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS seatd_bench_$$ CASCADE; DROP TABLE IF EXISTS seatd_bench_insert_$$" >/dev/null 2>&1 || true
  redis-cli -u "$REDIS_URL" --scan --pattern "seatd-bench-$$:*" 2>/dev/null | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

SEATD=${BENCH_SEATD:-bin/seatd}
[[ -n "${BENCH_SEATD:-}" ]] || go build -o bin/seatd ./server/cmd/seatd
LOAD=${BENCH_LOAD:-bin/load}
[[ -n "${BENCH_LOAD:-}" ]] || go build -o bin/load ./bench/load

# start_seatd MODE ARGS... : starts seatd, waits for it, sets ADDR to its gRPC
# address and HTTP_ADDR to its HTTP one.
# The load generator is one client address: the per-address call limit is off.
# The seats quota is off: the base rows' license alone has the default quota's
# million seats, and the feature rows' license comes beside it.
start_seatd() {
  local log="$work/$1.log"; shift
  "$SEATD" --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --operator-key "$OP" \
    --drain-delay 0s --unauthenticated-call-rate 0 --tenant-max-seats 0 "${HOOK_ARGS[@]}" "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do
    if grep -q 'seatd serving' "$log" 2>/dev/null; then
      ADDR=$(grep -o 'grpc=[^ ]*' "$log" | head -1 | cut -d= -f2)
      HTTP_ADDR=$(grep -o ' http=[^ ]*' "$log" | head -1 | cut -d= -f2); return 0
    fi
    sleep 0.1
  done
  echo "bench: seatd did not start:" >&2; cat "$log" >&2; return 1
}

results="$work/results.tsv"
run_load() { # label addr [ops]
  local covering=() rest=()
  [[ -z "$REST_OPS" ]] || rest=(-http "$HTTP_ADDR")
  [[ -z "$FEATURE_OPS" ]] || covering=(-covering "${BENCH_COVERING:-50}")
  "$LOAD" -target "$2" -operator-key "$OP" -c "$C" -d "$D" -slices "$SLICES" -tsv -label "$1" "${covering[@]}" "${rest[@]}" \
    -ops "${3:-health,acquire,heartbeat,release}$REST_OPS$FEATURE_OPS$POLICY_OPS" >>"$results"
}
# run_hooks label addr: acquire, heartbeat and release again on a license of
# their own, each in BENCH_WEBHOOK_ROUNDS rounds of two arms, one with no
# endpoint and one with $HOOKS webhook endpoints registered (bench/load
# -webhooks: registered before the arm's slices, deleted after them), each
# arm a health slice and a slice of the operation, starting 2 s after the
# last registration or deletion, the arms' order alternating; judged by the median over the rounds of the ratio of the two
# arms. Runs minutes apart (the way this was measured first) differed by
# up to 15 % with nothing changed on this kind of machine.
run_hooks() {
  [[ "$HOOKS" != 0 ]] || return 0
  echo "bench: $1 with and without $HOOKS webhook endpoints subscribed to every event, $ROUNDS rounds" >&2
  "$LOAD" -target "$2" -operator-key "$OP" -c "$C" -d "$(( (SECS * ROUNDS + 2) / 3 ))s" -tsv -label "$1" \
    -webhooks "$HOOKS" -webhook-rounds "$ROUNDS" -ops acquire,heartbeat,release >>"$results"
}

if [[ " $MODES " == *" embedded "* ]]; then
  echo "bench: embedded, $C callers, $D per phase" >&2
  start_seatd embedded --data-dir "$work/data"
  run_load embedded "$ADDR"
  run_hooks embedded "$ADDR"
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
fi

distributed=false
# (grep without -q reads all of the help: with pipefail, -q could make
# seatd die of SIGPIPE and the check fail.)
if [[ " $MODES " == *" distributed "* ]] && "$SEATD" -h 2>&1 | grep -- '--postgres-url' >/dev/null &&
  scripts/services.sh >/dev/null; then
  distributed=true
  echo "bench: distributed, $C callers, $D per phase" >&2
  psql "$PG_URL" -qAtc "DROP SCHEMA IF EXISTS seatd_bench_$$ CASCADE; CREATE SCHEMA seatd_bench_$$" >/dev/null
  sep='?'; [[ "$PG_URL" == *\?* ]] && sep='&'
  # The third ceiling: the gRPC call plus one no-op script through the same
  # batching as a heartbeat's (seatd --bench-ceiling; a seatd built before
  # it existed is measured without it).
  ceiling=() ops=health,acquire,heartbeat,release
  if "$SEATD" -h 2>&1 | grep -- '-bench-ceiling' >/dev/null; then
    ceiling=(--bench-ceiling) ops=health,redis-ceiling,acquire,heartbeat,release
  fi
  start_seatd distributed --postgres-url "${PG_URL}${sep}search_path=seatd_bench_$$" \
    --redis-url "$REDIS_URL" --redis-key-prefix seatd-bench-$$: "${ceiling[@]}"
  run_load distributed "$ADDR" "$ops"
  run_hooks distributed "$ADDR"
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
fi

# Storage ceilings at the same concurrency.
redis_rps=0
if redis-cli -u "$REDIS_URL" ping >/dev/null 2>&1; then
  # Shaped like a heartbeat: read the lease, check the deadline, move it.
  sha=$(redis-cli -u "$REDIS_URL" script load "local t = redis.call('TIME'); local now = t[1]*1000 + math.floor(t[2]/1000); local d = redis.call('ZSCORE', KEYS[1], ARGV[1]); redis.call('ZADD', KEYS[1], now + 360000, ARGV[1]); redis.call('HSET', KEYS[2], ARGV[1], now); return now")
  redis_rps=$(redis-benchmark -u "$REDIS_URL" -c "$C" -n 300000 -q \
    evalsha "$sha" 2 "seatd-bench-$$:{l}:deadlines" "seatd-bench-$$:{l}:hb" lease-1 2>/dev/null |
    grep -o '[0-9.]* requests per second' | head -1 | cut -d' ' -f1)
fi
pg_tps=0
if psql "$PG_URL" -qAtc 'select 1' >/dev/null 2>&1; then
  psql "$PG_URL" -qAtc "DROP TABLE IF EXISTS seatd_bench_insert_$$; CREATE TABLE seatd_bench_insert_$$ (id bigserial primary key, license_id text, at timestamptz default now())" >/dev/null
  echo "INSERT INTO seatd_bench_insert_$$ (license_id) VALUES ('lic_bench');" >"$work/insert.sql"
  pg_tps=$(pgbench -n -c "$C" -j 2 -T "$SECS" -f "$work/insert.sql" "$PG_URL" 2>/dev/null |
    grep -o 'tps = [0-9.]*' | head -1 | cut -d' ' -f3 || true)
  pg_tps=${pg_tps:-0}
fi

echo
echo "seatd benchmark: $C concurrent callers, $D per phase, $(nproc) cores ($(uname -m)), load generator on the same machine"
echo
awk -F'\t' -v redis="$redis_rps" -v pg="$pg_tps" -v covering="${BENCH_COVERING:-50}" -v hooks="$HOOKS" -v rounds="$ROUNDS" '
  { rps[$1,$2]=$3; p50[$1,$2]=$4; p99[$1,$2]=$5; err[$1,$2]=$7; pceil[$1,$2]=$8; ratio[$1,$2]=$9; modes[$1]=1 }
  # vs: an operation over the gRPC ceiling (the median of its paired slices)
  function vs(m, o) { return ratio[m,o] > 0 ? ratio[m,o] : rps[m,o]/rps[m,"health"] }
  # row(m, o, st[, key]): key is the measured op when o is only its label
  function row(m, o, st, key) {
    if (key == "") key = o
    printf "%-12s %-17s %10.0f %9.2f %9.2f %7d %11.0f%% %14s\n", m, o, rps[m,key], p50[m,key], p99[m,key], err[m,key], 100*vs(m, key), st
    if (pceil[m,key] > 0) paired = paired sprintf(" %s/%s %.0f", m, o, pceil[m,key])
  }
  END {
    printf "%-12s %-17s %10s %9s %9s %7s %12s %14s\n", "mode", "op", "req/s", "p50 ms", "p99 ms", "errors", "vs gRPC", "vs storage"
    n = split("embedded distributed", order, " ")
    split("acquire heartbeat release", ops, " ")
    for (i = 1; i <= n; i++) {
      m = order[i]; if (!(m in modes)) continue
      ceil = rps[m,"health"]
      printf "%-12s %-17s %10.0f %9.2f %9.2f %7d %12s %14s\n", m, "grpc-ceil", ceil, p50[m,"health"], p99[m,"health"], err[m,"health"], "100%", "-"
      if ((m, "redis-ceiling") in rps)
        printf "%-12s %-17s %10.0f %9.2f %9.2f %7d %11.0f%% %14s\n", m, "redis-ceil", rps[m,"redis-ceiling"], p50[m,"redis-ceiling"], p99[m,"redis-ceiling"], err[m,"redis-ceiling"], 100*ratio[m,"redis-ceiling"], "-"
      for (j = 1; j <= 3; j++) {
        o = ops[j]
        st = "-"
        if (o == "heartbeat" && redis > 0) st = sprintf("%.0f%% redis", 100*rps[m,o]/redis)
        if (o == "acquire" && pg > 0) st = sprintf("%.0f%% pg", 100*rps[m,o]/pg)
        row(m, o, st)
      }
      if ((m, "rest-health") in rps) {
        row(m, "rest-ceil", "-", "rest-health")
        rline = ""
        for (j = 1; j <= 3; j++) {
          o = ops[j]; ro = "rest-" o
          if (!((m, ro) in rps)) continue
          rr = vs(m, ro) / vs(m, o)
          pr = p99[m,o] > 0 ? p99[m,ro] / p99[m,o] : 0
          row(m, ro, sprintf("%.2f REST/gRPC", rr))
          want = (o == "heartbeat" ? 0.70 : 0.80)
          rline = rline sprintf(" %s %.2f (>= %.2f: %s), p99 %.2f/%.2f ms = %.1fx (<= 2x: %s);", o, rr, want, (rr >= want ? "met" : "NOT met"), p99[m,ro], p99[m,o], pr, (pr <= 2 ? "met" : "NOT met"))
        }
        if (rline != "") restlines = restlines sprintf("%s REST/gRPC:%s\n", m, rline)
      }
      fline = ""
      for (j = 1; j <= 3; j++) {
        o = ops[j]; fo = "feature-" o
        if (!((m, fo) in rps)) continue
        fr = 100 * vs(m, fo) / vs(m, o)
        row(m, fo, sprintf("%.0f%% of base", fr))
        fline = fline sprintf(" %s %.0f%% (%s)", o, fr, (fr >= 90 ? "met" : "NOT met"))
      }
      hline = ""
      for (j = 1; j <= 3; j++) {
        o = ops[j]; mc = m "+ctl"; mh = m "+hooks"
        if (!((m "+paired", o) in ratio)) continue
        hr = 100 * ratio[m "+paired", o]
        printf "%-12s %-17s %10.0f %9.2f %9.2f %7d %11.0f%% %14s\n", m, "ctl-" o, rps[mc,o], p50[mc,o], p99[mc,o], err[mc,o], 100*vs(mc, o), "no endpoint"
        printf "%-12s %-17s %10.0f %9.2f %9.2f %7d %11.0f%% %14s\n", m, "hooks-" o, rps[mh,o], p50[mh,o], p99[mh,o], err[mh,o], 100*vs(mh, o), sprintf("%.1f%% of ctl", hr)
        hline = hline sprintf(" %s %.1f%% (%s)", o, hr, (hr >= 95 ? "met" : "NOT met"))
      }
      if (hline != "") features = features sprintf("%s with %d webhook endpoints subscribed to every event vs none, the median over %d rounds of slices with and without them (target within 5%%):%s\n", m, hooks, rounds, hline)
      if (fline != "") features = features sprintf("%s feature of a license with 50 grants (%d of them covering) vs the base pool (target >= 90%%):%s\n", m, covering, fline)
      pline = ""
      for (j = 1; j <= 2; j++) {
        o = ops[j]; po = "policy-" o
        if (!((m, po) in rps)) continue
        pr = 100 * vs(m, po) / vs(m, o)
        row(m, po, sprintf("%.0f%% of base", pr))
        pline = pline sprintf(" %s %.0f%% (%s)", o, pr, (pr >= 90 ? "met" : "NOT met"))
      }
      if (pline != "") features = features sprintf("%s license with a site policy (10 groups x 100 members, reservations, caps) vs the base pool (target >= 90%%):%s\n", m, pline)
    }
    if (restlines != "") printf "\nREST vs gRPC (targets: heartbeat >= 0.70, acquire and release >= 0.80 of the gRPC rate; REST p99 <= 2x gRPC p99):\n%s", restlines
    if (features != "") printf "\n%s", features
    if (("distributed", "redis-ceiling") in rps && ratio["distributed","redis-ceiling"] > 0) {
      hb = 100 * ratio["distributed","heartbeat"] / ratio["distributed","redis-ceiling"]
      printf "\ndistributed heartbeat vs redis-ceil (gRPC + one no-op EVALSHA through the same batching): %.0f%% (target >= 90%%: %s), p99 %.2f ms (target <= 10 ms: %s)\n", hb, (hb >= 90 ? "met" : "NOT met"), p99["distributed","heartbeat"], (p99["distributed","heartbeat"] <= 10 ? "met" : "NOT met")
    }
    printf "\nstorage ceilings: redis-benchmark EVALSHA %.0f req/s; pgbench one-row INSERT %.0f tps\n", redis, pg
    if (paired != "") printf "vs gRPC: median over the slices of each operation of its rate over the health slice just before (req/s of those health slices:%s)\n", paired
  }' "$results"
[[ " $MODES " != *" distributed "* ]] || $distributed || echo "(distributed mode not measured: seatd has no --postgres-url yet, or PostgreSQL/Redis are not up)"
