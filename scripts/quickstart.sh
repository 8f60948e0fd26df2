#!/usr/bin/env bash
# Quick start: installs what is missing, builds (Release) and runs the default
# job. Until training lands (the end-to-end issue), the default job evaluates
# a uniform random policy on CartPole-v1 over 100 episodes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
./build/rlswarm envs
./build/rlswarm evaluate --config configs/cartpole.yaml
