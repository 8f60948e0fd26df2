#!/usr/bin/env bash
# Installs every Debian 12 package rlswarm needs to build, test and run.
#
# Idempotent: packages that are already installed are skipped, and when
# nothing is missing the script neither updates the package lists nor calls
# apt-get at all. Must run as root (or with sudo available).
set -euo pipefail

packages=(
  # Toolchain.
  cmake ninja-build g++ git pkg-config
  # LibTorch (CPU, with c10d) and the Gloo headers its c10d headers include.
  libtorch-dev libgloo-dev
  # OpenBLAS is not optional: without it Debian's LibTorch falls back to the
  # reference BLAS and a small MLP training step is ~10x slower.
  libopenblas0-openmp
  # Transport, and the rpc header's serialization (MessagePack).
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  # Boost (Asio, Beast, Process) and the rest of the third-party libraries.
  libboost-dev libboost-filesystem-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  # PNG frames of evaluated episodes (rlswarm evaluate --record) and plots;
  # protobuf for TensorBoard event files (message types built at run time).
  libpng-dev libprotobuf-dev
  # Tests and benchmarks; clang with its runtime for libFuzzer targets.
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
)

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for pkg in "${packages[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root (missing: ${missing[*]})" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
