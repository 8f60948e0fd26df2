#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${RLSWARM_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
