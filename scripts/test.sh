#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest,
# then the Python package's tests with pytest.
#
#   scripts/test.sh [--torch=debian|pypi] [CTEST_ARGS...]
#
# --torch=pypi runs the same ctest suite, on the CPU, against the CUDA
# LibTorch build (build-pypi/); see scripts/build.sh. The Python package links
# no LibTorch, so its tests run in the Debian flavour only: they install the
# package from this tree into .venv/ (built in build-python/) and run
# python/tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/torch_flavour.sh
rlswarm_take_torch_flag "$@"
with_python=()
[ "$RLSWARM_TORCH" = debian ] && with_python=(--python)
scripts/setup.sh "--torch=$RLSWARM_TORCH" "${with_python[@]}"
scripts/build.sh "--torch=$RLSWARM_TORCH"
ctest --test-dir "$(rlswarm_build_dir)" --output-on-failure -j "$(nproc)" "${RLSWARM_ARGS[@]}"

if [ "$RLSWARM_TORCH" = debian ]; then
  # --no-build-isolation: the pinned build backend and nanobind of .venv/, no
  # download; a kept build folder (and ccache, as build.sh sets it up) makes
  # a rebuild incremental.
  . scripts/ccache_env.sh
  .venv/bin/python -m pip install --disable-pip-version-check -q --no-build-isolation \
    --config-settings=build-dir=build-python .
  status=0
  .venv/bin/python -m pytest python/tests || status=$?
  # 5: no test was collected, which only a selection (PYTEST_ADDOPTS="-k ...")
  # can cause; the suite itself always has tests.
  if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest selected no Python test"
  elif [ "$status" -ne 0 ]; then
    exit "$status"
  fi
fi
