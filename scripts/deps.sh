#!/usr/bin/env bash
# Installs the Debian packages sgraph needs, if any is missing. Idempotent; quick when all are there.
set -euo pipefail
PACKAGES=(build-essential cmake ninja-build ccache pkg-config
          llvm-19-dev libeigen3-dev xtensor-dev doctest-dev libbenchmark-dev clang-format
          libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev libonnx-testdata
          libtbb-dev zlib1g-dev libcpp-httplib-dev wrk curl
          clang-19 libclang-rt-19-dev)  # the libFuzzer targets (preset fuzz)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
