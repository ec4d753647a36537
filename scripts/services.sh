#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis that the distributed-mode tests use are
# up. Starts them when they are installed but stopped; when one is missing it
# says exactly what to install (or installs it with --install, as CI does).
# Never lets a test that needs a server pass by skipping.
#
# Addresses: SEATD_TEST_POSTGRES_URL / SEATD_TEST_REDIS_URL, by default
# postgres://postgres@127.0.0.1:5432/postgres and redis://127.0.0.1:6379/0.
set -euo pipefail

if [[ -n "${SEATD_TEST_POSTGRES_URL:-}" && -n "${SEATD_TEST_REDIS_URL:-}" ]]; then
  echo "services: using SEATD_TEST_POSTGRES_URL and SEATD_TEST_REDIS_URL as given"
  exit 0
fi

install=false
[[ "${1:-}" == "--install" ]] && install=true

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { [[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" == "PONG" ]]; }

wait_for() { # name, check
  for _ in $(seq 1 60); do "$2" && return 0; sleep 0.5; done
  echo "services: $1 did not come up within 30 s" >&2
  return 1
}

missing=()
if ! command -v pg_ctlcluster >/dev/null || ! command -v pg_isready >/dev/null; then
  missing+=(postgresql)
fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  missing+=(redis-server)
fi
# Not a service: the leader's test starts its own PgBouncer in front of
# the PostgreSQL above (server/leader/pgbouncer_test.go).
if ! command -v pgbouncer >/dev/null && [[ ! -x /usr/sbin/pgbouncer ]]; then
  missing+=(pgbouncer)
fi
if ((${#missing[@]})); then
  if $install; then
    echo "services: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck source=scripts/apt.sh
    . "$(dirname "$0")/apt.sh"
    apt_get update -qq && apt_get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "services: ${missing[*]} not installed. Install with:" >&2
    echo "    sudo apt-get install -y ${missing[*]}" >&2
    echo "or point SEATD_TEST_POSTGRES_URL / SEATD_TEST_REDIS_URL at running servers." >&2
    exit 1
  fi
fi

if ! pg_up; then
  echo "services: starting PostgreSQL"
  cluster=$(ls /etc/postgresql | sort -V | tail -1)
  pg_ctlcluster --skip-systemctl-redirect "$cluster" main start
  wait_for PostgreSQL pg_up
fi
# Trust auth on loopback is what the test URLs assume; say so if it is not.
if ! psql -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then
  echo "services: PostgreSQL is up but 'psql -h 127.0.0.1 -U postgres' fails; set SEATD_TEST_POSTGRES_URL to a URL with credentials" >&2
  exit 1
fi

if ! redis_up; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis redis_up
fi
echo "services: PostgreSQL and Redis are up"
