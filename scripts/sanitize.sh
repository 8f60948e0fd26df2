#!/usr/bin/env bash
# Builds the tests of the libraries without LibTorch (common, rpc, replay,
# the replay service, the learner's runtime room) with a sanitizer and runs them:
#   scripts/sanitize.sh address   # AddressSanitizer + UndefinedBehaviorSanitizer
#   scripts/sanitize.sh thread    # ThreadSanitizer
# Uses its own build directory (build-asan / build-tsan) and builds only the
# test binaries it runs, so it stays cheap on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/ccache_env.sh
kind=${1:?usage: scripts/sanitize.sh address|thread}
case "$kind" in
  address) dir=build-asan ;;
  thread) dir=build-tsan ;;
  *) echo "usage: scripts/sanitize.sh address|thread" >&2; exit 2 ;;
esac
targets=(common_tests rpc_tests replay_tests replay_service_tests learner_runtime_tests)
# -O1 with line tables only: sanitizer reports keep file:line, and the two
# sanitizer builds compile faster than with RelWithDebInfo (-O2 -g) on 2 cores.
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
  -DRLSWARM_SANITIZE="$kind" \
  -DRLSWARM_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp}
status=0
for t in "${targets[@]}"; do
  bin=$(find "$dir" -type f -name "$t" -perm -u+x | head -n 1)
  echo "== $kind: $bin"
  "$bin" --gtest_brief=1 || status=1
done
exit $status
