#!/usr/bin/env bash
# A Slurm launch for real: a one-host Slurm cluster (Debian's slurm-wlm and
# munge, started here by scripts/slurm/local_cluster.sh) runs
# scripts/slurm/rlswarm.sbatch as one job: a replay shard, a 2-rank
# full_shard learner (srun tasks: SLURM_PROCID / SLURM_NTASKS, no
# MASTER_ADDR, so rank 0's node comes from the step's node list) and two
# actors, each an `srun --overlap` step. The job must end cleanly at
# learner.max_updates with both ranks' checkpoints written, and the greedy
# policy must have solved CartPole: the best of the twenty checkpoints kept
# (every 500 updates, 2500 to 12000) averages at least 475 over 100 episodes
# (random is ~22), as `rlswarm launch` on the same config does within this
# budget (median ~4.5k updates). The job stops at a fixed update count, not
# at a target, and one DQN checkpoint's greedy return can swing from one to
# the next, so one checkpoint alone would make the test a coin toss (a run
# here: every checkpoint from 3000 updates on at 484 or more).
#
#   tests/slurm_test.sh RLSWARM_BINARY SOURCE_DIR
#
# Needs root and the Slurm daemons; exits 77 (ctest: skipped) without them.
set -euo pipefail
bin=$(readlink -f "$1")
src=$(readlink -f "$2")

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to run slurmd"
PATH=$PATH:/usr/sbin
for tool in munged slurmctld slurmd sbatch srun; do
  command -v "$tool" > /dev/null || skip "no $tool (scripts/setup.sh installs slurm-wlm and munge)"
done

work=$(mktemp -d /tmp/slurm_test.XXXXXX)
cleanup() {
  local rc=$?
  [ -n "${SLURM_CONF:-}" ] && scancel --full --quiet --user root 2> /dev/null || true
  bash "$src/scripts/slurm/local_cluster.sh" stop "$work/cluster" || true
  if [ "$rc" = 0 ]; then
    rm -rf "$work"
  else
    echo "slurm test failed (exit $rc); logs kept in $work"
    for f in "$work"/job.out "$work"/run/logs/*.log "$work"/cluster/slurmctld.log \
      "$work"/cluster/slurmd.log; do
      [ -f "$f" ] || continue
      echo "=== $f"
      tail -n 20 "$f"
    done
  fi
}
trap cleanup EXIT

# Ports of this run's cluster and roles, free now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
RLSWARM_SLURMCTLD_PORT=$(free_port) RLSWARM_SLURMD_PORT=$(free_port) \
  bash "$src/scripts/slurm/local_cluster.sh" start "$work/cluster" > "$work/cluster.env"
. "$work/cluster.env"
export SLURM_CONF
# The roles listen on base, base+100, base+101 and base+200 (rlswarm.sbatch):
# a base below the ephemeral range whose four ports are free now.
base=$(python3 -c '
import random, socket
for _ in range(100):
    base = random.randrange(20000, 32000)
    try:
        for port in (base, base + 100, base + 101, base + 200):
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(base)
    break
')

start=$SECONDS
status=0
RLSWARM_BINARY=$bin RLSWARM_PORT_BASE=$base RLSWARM_ACTORS=2 \
  sbatch --wait --ntasks 2 --time 10 --output "$work/job.out" --chdir "$work" \
  "$src/scripts/slurm/rlswarm.sbatch" "$src/configs/cartpole.yaml" "$work/run" \
  learner.strategy=full_shard learner.max_updates=12000 learner.checkpoint_interval=500 learner.keep_checkpoints=20 \
  || status=$?
echo "job ended after $((SECONDS - start)) s (exit $status)"
cat "$work/job.out"
[ "$status" = 0 ] || exit 1

for r in 0 1; do
  grep -q "rank $r/2\|learner-$r" "$work/run/logs/learner-$r.log" || {
    echo "no learner rank $r in its log"
    exit 1
  }
done
# Rank 0 hosted the store on its node's address (no MASTER_ADDR was set).
grep -q "learner-store: serving" "$work/run/logs/learner-0.log" || {
  echo "rank 0 did not host the learner's store"
  exit 1
}
ls -d "$work"/run/learner/update-000000012000 > /dev/null || {
  echo "no checkpoint at learner.max_updates"
  exit 1
}
mean=$(sed -n 's/.*"mean_return": *\([0-9.]*\).*/\1/p' "$work/run/evaluate.json")
echo "greedy mean return of the final checkpoint over 100 episodes: ${mean:-none}"
best=0
for ((u = 2500; u <= 12000; u += 500)); do
  dir=$(printf '%s/run/learner/update-%012d' "$work" "$u")
  [ -d "$dir" ] || {
    echo "no checkpoint $dir (learner.keep_checkpoints=20 keeps the last twenty)"
    exit 1
  }
  m=$("$bin" evaluate --config "$src/configs/cartpole.yaml" --checkpoint "$dir" --json \
    | sed -n 's/.*"mean_return": *\([0-9.]*\).*/\1/p')
  echo "greedy mean return at update $u: ${m:-none}"
  best=$(awk -v a="$best" -v b="${m:-0}" 'BEGIN {print (b > a) ? b : a}')
done
echo "best of the twenty checkpoints: $best"
awk -v m="$best" 'BEGIN {exit !(m >= 475)}' || {
  echo "the policy trained under Slurm did not learn"
  exit 1
}
# The roles were stopped with SIGTERM, not killed: the shard's last words.
grep -q "stopped; [0-9]* checkpoints written" "$work/run/logs/replay-0.log" || {
  echo "the replay shard did not stop cleanly"
  exit 1
}
