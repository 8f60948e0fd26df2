#!/usr/bin/env bash
# End-to-end benchmark: `rlswarm launch` on CartPole (or --config, e.g.
# configs/pendulum.yaml for TD3 on Pendulum) for several seeds, each
# run in its own run directory, and beside every seed the plain program
# (bench/plain_dqn.cc: the same DQN, config and evaluations in one
# single-threaded process) with the same seed, alternating so that both see
# the same machine. Prints one JSON object with each run's summary.json
# figures, the wall time measured from outside (process start to exit), the
# plain program's time to solve, and the medians.
#
#   bench/e2e.sh [--seeds N] [--mode embedded|processes] [--config FILE]
#                [--binary PATH] [--plain PATH | --no-plain] [--keep DIR]
#                [--baseline FILE]
#                [section.key=value ...]
#
# Seed s sets actor.seed, model.seed and learner.seed to s and replay.seed to
# s + 1 (the same overrides go to the plain program); the evaluation seeds
# stay fixed (evaluate.seed), so every run is judged on the same 100
# episodes.
#
# Keys: median_time_to_solve_s (rlswarm), plain_median_time_to_solve_s,
# median_ratio_to_plain = median_time_to_solve_s / plain_median_time_to_solve_s
# (< 1: rlswarm solves sooner), and per run time_to_solve_s,
# plain_time_to_solve_s, ratio_to_plain, plus where each run's time went:
# learning_start_s, eval_seconds and evaluations (rlswarm), plain_startup_s,
# plain_learning_start_s, plain_updating_s, plain_evaluating_s; and the
# best policy's score on held-out episodes (heldout_eval_mean_return,
# summary.json's), which no evaluation during the run saw. Medians are
# null unless every seed solved. The plain program runs for dqn configs only
# (--no-plain otherwise; TD3 and Gymnasium configs skip it by themselves).
#
# --baseline FILE launches another config beside every seed the same way
# (same seed overrides, alternating), e.g. the native CartPole beside
# configs/gymnasium_cartpole.yaml; its keys: baseline_config,
# baseline_median_time_to_solve_s, median_ratio_to_baseline, and per run
# baseline_time_to_solve_s, baseline_heldout_eval_mean_return.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seeds=3
mode=embedded
config="$root/configs/cartpole.yaml"
binary="${RLSWARM_BUILD_DIR:-$root/build}/rlswarm"
plain="${RLSWARM_BUILD_DIR:-$root/build}/bench/plain_dqn"
keep=""
baseline=""
overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --plain) plain="$2"; shift 2 ;;
    --no-plain) plain=""; shift ;;
    --keep) keep="$2"; shift 2 ;;
    --baseline) baseline="$2"; shift 2 ;;
    *) overrides+=("$1"); shift ;;
  esac
done
[ -x "$binary" ] || { echo "e2e.sh: no rlswarm binary at $binary (build first)" >&2; exit 1; }
# TD3 configs have no plain program, nor have Gymnasium envs (it steps
# built-in envs only).
if grep -Eq '^ *algorithm: *td3|^ *name: *gymnasium:' "$config"; then plain=""; fi
[ -z "$plain" ] || [ -x "$plain" ] ||
  { echo "e2e.sh: no plain_dqn at $plain (build it, or --no-plain)" >&2; exit 1; }

work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT

# The value of a top-level key of summary.json (pretty-printed, one key per line).
field() { sed -n "s/^  \"$1\": \(.*\),\{0,1\}$/\1/p" "$2" | sed 's/,$//'; }

runs=()
times=()
baseline_times=()
plain_times=()
all_solved=true
plain_all_solved=true
# A key of the plain program's one-line JSON.
plain_field() { sed -n "s/.*\"$1\": *\([^,}]*\).*/\1/p" "$2"; }
for ((s = 0; s < seeds; s++)); do
  dir="$work/seed-$s"
  seed_overrides=(actor.seed=$s model.seed=$s learner.seed=$s replay.seed=$((s + 1)))
  start=$(date +%s.%N)
  "$binary" launch "$config" --run-dir "$dir" launch.mode="$mode" \
    "${seed_overrides[@]}" "${overrides[@]}" \
    >/dev/null 2>"$work/seed-$s.stderr" || {
      echo "e2e.sh: seed $s failed; see $work/seed-$s.stderr" >&2; keep=1; trap - EXIT; exit 1; }
  end=$(date +%s.%N)
  summary="$dir/summary.json"
  solved=$(field solved "$summary")
  tts=$(field time_to_solve_s "$summary")
  [ "$solved" = "true" ] || all_solved=false
  [ "$tts" = "null" ] || times+=("$tts")
  run="{\"seed\": $s, \"solved\": $solved, \"time_to_solve_s\": $tts, \"env_steps_to_solve\": $(field env_steps_to_solve "$summary"), \"updates\": $(field updates "$summary"), \"final_eval_mean_return\": $(field final_eval_mean_return "$summary"), \"heldout_eval_mean_return\": $(field heldout_eval_mean_return "$summary"), \"heldout_eval_episodes\": $(field heldout_eval_episodes "$summary"), \"learning_start_s\": $(field learning_start_s "$summary"), \"evaluations\": $(field evaluations "$summary"), \"eval_seconds\": $(field eval_seconds "$summary"), \"process_wall_s\": $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')"
  if [ -n "$plain" ]; then
    out="$work/plain-$s.json"
    "$plain" "$config" "${seed_overrides[@]}" "${overrides[@]}" >"$out" \
      2>"$work/plain-$s.stderr" || {
        echo "e2e.sh: plain_dqn seed $s failed; see $work/plain-$s.stderr" >&2; keep=1
        trap - EXIT; exit 1; }
    ptts=$(plain_field time_to_solve_s "$out")
    [ "$(plain_field solved "$out")" = "true" ] || plain_all_solved=false
    [ "$ptts" = "null" ] || plain_times+=("$ptts")
    ratio=null
    if [ "$tts" != "null" ] && [ "$ptts" != "null" ]; then
      ratio=$(awk -v a="$tts" -v b="$ptts" 'BEGIN {printf "%.3f", a / b}')
    fi
    run+=", \"plain_time_to_solve_s\": $ptts, \"ratio_to_plain\": $ratio, \"plain_env_steps_to_solve\": $(plain_field env_steps_to_solve "$out"), \"plain_updates\": $(plain_field updates "$out"), \"plain_startup_s\": $(plain_field startup_s "$out"), \"plain_learning_start_s\": $(plain_field learning_start_s "$out"), \"plain_updating_s\": $(plain_field updating_s "$out"), \"plain_evaluating_s\": $(plain_field evaluating_s "$out"), \"plain_evaluations\": $(plain_field evaluations "$out")"
  fi
  if [ -n "$baseline" ]; then
    bdir="$work/baseline-seed-$s"
    "$binary" launch "$baseline" --run-dir "$bdir" launch.mode="$mode" \
      "${seed_overrides[@]}" "${overrides[@]}" >/dev/null 2>"$work/baseline-seed-$s.stderr" || {
        echo "e2e.sh: baseline seed $s failed; see $work/baseline-seed-$s.stderr" >&2; keep=1
        trap - EXIT; exit 1; }
    btts=$(field time_to_solve_s "$bdir/summary.json")
    [ "$btts" = "null" ] || baseline_times+=("$btts")
    run+=", \"baseline_time_to_solve_s\": $btts, \"baseline_heldout_eval_mean_return\": $(field heldout_eval_mean_return "$bdir/summary.json")"
  fi
  runs+=("$run}")
done

median_of() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
median=null
[ ${#times[@]} -eq "$seeds" ] && median=$(median_of "${times[@]}")
plain_median=null
ratio=null
if [ -n "$plain" ] && [ ${#plain_times[@]} -eq "$seeds" ]; then
  plain_median=$(median_of "${plain_times[@]}")
  [ "$median" = "null" ] || ratio=$(awk -v a="$median" -v b="$plain_median" 'BEGIN {printf "%.3f", a / b}')
fi
baseline_fields=""
if [ -n "$baseline" ]; then
  bmedian=null
  bratio=null
  if [ ${#baseline_times[@]} -eq "$seeds" ]; then
    bmedian=$(median_of "${baseline_times[@]}")
    [ "$median" = "null" ] || bratio=$(awk -v a="$median" -v b="$bmedian" 'BEGIN {printf "%.3f", a / b}')
  fi
  baseline_fields=", \"baseline_config\": \"$(basename "$baseline")\", \"baseline_median_time_to_solve_s\": $bmedian, \"median_ratio_to_baseline\": $bratio"
fi
plain_solved=null
[ -z "$plain" ] || plain_solved=$plain_all_solved
joined=$(IFS=,; echo "${runs[*]}")
echo "{\"bench\": \"e2e\", \"config\": \"$(basename "$config")\", \"mode\": \"$mode\", \"seeds\": $seeds, \"all_solved\": $all_solved, \"median_time_to_solve_s\": $median, \"plain_all_solved\": $plain_solved, \"plain_median_time_to_solve_s\": $plain_median, \"median_ratio_to_plain\": $ratio$baseline_fields, \"cpu\": \"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)\", \"runs\": [$joined]}"
