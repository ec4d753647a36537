#!/usr/bin/env bash
# Usage: scripts/verify-generated.sh FRESH
# FRESH mirrors the repository with what `buf generate` just made (every
# `out:` of buf.gen.yaml rebased under it; see `make verify-generate`).
# Fails when a committed generated file differs or is missing, or when a
# directory of generated files holds a committed file buf no longer makes
# (hand-written doc.go files aside), or when anywhere under an `out:` of
# buf.gen.yaml a committed file that looks generated (a "DO NOT EDIT" or
# "@generated" header, or a .pyi stub) is no longer made. Hand-written code
# beside generated code (client/python/seatd) is left alone.
set -euo pipefail
fresh=${1:?usage: $0 FRESH}
bad=0
while IFS= read -r -d '' f; do
  rel=${f#"$fresh"/}
  if [[ ! -f $rel ]]; then
    echo "verify-generate: $rel is not committed (run make generate)"; bad=1
  elif ! cmp -s "$f" "$rel"; then
    echo "verify-generate: $rel differs from what buf generates (run make generate):"
    diff -u "$rel" "$f" | head -20 || true
    bad=1
  fi
done < <(find "$fresh" -type f -print0 | sort -z)
while IFS= read -r -d '' d; do
  rel=${d#"$fresh"/}
  for f in "$rel"/*; do
    [[ -f $f && ! -e $fresh/$f && $(basename "$f") != doc.go ]] || continue
    echo "verify-generate: $f is no longer generated (delete it, or run make generate)"; bad=1
  done
done < <(find "$fresh" -type f -printf '%h\0' | sort -zu)
generated_look() { [[ $1 == *.pyi ]] || head -5 "$1" | grep -qE 'DO NOT EDIT|@generated'; }
for root in $(sed -nE 's/^[[:space:]]*out:[[:space:]]*([^[:space:]#]+).*/\1/p' buf.gen.yaml | sort -u); do
  [[ -d $root ]] || continue
  while IFS= read -r -d '' f; do
    [[ -e $fresh/$f ]] || ! generated_look "$f" || {
      echo "verify-generate: $f looks generated but is no longer made (delete it, or run make generate)"; bad=1
    }
  done < <(find "$root" -type f ! -path '*/node_modules/*' ! -path '*/__pycache__/*' -print0)
done
((bad == 0)) && echo "generated code is up to date ($(find "$fresh" -type f | wc -l) files)"
exit $bad
