#!/usr/bin/env bash
# Builds the libraries with Clang's thread-safety analysis, its warnings as
# errors:
#
#   scripts/thread_safety.sh [CMAKE_ARGS...]
#
# The analysis checks the annotations of common/thread_annotations.h
# (RLSWARM_GUARDED_BY, RLSWARM_REQUIRES, ...); GCC ignores them, so only this
# build enforces them. Only thread-safety warnings are errors: Clang's other
# warnings stay warnings. Uses its own build directory (build-tsa/), no
# tests, no benchmarks, and -O0: the analysis runs in the front end, so
# optimising would only cost time.
#
# What it builds: every library target whole, except those with sources
# Clang 14 cannot compile: the sources that include all of ATen
# (<ATen/ATen.h>, torch/nn, c10d) against LibTorch 1.13 in C++20.
# ATen/core/List.h moves a std::vector<c10::IValue> where IValue is still
# incomplete, which libstdc++ 12's constexpr vector rejects under Clang
# (pytorch/pytorch#97689). Of those libraries it builds every object but the
# sources listed in `without_clang` below (checked by review only), taking
# the objects from the build graph, so a new source is analysed without an
# edit here. The learner's LibTorch-free room (rlswarm_learner_runtime) is
# built whole. The LibTorch precompiled header is off here.
# Needs clang++ (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ccache_env.sh
dir=${RLSWARM_TSA_DIR:-build-tsa}
cxx=${RLSWARM_TSA_CXX:-clang++}
whole=(rlswarm_common rlswarm_test_support rlswarm_envs rlswarm_rpc rlswarm_replay
       rlswarm_replay_service rlswarm_observe rlswarm_learner_runtime)
partial=(rlswarm_models rlswarm_actors rlswarm_evaluate rlswarm_config rlswarm_launch
         rlswarm_apps rlswarm_learner_dist rlswarm_learner_fsdp rlswarm_learner_checkpoint
         rlswarm_learner_apex rlswarm_learner_algorithms)
# Sources of the `partial` libraries that include all of ATen (see above).
without_clang=(
  models/continuous_networks.cc models/model_spec.cc models/q_network.cc models/q_networks.cc
  models/residual_networks.cc models/weights_parts.cc models/weights_wire.cc
  actors/continuous_policy.cc actors/q_policy.cc
  evaluate/checkpoint_weights.cc
  config/learner_factory.cc config/learner_section.cc
  launch/embedded_launch.cc launch/process_launch.cc
  apps/learner_command.cc
  learner/dist/communicator.cc learner/dist/device_plan.cc learner/dist/env_rendezvous.cc
  learner/dist/rendezvous.cc learner/dist/shard_mesh.cc learner/dist/torch_adapter.cc
  learner/dist/trace_update.cc learner/dist/watchdog.cc
  learner/fsdp/activation_checkpoint.cc learner/fsdp/flat_optimizer.cc
  learner/fsdp/gathered_units.cc learner/fsdp/sharded_model.cc learner/fsdp/sharding_options.cc
  learner/checkpoint/async_checkpoint.cc learner/checkpoint/checkpoint.cc
  learner/checkpoint/checkpoint_reader.cc
  learner/apex/apex_learner.cc learner/apex/apex_options.cc learner/apex/device_copies.cc
  learner/apex/weights_broadcaster.cc
  learner/algorithms/dqn_algorithm.cc learner/algorithms/dqn_learner.cc
  learner/algorithms/dqn_loss.cc learner/algorithms/td3_algorithm.cc
  learner/algorithms/td3_loss.cc learner/algorithms/td3_trainer.cc
)
cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_FLAGS="-O0 -Wthread-safety -Werror=thread-safety" \
  -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON \
  -DRLSWARM_BUILD_TESTS=OFF -DRLSWARM_BUILD_BENCH=OFF "$@" >/dev/null

# Every object of the `partial` libraries but those of `without_clang`:
# <folder>/CMakeFiles/<library>.dir/<source>.o, as the build graph names it.
all_objects=$(ninja -C "$dir" -t targets all | sed -n 's/^\([^:]*CMakeFiles\/\(rlswarm_[a-z_]*\)\.dir\/[^:]*\.o\): .*/\2 \1/p')
objects=()
for library in "${partial[@]}"; do
  found=0
  while read -r object; do
    source=$(sed "s|CMakeFiles/$library\.dir/||; s|\.o$||" <<<"$object")
    skip=0
    for excluded in "${without_clang[@]}"; do [ "$source" = "$excluded" ] && skip=1; done
    found=$((found + 1))
    [ "$skip" = 1 ] || objects+=("$object")
  done < <(awk -v lib="$library" '$1 == lib { print $2 }' <<<"$all_objects")
  [ "$found" -gt 0 ] || { echo "thread-safety: no objects of $library in $dir" >&2; exit 1; }
done
for excluded in "${without_clang[@]}"; do
  grep -q " ${excluded%/*}/CMakeFiles/[a-z_]*\.dir/${excluded##*/}\.o$" <<<"$all_objects" ||
    { echo "thread-safety: $excluded is listed in without_clang but built by no library" >&2; exit 1; }
done

cmake --build "$dir" -j "$(nproc)" --target "${whole[@]}" "${objects[@]}"
echo "thread-safety: ${whole[*]} whole and ${#objects[@]} objects of ${partial[*]}" \
  "pass -Wthread-safety" \
  "(${#without_clang[@]} sources that include all of ATen: review only)"
