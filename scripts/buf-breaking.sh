#!/usr/bin/env bash
# buf breaking (buf.yaml: WIRE_JSON) of the proto/ in the working tree
# against the previous commit's, without the Buf Schema Registry: the older
# proto/ and buf.yaml come out of git into a temporary directory.
#
# BUF_BREAKING_AGAINST names another commit (e.g. the merge base of a
# branch: $(git merge-base origin/main HEAD)); the default is HEAD~1. In a
# shallow clone the script deepens it by one commit first; the repository's
# first commit has nothing to compare with.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
against=${BUF_BREAKING_AGAINST:-HEAD~1}

if ! git rev-parse -q --verify "$against^{commit}" >/dev/null; then
  if [[ $(git rev-parse --is-shallow-repository) == true ]]; then
    git fetch -q --deepen=1 || true
  fi
fi
if ! rev=$(git rev-parse -q --verify "$against^{commit}"); then
  if [[ -z ${BUF_BREAKING_AGAINST:-} && $(git rev-list --count HEAD) == 1 ]]; then
    echo "buf breaking: HEAD is the first commit, nothing to compare with"
    exit 0
  fi
  echo "buf breaking: cannot find commit $against (a shallow clone? git fetch --unshallow)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" buf.yaml proto | tar -x -C "$tmp"
echo "buf breaking against $against ($(git rev-parse --short "$rev"))"
$GO tool -modfile=tools/go.mod buf breaking --against "$tmp"
