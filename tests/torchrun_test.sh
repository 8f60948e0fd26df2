#!/usr/bin/env bash
# The learner ranks under a real torchrun (PyPI's torch, `--no-python`): a
# replay shard and two actors beside a 2-rank full_shard learner that
# torchrun starts on one node. The ranks rendezvous on the learner's own
# store (rank 0 hosts it on MASTER_PORT + 1; torchrun's agent store, a
# TCPStore of torch 2.x, is not used), train, and checkpoint. Then:
#   1. rank 1 is killed (SIGKILL): torchrun restarts the group, which resumes
#      from the newest checkpoint;
#   2. rank 1 is stopped (SIGSTOP, a hung rank): the watchdog of rank 0
#      turns it into an exit within learner.watchdog_timeout_s, and torchrun
#      restarts the group again;
# and the learner's checkpoints must still solve CartPole (a greedy
# evaluation of 100 episodes reaching 475).
#
#   tests/torchrun_test.sh RLSWARM_BINARY CONFIGS_DIR TORCHRUN
#
# Exits 77 (ctest: skipped) when TORCHRUN is not an executable (no
# `scripts/setup.sh --torch=pypi` on this machine).
set -euo pipefail
bin=$1
configs=$2
torchrun=$3

if [ ! -x "$torchrun" ]; then
  echo "SKIP: no torchrun at $torchrun (scripts/setup.sh --torch=pypi installs it)"
  exit 77
fi

work=$(mktemp -d /tmp/torchrun_test.XXXXXX)
pids=()
cleanup() {
  local rc=$?
  local ranks
  ranks=$(pgrep -P "${torchrun_pid:-0}" 2> /dev/null || true)
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  for p in $ranks; do kill -CONT "$p" 2> /dev/null || true; done
  for _ in $(seq 100); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}" $ranks; do kill -KILL "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  if [ "$rc" = 0 ]; then
    rm -rf "$work"
  else
    echo "torchrun test failed (exit $rc); logs kept in $work"
    for f in "$work"/*.log; do
      echo "=== $f"
      tail -n 25 "$f"
    done
  fi
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
replay_port=$(free_port)
weights_port=$(free_port)
snapshot_port=$(free_port)
master_port=$(free_port)

config=$configs/cartpole.yaml
overrides=(
  "replay.endpoints=[tcp://127.0.0.1:$replay_port]"
  "learner.weights_endpoint=tcp://127.0.0.1:$weights_port"
  "learner.weights_snapshot_endpoint=tcp://127.0.0.1:$snapshot_port"
  "learner.strategy=full_shard"
  "learner.checkpoint_dir=$work/learner"
  "learner.checkpoint_interval=300"
  "learner.watchdog_timeout_s=5"
  "replay.checkpoint_dir=$work/replay"
)
start() {
  local log=$1
  shift
  "$@" > "$work/$log.log" 2>&1 &
  pids+=($!)
}

start replay "$bin" replay --config "$config" --shard 0 --bind "tcp://127.0.0.1:$replay_port" \
  "${overrides[@]}"
start torchrun "$torchrun" --no-python --nnodes 1 --nproc-per-node 2 --max-restarts 3 \
  --monitor-interval 0.5 --master-addr 127.0.0.1 --master-port "$master_port" \
  "$bin" learner --config "$config" "${overrides[@]}"
torchrun_pid=${pids[1]}
printf 'tcp://127.0.0.1:%s\ntcp://127.0.0.1:%s\n' "$weights_port" "$snapshot_port" \
  > "$work/weights.ep"
for k in 0 1; do
  start "actor-$k" "$bin" actor --config "$config" --actor-id $k --num-actors 2 \
    --weights-endpoint-file "$work/weights.ep" "${overrides[@]}"
done

alive() {
  for p in "${pids[@]}"; do
    kill -0 "$p" 2> /dev/null || {
      echo "a role exited early (pid $p)" >&2
      exit 1
    }
  done
}
# The learner ranks torchrun runs now: its children running $bin.
rank_pid() {
  local r=$1
  for p in $(pgrep -P "$torchrun_pid"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "RANK=$r"; then
      echo "$p"
      return
    fi
  done
}
# A store on MASTER_PORT + 1 bound to 127.0.0.1 only: the learner's own.
until ss -ltnH "sport = :$((master_port + 1))" | grep -q .; do
  alive
  sleep 0.2
done
if ss -ltnH "sport = :$((master_port + 1))" | awk '{print $4}' | grep -vq '^127\.0\.0\.1:'; then
  echo "the learner's store listens beyond 127.0.0.1:"
  ss -ltnH "sport = :$((master_port + 1))"
  exit 1
fi
checkpoints() { ls -d "$work"/learner/update-* 2> /dev/null | wc -l; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    alive
    [ $SECONDS -lt $deadline ] || {
      echo "timed out waiting for $what"
      exit 1
    }
    sleep 0.5
  done
}
has_checkpoint() { [ "$(checkpoints)" -ge 1 ]; }
wait_for 120 "a first checkpoint" has_checkpoint
resumes() { grep -c "resumed from" "$work/torchrun.log" || true; }

# 1. A rank killed: torchrun restarts the group, which resumes.
victim=$(rank_pid 1)
[ -n "$victim" ] || {
  echo "no rank 1 under torchrun"
  exit 1
}
echo "kill -9 rank 1 (pid $victim) after $(checkpoints) checkpoint(s)"
kill -KILL "$victim"
resumed_once() { [ "$(resumes)" -ge 2 ]; }  # both ranks of the new group
wait_for 90 "the restarted group to resume" resumed_once
echo "restarted and resumed: $(grep "resumed from" "$work/torchrun.log" | tail -n 1)"

# 2. A rank hung: the watchdog ends the group, torchrun restarts it.
new_rank1() { [ -n "$(rank_pid 1)" ] && [ "$(rank_pid 1)" != "$victim" ]; }
wait_for 30 "the new rank 1" new_rank1
hung=$(rank_pid 1)
echo "kill -STOP rank 1 (pid $hung)"
kill -STOP "$hung"
resumed_twice() { [ "$(resumes)" -ge 4 ]; }
wait_for 90 "the watchdog's restart" resumed_twice
kill -CONT "$hung" 2> /dev/null || true
grep -q "watchdog: .*exiting with code" "$work/torchrun.log" || {
  echo "the restart after SIGSTOP was not the watchdog's"
  exit 1
}
echo "the watchdog restarted the group after the hung rank"

# Greedy evaluations of the newest checkpoint until one solves CartPole.
best=0
deadline=$((SECONDS + 240))
while [ $SECONDS -lt $deadline ]; do
  alive
  if "$bin" evaluate --config "$config" --checkpoint "$work/learner" --episodes 100 --json \
    > "$work/evaluate.json" 2> /dev/null; then
    mean=$(sed -n 's/.*"mean_return": *\([0-9.]*\).*/\1/p' "$work/evaluate.json")
    best=$(awk -v a="$best" -v b="${mean:-0}" 'BEGIN {print (b > a ? b : a)}')
    awk -v m="${mean:-0}" 'BEGIN {exit !(m >= 475)}' && break
  fi
  sleep 2
done
echo "best greedy mean return $best over 100 episodes after $SECONDS s"
awk -v m="$best" 'BEGIN {exit !(m >= 475)}' || {
  echo "not solved"
  exit 1
}
