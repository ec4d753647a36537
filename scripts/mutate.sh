#!/usr/bin/env bash
# make mutate: mutation testing, before a release (slow: not part of make
# test). gremlins (pinned in tools/mutate/go.mod) mutates the Go code of each
# package in MUTATE_PKGS and runs that package's tests against every mutant
# they cover; then the hand-made mutants of scripts/mutants (Lua scripts, SQL
# guards) run against the tests that must catch them. Prints each package's
# efficacy (killed / (killed + lived); a mutant that makes the tests time out
# counts as killed) and the survivors, which the release notes judge
# (equivalent, or a missing test).
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=${MUTATE_PKGS:-server/embedded server/cleanup server/leader server/grpcapi server/distributed}
WORKERS=${MUTATE_WORKERS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for pkg in $PKGS; do
  echo "== gremlins ./$pkg"
  go tool -modfile=tools/mutate/go.mod gremlins unleash --workers "$WORKERS" --timeout-coefficient 5 \
    --output "$out/$(basename "$pkg").json" "./$pkg" | tee "$out/$(basename "$pkg").log" | grep -E 'LIVED|Killed|Test efficacy'
done
echo "== hand-made mutants"
go run ./scripts/mutants || status=$?
echo
echo "== summary"
for pkg in $PKGS; do
  printf '%-22s %s\n' "$pkg" "$(grep -E 'Test efficacy' "$out/$(basename "$pkg").log" | tail -1)"
done
exit $status
