#!/usr/bin/env bash
# make mutate: mutation testing, before a release (slow: not part of make
# test). gremlins (pinned in tools/mutate/go.mod) mutates the Go code of each
# package in MUTATE_PKGS (the stores, cleanup, leader, grpcapi, service and the
# Go client) and runs that package's tests against every mutant
# they cover; then the hand-made mutants of scripts/mutants (Lua scripts, SQL
# guards) run against the tests that must catch them. Prints each package's
# efficacy (killed / (killed + lived); a mutant that makes the tests time out
# counts as killed) and the survivors, which the release notes judge
# (equivalent, or a missing test).
#
# Distributed mode is three packages: server/distributed (the protocol),
# server/distributed/record (PostgreSQL) and server/distributed/live (Redis,
# its Lua scripts are hand-made mutants). Their invariants' tests are those
# of server/distributed, which exercise record and live through the Store,
# so their mutants are not gremlins' (it would test a mutant of record with
# record's small tests only) but the sampler's: each mutant runs against its
# own package's tests and those of server/distributed, and is drawn only if
# those tests run its line. Together they have ~570 mutants at 1-2 min each
# (~10 h): a random sample of MUTATE_SAMPLE of them (default 80, ~1.5 h;
# MUTATE_SEED replays one), or every one with MUTATE_SAMPLE=all.
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLE=${MUTATE_SAMPLE:-80}
PKGS=${MUTATE_PKGS:-server/embedded server/cleanup server/leader server/grpcapi server/service client}
DISTRIBUTED=./server/distributed,./server/distributed/record,./server/distributed/live
WORKERS=${MUTATE_WORKERS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for pkg in $PKGS; do
  echo "== gremlins ./$pkg"
  go tool -modfile=tools/mutate/go.mod gremlins unleash --workers "$WORKERS" --timeout-coefficient 5 \
    --output "$out/$(basename "$pkg").json" "./$pkg" | tee "$out/$(basename "$pkg").log" | grep -E 'LIVED|Killed|Test efficacy'
done
if [ "$SAMPLE" != 0 ]; then
  echo "== gremlins' mutants of $DISTRIBUTED (sample: $SAMPLE), tested by ./server/distributed"
  go run ./scripts/mutants -sample "$SAMPLE" ${MUTATE_SEED:+-seed "$MUTATE_SEED"} \
    -pkg "$DISTRIBUTED" -tests ./server/distributed/ |
    tee "$out/sample.log" | grep -Ev '^KILLED'
fi
echo "== hand-made mutants"
go run ./scripts/mutants || status=$?
echo
echo "== summary"
for pkg in $PKGS; do
  printf '%-22s %s\n' "$pkg" "$(grep -E 'Test efficacy' "$out/$(basename "$pkg").log" | tail -1)"
done
if [ -f "$out/sample.log" ]; then
  printf '%-22s %s\n' "server/distributed/..." "$(grep -E '^estimated efficacy' "$out/sample.log")"
fi
exit $status
