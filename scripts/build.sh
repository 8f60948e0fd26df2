#!/usr/bin/env bash
# Configures and builds rlswarm (Release) into ./build with Ninja.
# Extra arguments are passed to cmake's configure step, e.g.
#   scripts/build.sh -DRLSWARM_SANITIZE=address
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${RLSWARM_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${RLSWARM_BUILD_TYPE:-Release} "$@"
cmake --build "$build_dir" -j "$(nproc)"
