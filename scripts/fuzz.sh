#!/usr/bin/env bash
# Fuzzes the rpc wire format (rpc/fuzz/wire_fuzzer.cc: DecodeHeader,
# PeekRequestId and the server's whole receive check, CheckPayloadFrames and
# Payload views) with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]      (default 60 s)
#
# Builds with clang++ directly (not CMake) into build-fuzz/, writes a seed
# corpus of valid messages, and runs for SECONDS. The corpus it grows is kept
# in build-fuzz/corpus/ for the next run. Exits non-zero if the fuzzer finds a
# crash, a sanitizer report, an uncaught exception, an invariant violation,
# a single allocation over 256 MB or an input taking over 10 s; the input is
# saved in build-fuzz/artifacts/. Reproduce with
#   build-fuzz/wire_fuzzer build-fuzz/artifacts/crash-...
# Needs clang and libclang-rt-14-dev (scripts/setup.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
out=${RLSWARM_FUZZ_DIR:-build-fuzz}
cxx=${RLSWARM_FUZZ_CXX:-clang++}

sources=(rpc/fuzz/wire_fuzzer.cc rpc/wire.cc common/payload.cc rpc/internal/header_peek.cc
  common/errors.cc common/dtype.cc)
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I. -DMSGPACK_DEFAULT_API_VERSION=3)
sanitizers=(-fsanitize=address,undefined -fno-sanitize-recover=all)

# Rebuilds `binary` if it is missing or older than any input.
needs_build() {
  local binary=$1 f
  [ -x "$binary" ] || return 0
  for f in "${sources[@]}" rpc/wire.h common/payload.h rpc/internal/header_peek.h common/errors.h \
    common/dtype.h rpc/fuzz/wire.dict "$0"; do
    [ "$f" -nt "$binary" ] && return 0
  done
  return 1
}

mkdir -p "$out/corpus" "$out/artifacts"
pids=()
if needs_build "$out/wire_fuzzer"; then
  echo "fuzz: building $out/wire_fuzzer"
  "$cxx" "${flags[@]}" "${sanitizers[@]}" -fsanitize=fuzzer "${sources[@]}" \
    -o "$out/wire_fuzzer" &
  pids+=($!)
fi
if needs_build "$out/wire_fuzzer_seeds"; then
  "$cxx" "${flags[@]}" -DRLSWARM_WIRE_FUZZER_SEEDS "${sources[@]}" -o "$out/wire_fuzzer_seeds" &
  pids+=($!)
fi
for pid in "${pids[@]}"; do wait "$pid"; done

rm -rf "$out/seeds"
mkdir -p "$out/seeds"
"$out/wire_fuzzer_seeds" "$out/seeds"

echo "fuzz: running for ${seconds}s"
status=0
"$out/wire_fuzzer" "$out/corpus" "$out/seeds" \
  -dict=rpc/fuzz/wire.dict \
  -max_total_time="$seconds" \
  -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 \
  -artifact_prefix="$out/artifacts/" \
  -print_final_stats=1 "$@" || status=$?

if [ "$status" -ne 0 ]; then
  echo "fuzz: FAILED (exit $status); inputs in $out/artifacts/:" >&2
  ls -l "$out/artifacts/" >&2
  exit "$status"
fi
echo "fuzz: no crash in ${seconds}s; corpus: $(ls "$out/corpus" | wc -l) inputs in $out/corpus"
