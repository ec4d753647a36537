#!/usr/bin/env bash
# make mutate: mutation testing, before a release (slow: not part of make
# test). gremlins (pinned in tools/mutate/go.mod) mutates the Go code of each
# package in MUTATE_PKGS and runs that package's tests against every mutant
# they cover; then the hand-made mutants of scripts/mutants (Lua scripts, SQL
# guards) run against the tests that must catch them. Prints each package's
# efficacy (killed / (killed + lived); a mutant that makes the tests time out
# counts as killed) and the survivors, which the release notes judge
# (equivalent, or a missing test).
#
# server/distributed has ~580 mutants and a minute of tests each (~10 h):
# it gets a random sample of MUTATE_SAMPLE of them (default 80, ~1.5 h;
# MUTATE_SEED replays one), or the full gremlins run with MUTATE_SAMPLE=all.
set -euo pipefail
cd "$(dirname "$0")/.."
SAMPLE=${MUTATE_SAMPLE:-80}
PKGS=${MUTATE_PKGS:-server/embedded server/cleanup server/leader server/grpcapi}
if [ "$SAMPLE" = all ] && [ -z "${MUTATE_PKGS:-}" ]; then
  PKGS="$PKGS server/distributed"
fi
WORKERS=${MUTATE_WORKERS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for pkg in $PKGS; do
  echo "== gremlins ./$pkg"
  go tool -modfile=tools/mutate/go.mod gremlins unleash --workers "$WORKERS" --timeout-coefficient 5 \
    --output "$out/$(basename "$pkg").json" "./$pkg" | tee "$out/$(basename "$pkg").log" | grep -E 'LIVED|Killed|Test efficacy'
done
if [ "$SAMPLE" != all ] && [ "$SAMPLE" != 0 ]; then
  echo "== gremlins sample of ./server/distributed"
  go run ./scripts/mutants -sample "$SAMPLE" ${MUTATE_SEED:+-seed "$MUTATE_SEED"} -pkg ./server/distributed |
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
  printf '%-22s %s\n' "server/distributed" "$(grep -E '^estimated efficacy' "$out/sample.log")"
fi
exit $status
