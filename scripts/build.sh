#!/usr/bin/env bash
# Configures and builds rlswarm (Release) with Ninja.
#
#   scripts/build.sh [--torch=debian|pypi] [CMAKE_ARGS...]
#
# --torch=debian (default): Debian's LibTorch 1.13 (CPU) into build/.
# --torch=pypi: PyPI's CUDA LibTorch from .venv-pypi (scripts/setup.sh
# --torch=pypi installs it) into build-pypi/, with RLSWARM_WITH_CUDA=ON
# (the CUDA 13 toolkit with NCCL must be installed: /usr/local/cuda). The
# CUDA code compiles and links on a machine without a GPU; every CPU test
# runs against that build.
# --target NAME (repeatable) builds only those targets (and what they need),
# e.g. scripts/quickstart.sh's `--target rlswarm`; default: everything.
# RLSWARM_BUILD_TESTS / RLSWARM_BUILD_BENCH (ON unless set) say whether the
# tests and benchmarks are configured at all.
# Other arguments go to cmake's configure step, e.g.
#   scripts/build.sh -DRLSWARM_SANITIZE=address
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/torch_flavour.sh
rlswarm_take_torch_flag "$@"
build_dir=$(rlswarm_build_dir)
targets=()
configure_args=()
for ((i = 0; i < ${#RLSWARM_ARGS[@]}; i++)); do
  case "${RLSWARM_ARGS[i]}" in
    --target) targets+=(--target "${RLSWARM_ARGS[i + 1]}"); i=$((i + 1)) ;;
    --target=*) targets+=(--target "${RLSWARM_ARGS[i]#--target=}") ;;
    *) configure_args+=("${RLSWARM_ARGS[i]}") ;;
  esac
done

. scripts/ccache_env.sh

flavour_args=()
if [ "$RLSWARM_TORCH" = pypi ]; then
  python=$RLSWARM_TORCH_VENV/bin/python
  [ -x "$python" ] || { echo "build: no $python; run scripts/setup.sh --torch=pypi" >&2; exit 1; }
  prefix=$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  # The torch package folder too, so that LibTorch's find_library calls find
  # its own lib/ before Debian's /usr/lib (cmake/Torch.cmake checks it).
  torch_root=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  command -v nvcc >/dev/null || { echo "build: --torch=pypi needs the CUDA toolkit (nvcc)" >&2; exit 1; }
  # Which GPU architectures LibTorch's CMake would build CUDA code for; without
  # it LibTorch's CMake probes the GPUs with a try_run that fails without one.
  # 9.0: Hopper (H100, H200), the GPU nodes'. rlswarm compiles no kernels.
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
  flavour_args=(-DRLSWARM_WITH_CUDA=ON "-DCMAKE_PREFIX_PATH=$prefix;$torch_root")
fi

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${RLSWARM_BUILD_TYPE:-Release} \
  -DRLSWARM_BUILD_TESTS=${RLSWARM_BUILD_TESTS:-ON} -DRLSWARM_BUILD_BENCH=${RLSWARM_BUILD_BENCH:-ON} \
  "${flavour_args[@]}" "${configure_args[@]}"
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
