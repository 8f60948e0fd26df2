#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
#
#   scripts/test.sh [--torch=debian|pypi] [CTEST_ARGS...]
#
# --torch=pypi runs the same suite, on the CPU, against the CUDA LibTorch
# build (build-pypi/); see scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/torch_flavour.sh
rlswarm_take_torch_flag "$@"
scripts/setup.sh "--torch=$RLSWARM_TORCH"
scripts/build.sh "--torch=$RLSWARM_TORCH"
ctest --test-dir "$(rlswarm_build_dir)" --output-on-failure -j "$(nproc)" "${RLSWARM_ARGS[@]}"
