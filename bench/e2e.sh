#!/usr/bin/env bash
# End-to-end benchmark: `rlswarm launch` on CartPole (or --config, e.g.
# configs/pendulum.yaml for TD3 on Pendulum) for several seeds, each
# run in its own run directory; prints one JSON object with each run's
# summary.json figures, the wall time measured from outside (process start
# to exit), and the median time to solve.
#
#   bench/e2e.sh [--seeds N] [--mode embedded|processes] [--config FILE]
#                [--binary PATH] [--keep DIR] [section.key=value ...]
#
# Seed s sets actor.seed, model.seed and learner.seed to s and replay.seed to
# s + 1; the evaluation seeds stay fixed (evaluate.seed), so every run is
# judged on the same 100 episodes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seeds=3
mode=embedded
config="$root/configs/cartpole.yaml"
binary="${RLSWARM_BUILD_DIR:-$root/build}/rlswarm"
keep=""
overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    *) overrides+=("$1"); shift ;;
  esac
done
[ -x "$binary" ] || { echo "e2e.sh: no rlswarm binary at $binary (build first)" >&2; exit 1; }

work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT

# The value of a top-level key of summary.json (pretty-printed, one key per line).
field() { sed -n "s/^  \"$1\": \(.*\),\{0,1\}$/\1/p" "$2" | sed 's/,$//'; }

runs=()
times=()
all_solved=true
for ((s = 0; s < seeds; s++)); do
  dir="$work/seed-$s"
  start=$(date +%s.%N)
  "$binary" launch "$config" --run-dir "$dir" launch.mode="$mode" \
    actor.seed=$s model.seed=$s learner.seed=$s replay.seed=$((s + 1)) "${overrides[@]}" \
    >/dev/null 2>"$work/seed-$s.stderr" || {
      echo "e2e.sh: seed $s failed; see $work/seed-$s.stderr" >&2; keep=1; trap - EXIT; exit 1; }
  end=$(date +%s.%N)
  summary="$dir/summary.json"
  solved=$(field solved "$summary")
  tts=$(field time_to_solve_s "$summary")
  [ "$solved" = "true" ] || all_solved=false
  [ "$tts" = "null" ] || times+=("$tts")
  runs+=("{\"seed\": $s, \"solved\": $solved, \"time_to_solve_s\": $tts, \"env_steps_to_solve\": $(field env_steps_to_solve "$summary"), \"updates\": $(field updates "$summary"), \"final_eval_mean_return\": $(field final_eval_mean_return "$summary"), \"process_wall_s\": $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')}")
done

median=null
if [ ${#times[@]} -eq "$seeds" ]; then
  median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
fi
joined=$(IFS=,; echo "${runs[*]}")
echo "{\"bench\": \"e2e\", \"config\": \"$(basename "$config")\", \"mode\": \"$mode\", \"seeds\": $seeds, \"all_solved\": $all_solved, \"median_time_to_solve_s\": $median, \"runs\": [$joined]}"
