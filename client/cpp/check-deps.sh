#!/usr/bin/env bash
# Says exactly what to install when the C++ client cannot be built and
# tested here (make test/cpp runs this first, so it stops within seconds;
# scripts/preflight.sh installs what it names). Every dependency is a
# Debian package: gRPC C++ and protobuf (the client), OpenSSL 3 (lease
# certificates, the machine fingerprint), GoogleTest (the tests), CMake.
set -euo pipefail
missing=()
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v pkg-config >/dev/null || missing+=(pkg-config)
have_pc grpc++ || missing+=(libgrpc++-dev)
have_pc protobuf || missing+=(libprotobuf-dev)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
command -v grpc_cpp_plugin >/dev/null || missing+=(protobuf-compiler-grpc)
have_pc openssl || missing+=(libssl-dev)
[[ -r /usr/include/gtest/gtest.h ]] || have_pc gtest || missing+=(libgtest-dev)
if ((${#missing[@]})); then
  echo "client/cpp: the C++ client's build and tests need ${missing[*]}. Install with:" >&2
  echo "    sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
