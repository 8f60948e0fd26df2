#!/usr/bin/env bash
# Quick start: installs what is missing, builds (Release) and runs the default
# job: CartPole-v1 trained end to end by `rlswarm launch` (embedded mode)
# until a greedy evaluation over 100 episodes averages >= 475, then the best
# evaluated policy (the run's policies/best) evaluated again by `rlswarm evaluate`.
#
# Builds only the `rlswarm` binary and what it links (no tests, no
# benchmarks): scripts/test.sh later configures the same build/ with them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
RLSWARM_BUILD_TESTS=OFF RLSWARM_BUILD_BENCH=OFF scripts/build.sh --target rlswarm
run="runs/cartpole-quickstart-$(date -u +%Y%m%d-%H%M%S)"
./build/rlswarm launch configs/cartpole.yaml --run-dir "$run"
echo "== the run's best policy ($run/policies/best), 100 greedy episodes"
./build/rlswarm evaluate --config configs/cartpole.yaml --checkpoint "$run/policies/best" \
  --episodes 100
