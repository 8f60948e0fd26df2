#!/usr/bin/env bash
# Builds the CUDA/NCCL learner path against the CUDA LibTorch that a PyTorch
# install ships (torch.utils.cmake_prefix_path) in its own build directory,
# then runs the learner tests and the learner benchmark on the GPU, all
# within 8 minutes (each step is bounded by `timeout`).
#
# UNTESTED: written on a machine without a GPU (the learner-dqn branch was
# never drawn a device machine). Expect to fix small things on first use.
#
# Usage: scripts/gpu_check.sh [BUILD_DIR]   (default build-cuda)
# Needs: python3 with a CUDA build of torch, cmake, ninja, nvidia-smi.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build-cuda}"
START=$(date +%s)
left() { echo $((480 - ($(date +%s) - START))); }

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
PREFIX=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
python3 -c 'import torch; assert torch.cuda.is_available(), "torch has no CUDA"; print("torch", torch.__version__, "cuda", torch.version.cuda)'

timeout "$(left)" cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DRLSWARM_WITH_CUDA=ON -DCMAKE_PREFIX_PATH="$PREFIX"
# Only what the check runs: the learner tests and the benchmark.
timeout "$(left)" ninja -C "$BUILD_DIR" learner_tests learner_bench

# The learner tests run on CPU/Gloo whatever the build; they check that the
# CUDA build did not break them.
timeout "$(left)" "$BUILD_DIR/learner/learner_tests" --gtest_brief=1
timeout "$(left)" "$BUILD_DIR/bench/learner_bench" --device cuda --json --seconds 2 \
  | tee "$BUILD_DIR/learner_bench_cuda.json"
echo "gpu_check: done in $(( $(date +%s) - START )) s"
