#!/usr/bin/env bash
# MinAtar learning benchmark: `rlswarm launch configs/minatar_<game>.yaml` for
# each of the five games and --seeds seeds, with stopping at the target off
# (launch.stop_at_target=false) so every run trains for its full
# launch.max_wall_time_s (15 minutes in the shipped configs) and the full
# score shows; prints one JSON object:
#
#   {"results": [{"env", "seed", "final_eval_mean_return",
#                 "best_eval_mean_return", "final_eval_episodes",
#                 "train_mean_return_last100", "return_at_1m_steps",
#                 "time_to_solve_s", "env_steps", "updates", "wall_time_s",
#                 "load_avg", "heldout_eval_mean_return",
#                 "heldout_eval_std_error", "heldout_eval_episodes"}, ...],
#    "games", "seeds"}
#
#   bench/minatar.sh [--seeds N] [--first-seed K] [--games "breakout asterix ..."]
#                    [--configs "FILE ..."] [--heldout-episodes N] [--binary PATH]
#                    [--keep DIR] [section.key=value ...]
#
# --configs runs these config files instead of the games' (e.g. the built-in
# MinAtar Breakout against the minatar package's through Gymnasium:
# --configs "configs/minatar_breakout.yaml configs/gymnasium_minatar_breakout.yaml");
# each result then also names its "config". Runs go seed by seed, every game
# or config in turn within a seed, so a slow stretch of the machine hits them
# alike.
#
# Keys that summary.json has are copied from it and mean what they mean there
# (the greedy evaluations of the run, evaluate.seed fixed so every run is
# judged on the same episodes; time_to_solve_s: when an evaluation first
# reached the config's launch.target_return, null if none did). The others:
#   target_return: the config's launch.target_return;
#   train_mean_return_last100: the mean return of the last 100 training
#       episodes (epsilon-greedy, what the MinAtar paper plots);
#   return_at_1m_steps: the greedy mean return of the first complete
#       evaluation at or after 1 M env steps (null if the run made fewer);
#   load_avg: the mean of the 1-minute load average sampled every 10 s while
#       the run ran; the run itself adds ~1.3-2 (its learner, actors and
#       evaluator on the 2 cores), more means other work shared the machine;
#   heldout_eval_mean_return: the greedy mean return of the run's best policy
#       (policies/best, the one of the best evaluation) over
#       heldout_eval_episodes fresh episodes (`rlswarm evaluate --seed 1`;
#       --heldout-episodes, default 1000, 0 skips it), with the standard
#       error of that mean. best_eval_mean_return is the largest of ~16
#       evaluations of 100 episodes each, so it leans high when the
#       evaluations are noisy; the held-out score of the same policy does not;
#       null where the run saved no best policy.
# Seeds K .. K+N-1 run (--first-seed K, default 0; --seeds N). Seed s sets
# actor.seed, model.seed and learner.seed to s and replay.seed to s + 1.
# Each run's directory (summary, evaluations, episodes, scalars for
# `rlswarm plot`) stays under --keep DIR (default: a temporary directory,
# removed at exit).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seeds=1
first_seed=0
heldout_episodes=1000
games="breakout asterix freeway seaquest space_invaders"
binary="${RLSWARM_BUILD_DIR:-$root/build}/rlswarm"
keep=""
configs=""
overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds="$2"; shift 2 ;;
    --first-seed) first_seed="$2"; shift 2 ;;
    --games) games="$2"; shift 2 ;;
    --configs) configs="$2"; shift 2 ;;
    --heldout-episodes) heldout_episodes="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) overrides+=("$1"); shift ;;
  esac
done
[ -x "$binary" ] || { echo "minatar.sh: no rlswarm binary at $binary (build first)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "minatar.sh: needs python3 (to read the run's JSON)" >&2; exit 1; }

work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT

results="$work/results.jsonl"
: >"$results"
if [ -z "$configs" ]; then
  for game in $games; do configs+=" $root/configs/minatar_$game.yaml"; done
fi
for config in $configs; do
  [ -f "$config" ] || { echo "minatar.sh: no config $config" >&2; exit 1; }
done
for ((s = first_seed; s < first_seed + seeds; s++)); do
  for config in $configs; do
    game=$(basename "$config" .yaml)
    game=${game#minatar_}
    dir="$work/$game-seed-$s"
    loads="$work/$game-seed-$s.load"
    : >"$loads"
    (while sleep 10; do cut -d' ' -f1 /proc/loadavg >>"$loads"; done) &
    sampler=$!
    echo "minatar.sh: $game seed $s -> $dir" >&2
    "$binary" launch "$config" --run-dir "$dir" launch.stop_at_target=false \
      actor.seed=$s model.seed=$s learner.seed=$s replay.seed=$((s + 1)) "${overrides[@]}" \
      >/dev/null 2>"$dir.stderr" || {
        kill "$sampler" 2>/dev/null || true
        echo "minatar.sh: $game seed $s failed; see $dir.stderr" >&2; trap - EXIT; exit 1; }
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    heldout="$dir.heldout.json"
    rm -f "$heldout"
    if [ "$heldout_episodes" -gt 0 ] && [ -d "$dir/policies/best" ]; then
      "$binary" evaluate --config "$dir/config.yaml" --checkpoint "$dir/policies/best" \
        --episodes "$heldout_episodes" --seed 1 --json 2>>"$dir.stderr" | tail -n 1 >"$heldout" || {
          echo "minatar.sh: evaluating $dir/policies/best failed; see $dir.stderr" >&2; trap - EXIT; exit 1; }
    fi
    python3 - "$dir" "$s" "$loads" "$heldout" "$config" >>"$results" <<'PY'
import glob, json, math, os, sys

run, seed, loads, heldout_path, config_file = sys.argv[1:6]
heldout = json.load(open(heldout_path)) if os.path.exists(heldout_path) else None
summary = json.load(open(f"{run}/summary.json"))
evals = [json.loads(line) for line in open(f"{run}/evaluations.jsonl") if line.strip()]
episodes = []
for path in sorted(glob.glob(f"{run}/episodes/*.jsonl")):
    episodes += [json.loads(line) for line in open(path) if line.strip()]
# Across actors, order by the policy version that played each episode
# (stable within each actor's file).
episodes.sort(key=lambda e: e.get("policy_version", 0))
last = episodes[-100:]
load = [float(x) for x in open(loads).read().split()]
config = [line.split("#")[0].rstrip() for line in open(f"{run}/config.yaml")]
# The run directory's config.yaml is the merged config (no base), one key a line.
def key(section, name):
    inside = False
    for line in config:
        if line and not line.startswith(" "):
            inside = line.startswith(section + ":")
        elif inside and line.strip().startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None
target = key("launch", "target_return")
# Only complete evaluations, as summary.json counts them: one that the run's
# stop cut short (fewer episodes, or none) is in the file marked "complete": false.
at_1m = next((e["mean_return"] for e in evals
              if e.get("complete") and e["env_steps"] >= 1_000_000), None)
print(json.dumps({
    "config": os.path.relpath(config_file),
    "env": key("env", "name"),
    "seed": int(seed),
    "final_eval_mean_return": summary["final_eval_mean_return"],
    "best_eval_mean_return": summary["best_eval_mean_return"],
    "final_eval_episodes": summary["final_eval_episodes"],
    "train_mean_return_last100": round(sum(e["return"] for e in last) / len(last), 3) if last else None,
    "return_at_1m_steps": at_1m,
    "target_return": None if target in (None, "null", "~") else float(target),
    "time_to_solve_s": summary["time_to_solve_s"],
    "env_steps": summary["env_steps"],
    "updates": summary["updates"],
    "wall_time_s": summary["wall_time_s"],
    "load_avg": round(sum(load) / len(load), 2) if load else None,
    "heldout_eval_mean_return": heldout["mean_return"] if heldout else None,
    "heldout_eval_std_error": round(heldout["std_return"] / math.sqrt(heldout["episodes"]), 3)
                              if heldout else None,
    "heldout_eval_episodes": heldout["episodes"] if heldout else None,
}))
PY
  done
done

python3 - "$results" "$configs" "$seeds" <<'PY'
import json, os, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
games = [os.path.basename(c)[:-len(".yaml")].removeprefix("minatar_") for c in sys.argv[2].split()]
print(json.dumps({"results": rows, "games": games, "seeds": int(sys.argv[3])}, indent=1))
PY
