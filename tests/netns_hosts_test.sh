#!/usr/bin/env bash
# Three hosts on one machine: network namespaces joined by veth pairs and a
# bridge, with addresses that exist only inside them. Replay runs on host A
# (10.77.0.1), a 2-rank learner on host B (10.77.0.2), the actors on host C
# (10.77.0.3): the same binaries and one set of addresses, as in the README's
# "Many machines" example. Then, with `tc netem` adding 5 ms of delay and 1%
# loss on every host's link, host C is cut off for 10 s and must heal. The
# learner's checkpoints must solve CartPole (a greedy evaluation of 100
# episodes reaching 475).
#
#   tests/netns_hosts_test.sh RLSWARM_BINARY CONFIGS_DIR
#
# Needs root (CAP_NET_ADMIN); without it it exits 77, which ctest reports as
# skipped (label `netns`). Without the sch_netem module (a kernel without
# modules) the same delay and loss come from tests/lossy_wire.py instead: a
# TUN device per host and a user-space process forwarding between them
# (needs /dev/net/tun and python3; without them the links carry no delay or
# loss and the test says so; RLSWARM_NETNS_REQUIRE_NETEM=1 skips instead).
set -euo pipefail
bin=$1
configs=$2

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (CAP_NET_ADMIN) for network namespaces"
command -v ip > /dev/null || skip "no ip (iproute2)"
command -v tc > /dev/null || skip "no tc (iproute2)"

tag=rls$$
hub=${tag}hub
work=$(mktemp -d /tmp/netns_hosts.XXXXXX)
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2> /dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  for ns in $hub ${tag}a ${tag}b ${tag}c; do ip netns del "$ns" 2> /dev/null || true; done
  if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then
    rm -rf "$work"
  else
    echo "netns test failed (exit $rc); logs kept in $work"
    for f in "$work"/*.log; do
      echo "=== $f"
      tail -n 15 "$f"
    done
  fi
}
trap cleanup EXIT

ip netns add "$hub" 2> /dev/null || skip "cannot create a network namespace"
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
declare -A address=([a]=10.77.0.1 [b]=10.77.0.2 [c]=10.77.0.3)
# Each host's veth link to the bridge.
veths() {
  for h in a b c; do
    local ns=${tag}$h
    ip link add eth0 netns "$ns" type veth peer name "port-$h" netns "$hub"
    ip -n "$hub" link set "port-$h" master br0 up
    ip -n "$ns" addr add "${address[$h]}/24" dev eth0
    ip -n "$ns" link set eth0 up
  done
}
for h in a b c; do
  ip netns add "${tag}$h"
  ip -n "${tag}$h" link set lo up
done
veths
# Every host's link gets 5 ms of delay and 1% loss (both directions: on the
# host's side and on the bridge's).
link=netem
for h in a b c; do
  if ! ip netns exec "${tag}$h" tc qdisc add dev eth0 root netem delay 5ms loss 1% 2> /dev/null; then
    link=none
    break
  fi
  ip netns exec "$hub" tc qdisc add dev "port-$h" root netem delay 5ms loss 1%
done
# Without sch_netem: the same delay and loss from the user-space wire, which
# replaces the veth links (one TUN device a host, the wire forwarding).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ $link = none ] && [ -c /dev/net/tun ] && command -v python3 > /dev/null; then
  for h in a b c; do ip -n "${tag}$h" link del eth0; done
  python3 "$here/lossy_wire.py" --delay-ms 5 --loss 0.01 --ready "$work/wire.ready" \
    "tun-a=${tag}a=${address[a]}" "tun-b=${tag}b=${address[b]}" "tun-c=${tag}c=${address[c]}" \
    > "$work/wire.log" 2>&1 &
  wire=$!
  pids+=($wire)
  for _ in $(seq 100); do
    [ -f "$work/wire.ready" ] && break
    kill -0 $wire 2> /dev/null || break
    sleep 0.1
  done
  if [ -f "$work/wire.ready" ]; then
    link=wire
  else
    # No TUN devices here after all: back to the veth links, without loss.
    echo "the user-space wire did not start:"
    cat "$work/wire.log"
    kill $wire 2> /dev/null || true
    for h in a b c; do
      ip -n "${tag}$h" link del "tun-$h" 2> /dev/null || true
    done
    veths
  fi
fi
case $link in
  netem) echo "links: tc netem, 5 ms delay and 1% loss" ;;
  wire) echo "links: no sch_netem; tests/lossy_wire.py gives 5 ms delay and 1% loss" ;;
  none)
    echo "NOTE: no tc netem (no sch_netem module) and no working user-space wire (/dev/net/tun," \
      "python3): links without delay or loss"
    [ "${RLSWARM_NETNS_REQUIRE_NETEM:-0}" = 1 ] && skip "RLSWARM_NETNS_REQUIRE_NETEM=1 and no netem"
    ;;
esac
# Host C's cable, pulled and plugged back in.
cut_c() {
  if [ $link = wire ]; then ip -n "${tag}c" link set tun-c down; else ip -n "$hub" link set port-c down; fi
}
heal_c() {
  if [ $link = wire ]; then
    ip -n "${tag}c" link set tun-c up
  else
    ip -n "$hub" link set port-c up
  fi
}
echo "hosts up: A ${address[a]} (replay), B ${address[b]} (learner x2), C ${address[c]} (actors)"

# One config for every host: CartPole's, with the hosts' addresses.
overrides=(
  "replay.endpoints=[tcp://10.77.0.1:47000]"
  "learner.weights_endpoint=tcp://10.77.0.2:47100"
  "learner.weights_snapshot_endpoint=tcp://10.77.0.2:47101"
  "learner.master_addr=10.77.0.2"
  "learner.master_port=29577"
  "learner.strategy=full_shard"
  "learner.checkpoint_dir=$work/learner"
  "learner.checkpoint_interval=500"
  "replay.checkpoint_dir=$work/replay"
)
config=$configs/cartpole.yaml
on() {
  local host=$1 log=$2
  shift 2
  ip netns exec "${tag}$host" "$@" > "$work/$log.log" 2>&1 &
  pids+=($!)
}

on a replay "$bin" replay --config "$config" --shard 0 --bind tcp://10.77.0.1:47000 \
  "${overrides[@]}"
for r in 0 1; do
  on b "learner-$r" env RANK=$r WORLD_SIZE=2 "$bin" learner --config "$config" \
    "${overrides[@]}"
done
learner0=${pids[1]}
printf 'tcp://10.77.0.2:47100\ntcp://10.77.0.2:47101\n' > "$work/weights.ep"
for k in 0 1; do
  on c "actor-$k" "$bin" actor --config "$config" --actor-id $k --num-actors 2 \
    --weights-endpoint-file "$work/weights.ep" --metrics-file "$work/episodes-$k.jsonl" \
    "${overrides[@]}"
done

# Nothing listens beyond the hosts' own addresses: no wildcard listener (the
# learner's rendezvous store on rank 0 binds learner.master_addr only).
sleep 3
for h in a b; do
  if ip netns exec "${tag}$h" ss -ltnH | awk '{print $4}' |
    grep -E '^(\*|0\.0\.0\.0|\[::\]):'; then
    echo "host $h listens on every interface (above)"
    exit 1
  fi
done

# Learning, then host C cut off for 10 s, then learning again.
episodes() {
  for p in "${pids[@]}"; do
    kill -0 "$p" 2> /dev/null || {
      echo "a role exited early (pid $p)" >&2
      exit 1
    }
  done
  cat "$work"/episodes-*.jsonl 2> /dev/null | wc -l
}
deadline=$((SECONDS + 60))
until [ "$(episodes)" -ge 50 ]; do
  [ $SECONDS -lt $deadline ] || {
    echo "no episodes from host C"
    exit 1
  }
  sleep 1
done
echo "cutting host C off for 10 s after $(episodes) episodes"
cut_c
sleep 10
before=$(episodes)
heal_c
deadline=$((SECONDS + 60))
until [ "$(episodes)" -gt $((before + 20)) ]; do
  [ $SECONDS -lt $deadline ] || {
    echo "host C did not heal"
    exit 1
  }
  sleep 1
done
echo "host C healed: $(episodes) episodes"

# Greedy evaluations of the learner's newest checkpoint (100 episodes, a
# fraction of a second) until one solves CartPole, as launch's evaluator
# judges a run; DQN's greedy policy swings between checkpoints, so the best
# one counts, not the last. Over the lossy wire the learner makes ~45
# updates/s (each sample waits out the wire's delay), so 180 s is ~8 k
# updates, about what CartPole needs: a CI run of 2026-12-05 ran out of time
# (then passed on its retry), so the test allows 300 s.
best=0
deadline=$((SECONDS + 300))
while [ $SECONDS -lt $deadline ]; do
  if "$bin" evaluate --config "$config" --checkpoint "$work/learner" --episodes 100 --json \
    > "$work/evaluate.json" 2> /dev/null; then
    mean=$(sed -n 's/.*"mean_return": *\([0-9.]*\).*/\1/p' "$work/evaluate.json")
    best=$(awk -v a="$best" -v b="$mean" 'BEGIN {print (b > a ? b : a)}')
    awk -v m="$mean" 'BEGIN {exit !(m >= 475)}' && break
  fi
  episodes > /dev/null
  sleep 2
done
# The actors' last report of their writers' counters (cumulative).
dropped=0
for f in "$work"/actor-*.log; do
  d=$(grep -o 'dropped [0-9]*' "$f" | tail -n 1 | awk '{print $2 + 0}')
  dropped=$((dropped + ${d:-0}))
done
echo "best greedy mean return $best over 100 episodes after $SECONDS s;" \
  "actors' logs count $dropped dropped items"
if [ $link = wire ]; then
  # Its counts say the loss was real (and how much C's cut-off lost).
  kill -TERM $wire
  wait $wire || true
  echo "wire: $(tail -n 1 "$work/wire.log")"
  lost=$(sed -n 's/.*"lost": *\([0-9]*\).*/\1/p' "$work/wire.log")
  [ "${lost:-0}" -gt 0 ] || {
    echo "the wire lost nothing: no loss was applied"
    exit 1
  }
fi
awk -v m="$best" 'BEGIN {exit !(m >= 475)}' || {
  echo "not solved"
  exit 1
}
