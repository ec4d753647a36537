#!/usr/bin/env bash
# The first step of `make test`: checks, in a second or two and before
# anything is built, every program the tests need: Go, PostgreSQL (server,
# psql, initdb/pg_ctl), PgBouncer, Redis (server and redis-cli), promtool, Debian's
# Chromium (the web console's browser tests, e2e/console_*_test.go),
# systemd-analyze and buildah (the install and image tests, deploy/), the
# Python client's packages and what builds and installs its wheel (python3-build,
# -setuptools, -wheel, -venv: client/python/check-deps.sh) and the TypeScript
# client's Node.js >= 20, npm and openssl (the same rule as `make check/node`),
# and what builds and tests the C++ client (CMake, g++, gRPC C++, protobuf,
# OpenSSL's headers, GoogleTest: client/cpp/check-deps.sh).
#
# What is missing is installed when it can be (root and apt-get, as .ci/run
# does); otherwise the script stops listing every missing piece with the
# exact command to run. Running it again when all is there changes nothing.
#
#   scripts/preflight.sh              check; install as root with apt-get
#   scripts/preflight.sh --check      check only, never install
#   scripts/preflight.sh --generate   also what `make verify-generate` needs
#                                     (protoc, grpc_python_plugin)
#   scripts/preflight.sh --docs       also what `make docs` needs (Debian's
#                                     mkdocs and mkdocs-material)
#   scripts/preflight.sh --docs-only  only what `make docs` needs
set -euo pipefail
cd "$(dirname "$0")/.."

may_install=true
generate=false
docs=false
docs_only=false
for a in "$@"; do
  case $a in
    --check) may_install=false ;;
    --generate) generate=true ;;
    --docs) docs=true ;;
    --docs-only) docs=true docs_only=true ;;
    *) echo "usage: scripts/preflight.sh [--check] [--generate] [--docs|--docs-only]" >&2; exit 2 ;;
  esac
done
GO=${GO:-go}
# shellcheck source=scripts/apt.sh
. scripts/apt.sh

apt=()   # Debian packages that would supply what is missing
other=() # what apt-get cannot supply here, each with its own instructions

add_apt() { local p; for p in "$@"; do [[ " ${apt[*]} " == *" $p "* ]] || apt+=("$p"); done; }

node_ok() {
  command -v node >/dev/null && command -v npm >/dev/null &&
    node -e 'process.exit(parseInt(process.versions.node) < 20 ? 1 : 0)' 2>/dev/null
}

# The major version apt-get would install for nodejs, 0 when none.
apt_node_major() {
  command -v apt-cache >/dev/null || { echo 0; return; }
  local v
  v=$(apt-cache policy nodejs 2>/dev/null | awk '/Candidate:/ {print $2}')
  v=${v#*:}
  [[ $v =~ ^[0-9]+ ]] && echo "${BASH_REMATCH[0]}" || echo 0
}

pg_bin_ok() {
  [[ -n "${SEATD_TEST_PG_BIN:-}" && -x "$SEATD_TEST_PG_BIN/initdb" ]] && return 0
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null
}

# The documentation site: Debian's mkdocs and its Material theme (`make docs`).
check_docs() {
  command -v mkdocs >/dev/null || add_apt mkdocs
  [[ -d /usr/share/mkdocs/themes/material ]] || python3 -c 'import material' 2>/dev/null || add_apt mkdocs-material
}

check() {
  apt=() other=()
  if $docs_only; then
    check_docs
    return
  fi
  if ! command -v "$GO" >/dev/null; then
    other+=("Go: install Go 1.21 or newer from https://go.dev/dl (it fetches the go.mod toolchain, $(awk '/^go /{print $2}' go.mod), by itself) and put it on PATH")
  fi
  # The shared servers (scripts/services.sh starts them) and the private
  # clusters of the fault tests (initdb, pg_ctl, redis-server).
  { command -v pg_ctlcluster && command -v pg_isready && command -v psql; } >/dev/null || add_apt postgresql
  pg_bin_ok || add_apt postgresql
  { command -v redis-server && command -v redis-cli; } >/dev/null || add_apt redis-server
  command -v promtool >/dev/null || add_apt prometheus
  # The leader's test through a session-pooling bouncer starts its own
  # (server/leader/pgbouncer_test.go); Debian puts it in /usr/sbin.
  { command -v pgbouncer || [[ -x /usr/sbin/pgbouncer ]]; } >/dev/null || add_apt pgbouncer
  # Headless, driven by chromedp; Debian's package (no browser download).
  { command -v chromium || command -v chromium-browser; } >/dev/null || add_apt chromium
  local py
  if ! py=$(client/python/check-deps.sh 2>&1); then
    local pkgs
    pkgs=$(sed -n 's/^ *sudo apt-get install -y //p' <<<"$py")
    if [[ -n $pkgs ]]; then
      # shellcheck disable=SC2086 # a list of package names
      add_apt $pkgs
    else
      other+=("Python client: $py")
    fi
  fi
  local cpp
  if ! cpp=$(client/cpp/check-deps.sh 2>&1); then
    local cpkgs
    cpkgs=$(sed -n 's/^ *sudo apt-get install -y //p' <<<"$cpp")
    if [[ -n $cpkgs ]]; then
      # shellcheck disable=SC2086 # a list of package names
      add_apt $cpkgs
    else
      other+=("C++ client: $cpp")
    fi
  fi
  command -v openssl >/dev/null || add_apt openssl
  # The README's quickstart, run by e2e/walkthrough_test.go.
  command -v curl >/dev/null || add_apt curl
  command -v jq >/dev/null || add_apt jq
  # The install and image tests (deploy/systemd, deploy/image): systemd-analyze
  # verifies the units, buildah builds and runs the image, whose CA bundle
  # comes from ca-certificates.
  command -v systemd-analyze >/dev/null || add_apt systemd
  command -v buildah >/dev/null || add_apt buildah
  [[ -r /etc/ssl/certs/ca-certificates.crt ]] || add_apt ca-certificates
  if ! node_ok; then
    if (($(apt_node_major) >= 20)); then
      add_apt nodejs
      # NodeSource's nodejs carries npm (and conflicts with Debian's npm).
      command -v npm >/dev/null || [[ $(apt-cache show nodejs 2>/dev/null | grep -c '^Provides:.*\bnpm\b') != 0 ]] || add_apt npm
    else
      other+=("Node.js >= 20 and npm (client/node): install them from https://nodejs.org (or a distribution with nodejs >= 20 and npm)")
    fi
  fi
  if $docs; then
    check_docs
  fi
  if $generate; then
    command -v protoc >/dev/null || add_apt protobuf-compiler
    command -v grpc_python_plugin >/dev/null || add_apt protobuf-compiler-grpc
  fi
}

check
if ((${#apt[@]})) && $may_install && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
  echo "preflight: installing ${apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${apt[@]}" >/dev/null
  check
fi
if ((${#apt[@]} + ${#other[@]})); then
  what="make test"
  $docs_only && what="make docs"
  echo "$what cannot run here yet; nothing was built. Missing:" >&2
  if ((${#apt[@]})); then
    sudo=sudo
    [[ $(id -u) == 0 ]] && sudo=
    echo "  - ${apt[*]}: install with" >&2
    echo "        ${sudo:+$sudo }apt-get install -y ${apt[*]}" >&2
  fi
  for o in "${other[@]}"; do echo "  - $o" >&2; done
  echo "Then run $what again (as root with apt-get, $what installs the packages itself)." >&2
  exit 1
fi
if $docs_only; then
  echo "preflight: mkdocs and mkdocs-material are here"
  exit 0
fi
echo "preflight: Go, PostgreSQL, PgBouncer, Redis, promtool, Chromium, systemd-analyze, buildah, curl, jq, the Python, TypeScript and C++ clients' dependencies are all here"
