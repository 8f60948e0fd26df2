#!/usr/bin/env bash
# Scaling benchmark: 1, 2, 4, ... --max-actors `rlswarm actor` processes (a few
# envs each) against one and against two `rlswarm replay` shards and one
# `rlswarm learner` (world 1) sampling from them, every role its own process
# on loopback (tcp://127.0.0.1, ports the kernel picks); prints one JSON
# object with one point per (shards, actors).
#
#   bench/scale.sh [--duration S] [--max-actors N] [--shards "1 2"]
#                  [--envs E] [--capacity C] [--warmup S] [--config FILE]
#                  [--binary PATH] [--keep DIR] [section.key=value ...]
#
# For each shard count the shards and the learner start once and keep running
# (the buffers fill and evict across the points); for each actor count K the
# script starts K actors, waits until all K serve their metrics and --warmup
# seconds more, then measures --duration seconds between two scrapes of every
# process's Prometheus endpoint (--metrics-port 0), stops the actors (SIGTERM)
# and reads their final counts from their logs. Per point:
#   env_steps_per_s, inserts_per_s, sampled_items_per_s: counter deltas over
#       the window (actors' rlswarm_actor_env_steps_total, shards'
#       rlswarm_replay_shard_inserted_total / _sampled_total);
#   sample_p50_ms, sample_p99_ms: nearest-rank percentiles, over the window's
#       learner log intervals (learner.log_interval_s, 0.25 s here), of the
#       learner's "sample X ms per update": the mean time an update waited for
#       its replay batch in that interval (prefetched while the previous update
#       trains: the part of the sample round trip training did not hide). Not
#       per-call percentiles: nothing in rlswarm records those;
#   shard_rss_mb / shard_peak_rss_mb: VmRSS / VmHWM of each shard at the
#       window's end (/proc/<pid>/status); memory_bound_mb: the bound each
#       shard must stay within (below); within_memory_bound: every shard's
#       peak RSS <= its bound;
#   dropped: sum of the actors' items_dropped in their exit log line;
#       dropped_in_window: its growth over the window (metrics);
#       transitions_unaccounted: at both scrapes, per actor, the items outside
#       what may be in flight: env steps - sent must lie in [0, num_envs *
#       n_step + writer_batch] (n-step windows, rows not yet handed over) and
#       sent - acknowledged - dropped in [0, (writer_max_buffered_batches + 4
#       in flight) * (writer_batch + num_envs)] (the writer's bounded buffer);
#       must be 0. writer_buffered_start/_end: the sum of the latter;
#       unacknowledged_at_exit: env steps - acknowledged - dropped in the exit
#       lines, minus the n-step windows: what was still buffered when the
#       writer's Flush(5 s) gave up (Close() then drops and counts it, after
#       the exit line is printed); inserted_minus_acknowledged: items the
#       shards stored beyond what the actors saw acknowledged (>= 0: delivery
#       is at least once);
#   learner_updates (and _per_s), learner_replay_waits: the learner keeps
#       sampling at every point;
#   shard_cpu_s, actors_cpu_s, learner_cpu_s: utime + stime from
#       /proc/<pid>/stat over the window; shard_cpu_us_per_item (per item
#       inserted or sampled) and actor_cpu_us_per_step stay flat when the rate
#       limiter holds the writers (they sleep; a busy loop would make them
#       grow with K).
# Memory bound of shard i (MiB): its own RSS once serving, before any client
# (code, LibTorch, heaps), + slots * (item bytes + bookkeeping bytes), slots =
# capacity rounded up to whole 4096-row chunks, item bytes from the
# signature (observation, action, reward, discount, next_observation),
# bookkeeping 80 B per slot (40 B metadata record, 24 B free list and FIFO
# links, 16 B uniform selector; 112 B for the prioritized sum tree), + 16 MiB
# (rpc/ZeroMQ buffers, sample replies, allocator slack) + 0.25 MiB per
# connected client (actors + learner).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
duration=12
max_actors=64
shard_counts="1 2"
envs=4
capacity=20000
warmup=2
config="$root/configs/cartpole.yaml"
binary="${RLSWARM_BUILD_DIR:-$root/build}/rlswarm"
keep=""
overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --max-actors) max_actors="$2"; shift 2 ;;
    --shards) shard_counts="$2"; shift 2 ;;
    --envs) envs="$2"; shift 2 ;;
    --capacity) capacity="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --config) config="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) overrides+=("$1"); shift ;;
  esac
done
[ -x "$binary" ] || { echo "scale.sh: no rlswarm binary at $binary (build first)" >&2; exit 1; }

work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  pids=()
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "scale.sh: $*" >&2; }
die() { log "$*"; keep=1; exit 1; }
hz=$(getconf CLK_TCK)

# Common overrides of every process.
common=(replay.capacity="$capacity" env.num_envs="$envs" log.level=info
        learner.checkpoint_interval=0 learner.log_interval_s=0.25 "${overrides[@]}")

# --- the item size and the per-shard memory bound ------------------------
printed="$("$binary" replay --config "$config" --shard 0 --print-config "${common[@]}")"
section_key() { awk -v s="$1:" -v k="$2:" '/^[a-z_]+:/ {in_s = ($1 == s)} in_s && $1 == k {print $2}' <<<"$printed"; }
env_name=$(section_key env name)
selector=$(section_key replay selector)
n_step=$(section_key actor n_step)
spi=$(section_key replay samples_per_insert)
writer_batch=$(section_key actor writer_batch)
writer_buffered_batches=$(section_key actor writer_max_buffered_batches)
writer_in_flight=4  # ReplayWriterOptions::max_in_flight (not a config key)
[ "$spi" != "~" ] || spi=null
row=$("$binary" envs | awk -v n="$env_name" '$1 == n')
[ -n "$row" ] || die "env $env_name not in 'rlswarm envs'"
item_bytes=$(awk '{
  shape = $2; dtype = $3; act = $4
  gsub(/[(),]/, " ", shape); n = 1; k = split(shape, d, " "); for (i = 1; i <= k; i++) n *= d[i]
  size = (dtype == "float32" || dtype == "int32") ? 4 : (dtype == "float64" || dtype == "int64") ? 8 : 1
  if (act ~ /^discrete/) a = 8
  else { s = act; sub(/^continuous/, "", s); gsub(/[(),]/, " ", s); a = 4; m = split(s, e, " "); for (i = 1; i <= m; i++) a *= e[i] }
  print 2 * n * size + a + 4 + 4 }' <<<"$row")
bookkeeping=80
[ "$selector" = "prioritized" ] && bookkeeping=112
slots=$(( (capacity + 4095) / 4096 * 4096 ))
fixed_mib=16
per_client_mib=0.25

# --- helpers -------------------------------------------------------------
wait_file() {  # FILE SECONDS PID
  local end=$((SECONDS + $2))
  while [ ! -s "$1" ]; do
    kill -0 "$3" 2>/dev/null || die "process $3 exited before writing $1 (see its log)"
    [ $SECONDS -lt "$end" ] || die "timed out waiting for $1"
    sleep 0.1
  done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# Sum of a metric over every sample in a scrape file.
msum() { awk -v m="$1" 'index($0, m "{") == 1 || index($0, m " ") == 1 {s += $NF} END {printf "%.0f", s}' "$2"; }
# Per-actor ledger of one actors scrape: prints "buffered violations", buffered =
# sum of sent - acknowledged - dropped (in the writers), violations = items
# outside what the writer and the n-step windows may hold.
ledger() {
  awk -v w_step="$((envs * n_step + writer_batch))" \
      -v w_buf="$(( (writer_buffered_batches + writer_in_flight) * (writer_batch + envs) ))" '
    /^rlswarm_actor_/ {
      split($1, a, "actor=\""); split(a[2], b, "\""); id = b[1]; m = $1; sub(/\{.*/, "", m)
      v[id, m] = $NF; ids[id] = 1 }
    END {
      for (id in ids) {
        st = v[id, "rlswarm_actor_env_steps_total"]; se = v[id, "rlswarm_actor_transitions_sent_total"]
        ac = v[id, "rlswarm_actor_transitions_acknowledged_total"]; dr = v[id, "rlswarm_actor_transitions_dropped_total"]
        buf = se - ac - dr; held = st - se; buffered += buf
        if (held < 0) bad -= held; if (held > w_step) bad += held - w_step
        if (buf < 0) bad -= buf; if (buf > w_buf) bad += buf - w_buf }
      printf "%d %d\n", buffered, bad }' "$1"
}
now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a - b}'; }
joinc() { local IFS=,; echo "$*"; }
# Stops the given pids: SIGTERM, then SIGKILL after $1 seconds.
stop_pids() {
  local grace=$1 p; shift
  for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
  local end=$((SECONDS + grace))
  for p in "$@"; do
    while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt "$end" ]; do sleep 0.1; done
    kill -KILL "$p" 2>/dev/null && log "pid $p killed after ${grace}s"
    wait "$p" 2>/dev/null || true
  done
  local keep_pids=() q
  for q in "${pids[@]}"; do
    local gone=0
    for p in "$@"; do [ "$q" = "$p" ] && gone=1; done
    [ $gone = 1 ] || keep_pids+=("$q")
  done
  pids=("${keep_pids[@]}")
}

points=()
for n in $shard_counts; do
  sdir="$work/shards-$n"
  rm -rf "$sdir"
  mkdir -p "$sdir"
  log "$n shard(s): starting the shards and the learner"
  shard_pids=()
  for ((i = 0; i < n; i++)); do
    "$binary" replay --config "$config" --shard "$i" --bind 'tcp://127.0.0.1:*' \
      --endpoint-file "$sdir/replay-$i.ep" --metrics-port 0 \
      --metrics-endpoint-file "$sdir/replay-$i.metrics" replay.num_shards="$n" "${common[@]}" \
      >"$sdir/replay-$i.log" 2>&1 &
    shard_pids+=($!); pids+=($!)
  done
  eps=()
  empty_rss=()
  for ((i = 0; i < n; i++)); do
    wait_file "$sdir/replay-$i.metrics" 60 "${shard_pids[$i]}"
    eps+=("$(cat "$sdir/replay-$i.ep")")
    empty_rss+=("$(status_kib "${shard_pids[$i]}" VmRSS)")
  done
  endpoints="[$(joinc "${eps[@]}")]"
  route=(replay.num_shards="$n" replay.endpoints="$endpoints")
  "$binary" learner --config "$config" --weights-endpoint-file "$sdir/weights.ep" \
    --metrics-port 0 --metrics-endpoint-file "$sdir/learner.metrics" "${route[@]}" "${common[@]}" \
    >"$sdir/learner.log" 2>&1 &
  learner_pid=$!; pids+=($!)
  wait_file "$sdir/learner.metrics" 120 "$learner_pid"
  wait_file "$sdir/weights.ep" 120 "$learner_pid"

  for ((k = 1; k <= max_actors; k *= 2)); do
    pd="$sdir/actors-$k"
    mkdir -p "$pd"
    log "$n shard(s), $k actor(s): starting"
    for ((i = 0; i < n; i++)); do
      curl -s --max-time 10 "$(cat "$sdir/replay-$i.metrics")" >"$pd/replay-$i.start"
    done
    t_start=$(now)
    actor_pids=()
    for ((a = 0; a < k; a++)); do
      "$binary" actor --config "$config" --actor-id "$a" --num-actors "$k" \
        --weights-endpoint-file "$sdir/weights.ep" --metrics-port 0 \
        --metrics-endpoint-file "$pd/actor-$a.metrics" "${route[@]}" "${common[@]}" \
        >"$pd/actor-$a.log" 2>&1 &
      actor_pids+=($!); pids+=($!)
    done
    for ((a = 0; a < k; a++)); do wait_file "$pd/actor-$a.metrics" 300 "${actor_pids[$a]}"; done
    start_s=$(fsub "$(now)" "$t_start")
    sleep "$warmup"

    urls=()
    for ((a = 0; a < k; a++)); do urls+=("$(cat "$pd/actor-$a.metrics")"); done
    # One snapshot: every counter and CPU clock, tagged $1 (a or b).
    snapshot() {
      local tag=$1 i
      local t0; t0=$(now)
      curl -s --max-time 10 "${urls[@]}" >"$pd/actors.$tag" || true
      for ((i = 0; i < n; i++)); do
        curl -s --max-time 10 "$(cat "$sdir/replay-$i.metrics")" >"$pd/replay-$i.$tag" || true
      done
      curl -s --max-time 10 "$(cat "$sdir/learner.metrics")" >"$pd/learner.$tag" || true
      local t1; t1=$(now)
      {
        echo "t $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f", (a + b) / 2}')"
        echo "log $(wc -c <"$sdir/learner.log")"
        echo "learner_cpu $(cpu_ticks "$learner_pid")"
        local s=0 p
        for p in "${actor_pids[@]}"; do s=$((s + $(cpu_ticks "$p"))); done
        echo "actors_cpu $s"
        for ((i = 0; i < n; i++)); do echo "shard_cpu_$i $(cpu_ticks "${shard_pids[$i]}")"; done
      } >"$pd/snap.$tag"
    }
    sv() { awk -v k="$1" '$1 == k {print $2}' "$pd/snap.$2"; }
    snapshot a
    sleep "$duration"
    snapshot b
    window=$(fsub "$(sv t b)" "$(sv t a)")

    d() { echo $(( $(msum "$1" "$2.b") - $(msum "$1" "$2.a") )); }
    steps=$(d rlswarm_actor_env_steps_total "$pd/actors")
    dropped_window=$(d rlswarm_actor_transitions_dropped_total "$pd/actors")
    read -r buffered_a bad_a < <(ledger "$pd/actors.a")
    read -r buffered_b bad_b < <(ledger "$pd/actors.b")
    upd=$(d rlswarm_learner_rank_updates_total "$pd/learner")
    waits=$(d rlswarm_learner_rank_replay_waits_total "$pd/learner")
    ins=0; smp=0
    shard_rss=(); shard_peak=(); shard_size=(); shard_cpu=(); bounds=(); within=true
    clients=$((k + 1))
    for ((i = 0; i < n; i++)); do
      ins=$((ins + $(d rlswarm_replay_shard_inserted_total "$pd/replay-$i")))
      smp=$((smp + $(d rlswarm_replay_shard_sampled_total "$pd/replay-$i")))
      shard_size+=("$(msum rlswarm_replay_shard_size "$pd/replay-$i.b")")
      rss=$(status_kib "${shard_pids[$i]}" VmRSS)
      peak=$(status_kib "${shard_pids[$i]}" VmHWM)
      bound=$(awk -v e="${empty_rss[$i]}" -v s="$slots" -v b="$((item_bytes + bookkeeping))" \
        -v f="$fixed_mib" -v c="$clients" -v pc="$per_client_mib" \
        'BEGIN {printf "%.1f", e / 1024 + s * b / 1048576 + f + c * pc}')
      shard_rss+=("$(awk -v r="$rss" 'BEGIN {printf "%.1f", r / 1024}')")
      shard_peak+=("$(awk -v r="$peak" 'BEGIN {printf "%.1f", r / 1024}')")
      bounds+=("$bound")
      awk -v p="$peak" -v b="$bound" 'BEGIN {exit !(p / 1024 <= b)}' || within=false
      shard_cpu+=("$(awk -v a="$(sv "shard_cpu_$i" a)" -v b="$(sv "shard_cpu_$i" b)" -v hz="$hz" \
        'BEGIN {printf "%.2f", (b - a) / hz}')")
    done
    shard_cpu_total=$(printf '%s\n' "${shard_cpu[@]}" | awk '{s += $1} END {printf "%.3f", s}')
    actors_cpu=$(awk -v a="$(sv actors_cpu a)" -v b="$(sv actors_cpu b)" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
    learner_cpu=$(awk -v a="$(sv learner_cpu a)" -v b="$(sv learner_cpu b)" -v hz="$hz" 'BEGIN {printf "%.2f", (b - a) / hz}')
    # The learner's log lines written during the window.
    off_a=$(sv log a); off_b=$(sv log b)
    read -r p50 p99 nint < <(tail -c +$((off_a + 1)) "$sdir/learner.log" | head -c $((off_b - off_a)) |
      sed -n 's/.*| sample \([0-9.]*\) ms, train.*/\1/p' | sort -g |
      awk '{v[NR] = $1} END {
        if (NR == 0) {print "null null 0"; exit}
        i50 = int(0.50 * NR); if (i50 < 0.50 * NR) i50++; i99 = int(0.99 * NR); if (i99 < 0.99 * NR) i99++
        printf "%s %s %d\n", v[i50], v[i99], NR }')

    # Stop the actors; their last log line has the final counts.
    stop_pids 30 "${actor_pids[@]}"
    sleep 0.3  # the shards finish the inserts in flight
    ins_all=0
    for ((i = 0; i < n; i++)); do
      curl -s --max-time 10 "$(cat "$sdir/replay-$i.metrics")" >"$pd/replay-$i.end"
      ins_all=$((ins_all + $(msum rlswarm_replay_shard_inserted_total "$pd/replay-$i.end") - \
        $(msum rlswarm_replay_shard_inserted_total "$pd/replay-$i.start")))
    done
    read -r f_held f_acked f_dropped f_missing unacked_exit < <(cat "$pd"/actor-*.log |
      sed -n 's/.*stopped after \([0-9]*\) steps: \([0-9]*\) transitions acknowledged, \([0-9]*\) dropped.*/\1 \2 \3/p' |
      awk -v k="$k" -v w="$((envs * (n_step - 1)))" '{
        a += $2; d += $3; n++; p = $1 - $2 - $3; held += p
        if (p > w) u += p - w } END {printf "%d %d %d %d %d\n", held, a, d, k - n, u}')
    extra=$((ins_all - f_acked))
    kill -0 "$learner_pid" 2>/dev/null || die "the learner died (see $sdir/learner.log)"

    point=$(awk -v n="$n" -v k="$k" -v envs="$envs" -v w="$window" -v steps="$steps" -v ins="$ins" \
      -v smp="$smp" -v upd="$upd" -v waits="$waits" -v p50="$p50" -v p99="$p99" -v nint="$nint" \
      -v rss="$(joinc "${shard_rss[@]}")" -v peak="$(joinc "${shard_peak[@]}")" \
      -v size="$(joinc "${shard_size[@]}")" -v bounds="$(joinc "${bounds[@]}")" -v within="$within" \
      -v dropped="$f_dropped" -v unacc="$((bad_a + bad_b))" -v extra="$extra" -v missing="$f_missing" -v uexit="$unacked_exit" \
      -v dwin="$dropped_window" -v bufa="$buffered_a" -v bufb="$buffered_b" \
      -v scpu="$(joinc "${shard_cpu[@]}")" -v scpu_t="$shard_cpu_total" -v acpu="$actors_cpu" \
      -v lcpu="$learner_cpu" -v start="$start_s" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" 'BEGIN {
        cpi = (ins + smp > 0) ? 1e6 * scpu_t / (ins + smp) : 0
        cps = (steps > 0) ? 1e6 * acpu / steps : 0
        split(bounds, b, ","); bmax = b[1]; for (i in b) if (b[i] + 0 > bmax + 0) bmax = b[i]
        printf "{\"shards\": %d, \"actors\": %d, \"envs_per_actor\": %d, \"window_s\": %.2f, ", n, k, envs, w
        printf "\"env_steps_per_s\": %.0f, \"inserts_per_s\": %.0f, \"sampled_items_per_s\": %.0f, ", steps / w, ins / w, smp / w
        printf "\"sample_p50_ms\": %s, \"sample_p99_ms\": %s, \"sample_intervals\": %d, ", p50, p99, nint
        printf "\"shard_size\": [%s], \"shard_rss_mb\": [%s], \"shard_peak_rss_mb\": [%s], ", size, rss, peak
        printf "\"memory_bound_mb\": %s, \"memory_bound_per_shard_mb\": [%s], \"within_memory_bound\": %s, ", bmax, bounds, within
        printf "\"dropped\": %d, \"dropped_in_window\": %d, \"transitions_unaccounted\": %d, ", dropped, dwin, unacc
        printf "\"writer_buffered_start\": %d, \"writer_buffered_end\": %d, \"unacknowledged_at_exit\": %d, ", bufa, bufb, uexit
        printf "\"inserted_minus_acknowledged\": %d, \"actors_without_final_counts\": %d, ", extra, missing
        printf "\"learner_updates\": %d, \"learner_updates_per_s\": %.0f, \"learner_replay_waits\": %d, ", upd, upd / w, waits
        printf "\"shard_cpu_s\": [%s], \"shard_cpu_us_per_item\": %.3f, ", scpu, cpi
        printf "\"actors_cpu_s\": %.2f, \"actor_cpu_us_per_step\": %.1f, \"learner_cpu_s\": %.2f, ", acpu, cps, lcpu
        printf "\"actors_start_s\": %.1f, \"loadavg\": \"%s\"}", start, load }')
    log "$point"
    points+=("$point")
  done
  stop_pids 30 "$learner_pid" "${shard_pids[@]}"
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "{\"bench\": \"scale\", \"env\": \"$env_name\", \"envs_per_actor\": $envs, \"capacity_per_shard\": $capacity, \"selector\": \"$selector\", \"samples_per_insert\": ${spi:-null}, \"item_bytes\": $item_bytes, \"bookkeeping_bytes_per_slot\": $bookkeeping, \"slots\": $slots, \"memory_overhead\": \"empty-shard RSS + ${fixed_mib} MiB + ${per_client_mib} MiB per client\", \"duration_s\": $duration, \"cpus\": $(nproc), \"loadavg_end\": \"$load\", \"points\": [$(joinc "${points[@]}")]}"
