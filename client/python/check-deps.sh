#!/usr/bin/env bash
# Says exactly what to install when the Python client's tests cannot run here
# (make test runs this first, so it stops within seconds); .ci/run installs it.
# The tests use Debian's packages, which work only with /usr/bin/python3; they
# run against the client's wheel installed into a venv that sees them.
set -euo pipefail
py=/usr/bin/python3
missing=()
[[ -x $py ]] || missing+=(python3)
if [[ -x $py ]]; then
  $py -c 'import grpc' 2>/dev/null || missing+=(python3-grpcio)
  $py -c 'import google.protobuf' 2>/dev/null || missing+=(python3-protobuf)
  # Lease certificates (Ed25519): seatd.certificate
  $py -c 'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey' 2>/dev/null ||
    missing+=(python3-cryptography)
  # The package: its wheel (python3 -m build --wheel --no-isolation, setuptools
  # and wheel from Debian) installed into a fresh venv for the tests.
  $py -c 'import build' 2>/dev/null || missing+=(python3-build)
  $py -c 'import setuptools' 2>/dev/null || missing+=(python3-setuptools)
  $py -c 'import wheel' 2>/dev/null || missing+=(python3-wheel)
  $py -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
fi
command -v openssl >/dev/null || missing+=(openssl) # the TLS test makes a certificate
if ((${#missing[@]})); then
  echo "client/python: the Python client's tests need ${missing[*]}. Install with:" >&2
  echo "    sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
