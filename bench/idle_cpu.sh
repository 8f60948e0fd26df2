#!/usr/bin/env bash
# The CPU an idle run burns: one replay shard and one learner rank with no
# actors, so replay stays empty and the learner waits for it the whole time
# (each sample waits on the shard until the sampler's timeout, then the next
# one starts). A process that sleeps until something happens uses next to
# nothing; one that polls shows up here. Run it against two binaries (before
# and after a change) in the same invocation to compare like with like.
#
#   bench/idle_cpu.sh [--binary PATH]... [--seconds N] [--shards N] [--config FILE]
#
# With --shards 2 (the default) the learner's sampler asks both shards at
# once, as a sharded replay service's learner does. Prints one JSON object
# per binary: the CPU seconds (utime + stime from /proc/<pid>/stat) of the
# shards together and of the learner over the measured window, and the same
# as a percentage of one core. The first 3 s (start-up, rendezvous,
# connecting) are not measured.
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=()
seconds=20
shards=2
config=configs/cartpole.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binaries+=("$2"); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    *) echo "idle_cpu: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#binaries[@]} -gt 0 ] || binaries=(build/rlswarm)
ticks=$(getconf CLK_TCK)
pids=()
# Whatever happens, no shard or learner outlives the script.
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

cpu_ticks() {  # utime + stime of a process, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}

measure() {
  local binary=$1 dir replays=() learner endpoints="" s
  pids=()
  dir=$(mktemp -d)
  for ((s = 0; s < shards; s++)); do
    "$binary" replay --config "$config" --shard "$s" --bind 'tcp://127.0.0.1:*' \
      --endpoint-file "$dir/replay$s.endpoint" --metrics-port -1 "replay.num_shards=$shards" \
      > "$dir/replay$s.log" 2>&1 &
    replays+=($!)
    pids+=($!)
  done
  for ((s = 0; s < shards; s++)); do
    for _ in $(seq 200); do [ -s "$dir/replay$s.endpoint" ] && break; sleep 0.1; done
    if [ ! -s "$dir/replay$s.endpoint" ]; then
      echo "idle_cpu: replay shard $s did not start" >&2
      cat "$dir/replay$s.log" >&2
      exit 1
    fi
    endpoints+="${endpoints:+,}$(cat "$dir/replay$s.endpoint")"
  done
  "$binary" learner --config "$config" --metrics-port -1 learner.checkpoint_interval=0 \
    "replay.num_shards=$shards" "replay.endpoints=[$endpoints]" > "$dir/learner.log" 2>&1 &
  learner=$!
  pids+=("$learner")
  sleep 3
  if ! kill -0 "$learner" 2>/dev/null; then
    echo "idle_cpu: the learner exited" >&2
    cat "$dir/learner.log" >&2
    exit 1
  fi
  local r0=0 l0 r1=0 l1 pid
  for pid in "${replays[@]}"; do r0=$((r0 + $(cpu_ticks "$pid"))); done
  l0=$(cpu_ticks "$learner")
  sleep "$seconds"
  for pid in "${replays[@]}"; do r1=$((r1 + $(cpu_ticks "$pid"))); done
  l1=$(cpu_ticks "$learner")
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
  awk -v b="$binary" -v s="$seconds" -v n="$shards" -v hz="$ticks" -v r=$((r1 - r0)) \
    -v l=$((l1 - l0)) 'BEGIN {
    printf "{\"binary\": \"%s\", \"seconds\": %d, \"shards\": %d, ", b, s, n
    printf "\"replay_cpu_s\": %.3f, \"learner_cpu_s\": %.3f, ", r / hz, l / hz
    printf "\"replay_cpu_percent\": %.2f, \"learner_cpu_percent\": %.2f}\n", 100 * r / hz / s, 100 * l / hz / s
  }'
}

for binary in "${binaries[@]}"; do measure "$binary"; done
