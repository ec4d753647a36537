# shellcheck shell=bash
# Sourced by scripts/preflight.sh and scripts/services.sh: apt_get runs
# apt-get waiting for another apt-get or dpkg (unattended-upgrades, a second
# `make test`) to let go of its locks, up to APT_LOCK_WAIT seconds (default
# 300), instead of failing at once with "Could not get lock".
# DPkg::Lock::Timeout makes apt-get wait for dpkg's locks; `apt-get update`'s
# lock on the lists and the archives' lock do not honour it, so a run that
# failed on a lock is tried again until the same deadline.
apt_get() {
  local wait=${APT_LOCK_WAIT:-300} err rc
  local deadline=$((SECONDS + wait)) said=false
  err=$(mktemp)
  while :; do
    rc=0
    apt-get -o DPkg::Lock::Timeout="$wait" "$@" 2>"$err" || rc=$?
    if ((rc != 0)) && grep -q 'Could not get lock' "$err" && ((SECONDS < deadline)); then
      $said || echo "apt-get: waiting (up to ${wait}s) for another package manager to finish: $(grep -m1 'Could not get lock' "$err")" >&2
      said=true
      sleep 2
      continue
    fi
    cat "$err" >&2
    rm -f "$err"
    return "$rc"
  done
}
