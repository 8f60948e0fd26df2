#!/usr/bin/env bash
# The GPU check: the most evidence about the CUDA/NCCL learner from one short
# window on a lent GPU machine (15 minutes of device time in all, its start
# included, 10 minutes per command). One call builds what it needs on a
# machine that has none of this project's third-party libraries, runs the
# GPU checks, and ends with a verdict table: one row per step (ok / FAIL /
# TIMEOUT / skipped, its seconds, what it found), under one shared deadline
# (--budget, 540 s by default) with every step bounded by `timeout`.
#
# Prepare on a Debian 12 machine with scripts/gpu_bundle.sh, carry
# .gpu-bundle/ with the working tree, then run from the repository root:
#
#   scripts/gpu_check.sh                 # on the GPU machine
#   scripts/gpu_check.sh --rehearse      # anywhere without a GPU: a dry run
#
# Steps (each prints "=== [step] ..." and ends ok / FAIL / TIMEOUT / skipped):
#   preflight  < 15 s: GPU, driver, nvcc, python3's torch (its CUDA, the NCCL
#              it loads, the GPUs it sees), the headers the build will read
#              (ProcessGroupNCCL.hpp preprocessed with the build's include
#              order: nccl.h, cuda_runtime_api.h, cuBLAS, cuSPARSE, cuSOLVER
#              from torch's nvidia-* wheels), nccl.h's NCCL_VERSION_CODE
#              against the loaded library's, cmake, ninja, the compiler,
#              disk, the bundle; anything missing stops the run with the table
#   unpack     .gpu-bundle/debs/*.deb -> BUILD_DIR/deps with dpkg -x (python
#              fallback without dpkg), never into /; then the fix-ups: /lib
#              merged into /usr/lib, absolute symlinks and the pkg-config
#              files' /usr pointed into deps, a directory of the runtime
#              libraries for LD_LIBRARY_PATH, BUILD_DIR/env.sh
#   probe      can this machine use those libraries? glibc and libstdc++
#              symbol versions against what the bundle needs, every library
#              loaded (ctypes), and a tiny program compiled, linked and run
#              against them with this machine's compiler; stops here if not
#   configure  cmake -G Ninja Release, RLSWARM_WITH_CUDA=ON, benches on,
#              CMAKE_PREFIX_PATH = python3's torch, then the bundle;
#              TORCH_CUDA_ARCH_LIST from the GPUs (9.0 without one)
#   build      ninja learner_tests learner_unit_tests learner_bench rlswarm, nothing else
#   origins    where CMake found each package, which headers the build read
#              from the system's /usr/include, what the binaries load (ldd)
#   cuda_primitives  learner_tests --gtest_filter='CudaPrimitives*' (< 30 s):
#              the adapter's collectives on CUDA tensors through a world-1
#              NCCL group (f32, f64, bf16, each reduce-scatter path), storage
#              take/adopt/reallocate keeping data and device, the host time a
#              collective's Wait() blocks behind a ~50 ms kernel (~0), NCCL's
#              device timings (> 0), a staged batch and a device-to-host copy
#              while the compute stream is busy, PeakMemoryMeter as a fresh
#              process's first CUDA call
#   e2e        < 90 s: `rlswarm launch configs/cartpole.yaml
#              learner.device=cuda` must solve; MinAtar Breakout trains
#              --e2e-seconds (60) with the learner on the GPU and, at the same
#              time, on the CPU: updates/s of each
#   bench      learner_bench --device cuda --worlds 1, trimmed (~1 min): the
#              plain path (no group) and, with --backend nccl, the sharded
#              path through a 1-rank NCCL group, beside plain LibTorch
#   cuda_tests the other *Cuda* tests (NCCL training against plain CPU
#              training, the DQN learner on CUDA), with the time left
#   tests      the whole CPU suite, only with --cpu-tests
# A failed step does not stop the later ones that do not depend on it; the
# exit status is 1 if any step failed. Output: BUILD_DIR/gpu_check/
# (log.txt, summary.txt = the verdict table, *.log, *.json, e2e/); when $OUT
# is set, the log, the table and the JSON files are copied there.
#
# --rehearse (automatic when nvidia-smi is missing or sees no GPU): uses
# .venv-pypi/bin/python's torch as "the machine's torch", runs the preflight
# (GPU lines skipped), unpacks, probes, configures and builds exactly as on
# the GPU machine, checks that the CudaPrimitives tests skip, runs the e2e
# step with CPU learners (CartPole must solve, Breakout --e2e-seconds 20)
# and a small CPU learner_bench, and skips cuda_tests. Compiles run under
# nice -n 19 with -j2 (--jobs), and the deadline is hours instead of
# minutes. As root on Debian it first hides this machine's copies of the
# bundled -dev packages, and Debian's libtorch-dev, as the GPU machine lacks
# them: the script re-runs itself in a private mount namespace (unshare -m)
# with a read-only overlay on /usr whose whiteouts hide those packages'
# files (headers, CMake and pkg-config files, .so links, .a; not the runtime
# libraries). Nothing outside that namespace changes. --no-hide turns it off.
#
# Status: not yet run on a GPU machine. Rehearsed (--rehearse) on the
# project's Debian 12 machine (bench/README.md, "GPU check").
#
# Usage: scripts/gpu_check.sh [--rehearse] [--build-dir DIR] [--jobs N]
#                             [--budget SECONDS] [--e2e-seconds S] [--cpu-tests]
#                             [--until STEP] [--no-hide]
# (--until preflight|unpack|probe|configure|build stops after that step.)
# Env: PYTHON (default python3), CXX (default c++), TORCH_CUDA_ARCH_LIST.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd -P)
T0=$(date +%s)
orig_args=("$@")

rehearse=0 build_dir=build-gpu jobs="" budget="" cpu_tests=0 why_rehearse="" until="" hide=1
e2e_seconds=""
while [ $# -gt 0 ]; do
  case $1 in
    --rehearse) rehearse=1; why_rehearse="--rehearse" ;;
    --build-dir) build_dir=$2; shift ;;
    --build-dir=*) build_dir=${1#*=} ;;
    --jobs) jobs=$2; shift ;;
    --jobs=*) jobs=${1#*=} ;;
    --budget) budget=$2; shift ;;
    --budget=*) budget=${1#*=} ;;
    --cpu-tests) cpu_tests=1 ;;
    --skip-tests) cpu_tests=0 ;;
    --e2e-seconds) e2e_seconds=$2; shift ;;
    --e2e-seconds=*) e2e_seconds=${1#*=} ;;
    --no-hide) hide=0 ;;
    --until) until=$2; shift ;;
    --until=*) until=${1#*=} ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ $rehearse -eq 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    rehearse=1; why_rehearse="nvidia-smi not found"
  elif ! nvidia-smi -L >/dev/null 2>&1; then
    rehearse=1; why_rehearse="nvidia-smi sees no GPU"
  fi
fi

case $build_dir in /*) BUILD=$build_dir ;; *) BUILD=$REPO/$build_dir ;; esac
DEPS=$BUILD/deps                           # the unpacked .debs
LIBDIR=$DEPS/usr/lib/x86_64-linux-gnu      # their libraries
RUNTIME=$DEPS/runtime                      # what LD_LIBRARY_PATH gets
LOGDIR=$BUILD/gpu_check
BUNDLE=$REPO/.gpu-bundle
if [ $rehearse -eq 1 ]; then
  PY=${PYTHON:-$REPO/.venv-pypi/bin/python}
  jobs=${jobs:-2}
  budget=${budget:-10800}
  NICE=(nice -n 19)
else
  PY=${PYTHON:-python3}
  jobs=${jobs:-$(nproc)}
  budget=${budget:-540}                    # one 10-minute command, with a margin
  NICE=()
fi
CXX_BIN=${CXX:-c++}
DEADLINE=$((T0 + budget))
# ldconfig lives in sbin, which a non-root PATH may lack.
PATH=$PATH:/usr/sbin:/sbin
# CUDA's tools where the toolkit is installed but not on PATH.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  PATH=/usr/local/cuda/bin:$PATH
fi

# Rehearsal: hide this machine's copies of what the GPU machine lacks (see
# the header), by re-running this script in a mount namespace.
HIDDEN=${RLSWARM_GPU_CHECK_HIDDEN:-}
hide_packages() {  # the installed packages to hide, one a line
  local p
  {
    awk '/^  [a-z0-9.+-]+-dev / {print $1}' "$BUNDLE/MANIFEST" 2>/dev/null
    # Debian's LibTorch, googletest's sources, the -dev packages the bundled
    # ones depend on but the bundle does not carry, every Boost -dev.
    echo libtorch-dev googletest libsodium-dev libpgm-dev libnorm-dev libkrb5-dev libbsd-dev \
      libmd-dev libhiredis-dev libibverbs-dev | tr ' ' '\n'
    dpkg-query -W -f='${Package}\n' 'libboost*-dev' 2>/dev/null
  } | sort -u | while read -r p; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' && echo "$p"
  done
}
if [ $rehearse -eq 1 ] && [ $hide -eq 1 ] && [ -z "$HIDDEN" ]; then
  if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null && command -v dpkg-query >/dev/null &&
     [ -f "$BUNDLE/MANIFEST" ]; then
    WH=$BUILD/hide-usr
    mapfile -t hide_list < <(hide_packages)
    stamp="$(dpkg-query -W -f='${Package} ${Version}\n' "${hide_list[@]}" 2>/dev/null)"
    if [ ! -f "$WH.stamp" ] || [ "$(cat "$WH.stamp")" != "$stamp" ]; then
      rm -rf "$WH" "$WH.stamp"
      mkdir -p "$WH"
      # Whiteouts (character devices 0:0) for every non-directory the
      # packages own under /usr (/lib is /usr/lib on Debian 12).
      dpkg -L "${hide_list[@]}" 2>/dev/null | "${PYTHON:-$REPO/.venv-pypi/bin/python}" -c '
import os, stat, sys
top = sys.argv[1]
n = 0
for line in sys.stdin:
    p = line.rstrip("\n")
    for a, b in (("/lib/", "/usr/lib/"), ("/bin/", "/usr/bin/"), ("/sbin/", "/usr/sbin/")):
        if p.startswith(a):
            p = b + p[len(a):]
    if not p.startswith("/usr/") or (os.path.isdir(p) and not os.path.islink(p)):
        continue
    if not os.path.lexists(p):
        continue
    w = os.path.join(top, p[len("/usr/"):])
    os.makedirs(os.path.dirname(w), exist_ok=True)
    if not os.path.lexists(w):
        os.mknod(w, stat.S_IFCHR | 0o000, os.makedev(0, 0))
        n += 1
print(n)' "$WH" > "$WH.count" && echo "$stamp" > "$WH.stamp"
    fi
    if [ -f "$WH.stamp" ] &&
       unshare --mount --propagation private mount -t overlay rlswarm-hide -o "ro,lowerdir=$WH:/usr" /usr 2>/dev/null; then
      RLSWARM_GPU_CHECK_HIDDEN="$(cat "$WH.count") files of ${#hide_list[@]} packages (${hide_list[*]})"
      export RLSWARM_GPU_CHECK_HIDDEN
      exec unshare --mount --propagation private -- bash -c \
        'mount -t overlay rlswarm-hide -o "ro,lowerdir=$1:/usr" /usr && shift && exec "$@"' \
        _ "$WH" bash "$REPO/scripts/gpu_check.sh" "${orig_args[@]}"
    fi
    HIDDEN="not hidden: the overlay on /usr could not be mounted"
  else
    HIDDEN="not hidden: needs root, unshare, dpkg and .gpu-bundle/MANIFEST"
  fi
fi

mkdir -p "$LOGDIR" || exit 1
rm -rf "${LOGDIR:?}"/*
LOG=$LOGDIR/log.txt
exec 3>&1 4>&2
exec > >(tee -a "$LOG") 2>&1
TEE_PID=$!

# ---------------------------------------------------------------- helpers
left() { echo $((DEADLINE - $(date +%s))); }
# tmo CAP RESERVE CMD...: run CMD under timeout, for at most CAP seconds and
# leaving RESERVE seconds of the deadline to the steps after it.
tmo() {
  local cap=$1 reserve=$2 t
  shift 2
  t=$(($(left) - reserve))
  [ $t -gt "$cap" ] && t=$cap
  if [ $t -lt 10 ]; then
    echo "gpu_check: no time left for: $*"
    return 124
  fi
  timeout -k 10 "$t" "$@"
}
names=() results=() seconds=()
failed=0
declare -A status=() note=()
# step NAME FUNCTION ARGS...: runs it, records ok / FAIL / TIMEOUT / skipped
# and the seconds. A function returns 0 (ok), 124/137 (timeout), 3 (skipped
# on purpose) or anything else (failed), and may leave a one-line summary
# for the verdict table in note[NAME].
step() {
  local name=$1 t0 rc res dt
  shift
  t0=$(date +%s)
  echo
  echo "=== [$name] $(date -u +%H:%M:%S) UTC, $(left) s left"
  "$@"
  rc=$?
  dt=$(($(date +%s) - t0))
  case $rc in
    0) res=ok ;;
    3) res=skipped ;;
    124|137) res=TIMEOUT; failed=1 ;;
    *) res=FAIL; failed=1 ;;
  esac
  status[$name]=$res
  names+=("$name"); results+=("$res"); seconds+=("$dt")
  echo "=== [$name] $res in ${dt} s${note[$name]:+: ${note[$name]}}"
}
skip() {  # skip NAME WHY
  echo
  echo "=== [$1] skipped: $2"
  status[$1]=skipped
  note[$1]=$2
  names+=("$1"); results+=("skipped"); seconds+=("-")
}
ok() { [ "${status[$1]:-}" = ok ]; }
version_ge() {  # version_ge A B: A >= B
  [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]
}

# The verdict table: one row per step (verdict, seconds, what it found), the
# overall verdict last. Also in BUILD_DIR/gpu_check/summary.txt.
finish() {
  local total=$(($(date +%s) - T0)) i verdict=PASS mode=gpu
  [ $failed -eq 0 ] || verdict=FAIL
  [ $rehearse -eq 1 ] && mode=rehearsal
  {
    echo
    echo "=== gpu_check verdict ($mode, $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)$(git -C "$REPO" diff --quiet 2>/dev/null || echo '+changes'))"
    printf '%-16s %-8s %6s  %s\n' step verdict seconds "what it found"
    for i in "${!names[@]}"; do
      printf '%-16s %-8s %6s  %s\n' "${names[$i]}" "${results[$i]}" "${seconds[$i]}" \
        "${note[${names[$i]}]:-}"
    done
    printf '%-16s %-8s %6s\n' total "$verdict" "$total"
  } | tee "$LOGDIR/summary.txt"
  # Let tee write the last lines before copying the log.
  exec 1>&3 2>&4
  wait "$TEE_PID" 2>/dev/null
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    mkdir -p "$OUT/gpu_check"
    cp "$LOGDIR"/summary.txt "$LOGDIR"/log.txt "$OUT/gpu_check/" 2>/dev/null
    cp "$LOGDIR"/*.json "$OUT/gpu_check/" 2>/dev/null
    [ -f "$BUILD/CMakeCache.txt" ] && cp "$BUILD/CMakeCache.txt" "$OUT/gpu_check/"
  fi
  [ $failed -eq 0 ]
  exit $?
}

# ---------------------------------------------------------------- steps
NGPU=0
TORCH_PREFIX="" TORCH_ROOT=""
# check NAME OK|MISSING|WARN|skipped TEXT: one preflight line; MISSING stops
# the run after the preflight.
PREFLIGHT_MISSING=()
check() {
  printf '  %-8s %-14s %s\n' "$2" "$1" "$3"
  [ "$2" = MISSING ] && PREFLIGHT_MISSING+=("$1")
  return 0
}

# Everything the later steps need, in seconds, before any of them spends the
# machine's time: the GPU and its driver, the CUDA toolkit, python3's torch
# (its CUDA, the NCCL it loads, the GPUs it sees), the headers the build will
# read for NCCL and the CUDA libraries (ProcessGroupNCCL.hpp preprocessed
# with the build's include order) and nccl.h's version against the loaded
# library's, compiler and build tools, disk, the bundle. Stops the run with
# the verdict table when anything is missing.
preflight() {
  local out prc free_gib
  echo "mode: $([ $rehearse -eq 1 ] && echo "rehearsal ($why_rehearse)" || echo gpu), repo $REPO, build dir $BUILD, budget ${budget} s, -j$jobs"
  [ $rehearse -eq 1 ] && echo "this machine's packages that the GPU machine lacks: ${HIDDEN:-not hidden (--no-hide)}"
  echo "machine: $(uname -srm), $(grep -E '^PRETTY_NAME=' /etc/os-release 2>/dev/null | cut -d= -f2 | tr -d '"'), $(nproc) cpus, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(ldd --version 2>&1 | head -1 | grep -oE '[0-9.]+$' | sed 's/^/glibc /')"

  local gpus="" driver="" cuda_driver=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    gpus=$(timeout 10 nvidia-smi --query-gpu=index,name,memory.total,compute_cap --format=csv,noheader 2>/dev/null)
    driver=$(timeout 10 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
    cuda_driver=$(timeout 10 nvidia-smi 2>/dev/null | grep -oE 'CUDA Version: [0-9.]+' | head -1)
  fi
  if [ -n "$gpus" ]; then
    check gpu OK "$(echo "$gpus" | wc -l) x $(echo "$gpus" | head -1 | cut -d, -f2- | sed 's/^ //')"
    check driver OK "$driver ($cuda_driver)"
  elif [ $rehearse -eq 1 ]; then
    check gpu skipped "none on this machine (rehearsal)"
  else
    check gpu MISSING "nvidia-smi lists none"
  fi
  if command -v nvcc >/dev/null 2>&1; then
    check nvcc OK "$(nvcc --version | grep -oE 'release [0-9.]+' | head -1) ($(command -v nvcc))"
  else
    check nvcc MISSING "not on PATH or in /usr/local/cuda/bin (torch's CMake needs the toolkit)"
  fi

  out=$(timeout 60 "$PY" - 2>"$LOGDIR/torch_info.stderr" <<'PYEOF'
import glob, os, sys
import torch
root = os.path.dirname(torch.__file__)
site = os.path.dirname(root)
print("TORCH", torch.__version__, "cuda", torch.version.cuda,
      "cxx11_abi", int(torch._C._GLIBCXX_USE_CXX11_ABI))
try:
    v = torch.cuda.nccl.version()
    print("NCCL", ".".join(map(str, v)) if isinstance(v, tuple) else v)
except Exception as e:
    print("NCCL unavailable:", e)
print("DEVICES", torch.cuda.device_count() if torch.cuda.is_available() else 0)
print("PREFIX", torch.utils.cmake_prefix_path)
print("ROOT", root)
inc = glob.glob(os.path.join(site, "nvidia", "cu[0-9]*", "include"))
inc += [d for d in (os.path.join(site, "nvidia", "nccl", "include"),) if os.path.isdir(d)]
print("WHEEL_INCLUDES", " ".join(inc))
PYEOF
  )
  prc=$?
  if [ $prc -ne 0 ]; then
    check torch MISSING "$PY cannot import torch: $(tail -1 "$LOGDIR/torch_info.stderr")"
  else
    NGPU=$(echo "$out" | awk '/^DEVICES / {print $2}')
    TORCH_PREFIX=$(echo "$out" | awk '/^PREFIX / {print $2}')
    TORCH_ROOT=$(echo "$out" | awk '/^ROOT / {print $2}')
    local torch_line nccl_lib wheel_includes
    torch_line=$(echo "$out" | awk '/^TORCH / {$1 = ""; print substr($0, 2)}')
    nccl_lib=$(echo "$out" | awk '/^NCCL / {print $2}')
    wheel_includes=$(echo "$out" | awk '/^WHEEL_INCLUDES/ {$1 = ""; print substr($0, 2)}')
    check torch OK "$torch_line, sees $NGPU GPU(s) ($PY)"
    [ -f "$TORCH_PREFIX/Torch/TorchConfig.cmake" ] ||
      check torch-cmake MISSING "no Torch/TorchConfig.cmake under $TORCH_PREFIX"
    if [ $rehearse -eq 0 ] && [ "${NGPU:-0}" -lt 1 ]; then
      check torch-gpus MISSING "nvidia-smi lists a GPU but torch sees none"
    fi
    # The headers the build will read: cmake/TorchCudaHeaders.cmake puts the
    # wheels' include folders before torch's and the toolkit's.
    local flags=() d hdr
    for d in $wheel_includes; do flags+=(-isystem "$d"); done
    flags+=(-isystem "$TORCH_ROOT/include" -isystem "$TORCH_ROOT/include/torch/csrc/api/include")
    [ -d /usr/local/cuda/include ] && flags+=(-isystem /usr/local/cuda/include)
    echo '#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>' > "$LOGDIR/headers.cc"
    if timeout 60 "$CXX_BIN" -std=c++20 -M -DUSE_C10D_NCCL "${flags[@]}" "$LOGDIR/headers.cc" \
         > "$LOGDIR/headers.d" 2> "$LOGDIR/headers.stderr"; then
      for hdr in nccl.h cuda_runtime_api.h cublas_v2.h cusparse.h cusolverDn.h; do
        local path
        path=$(tr ' \\' '\n\n' < "$LOGDIR/headers.d" | grep -E "/$hdr\$" | grep -v '/torch/csrc/' | head -1)
        if [ -n "$path" ]; then check "$hdr" OK "$path"; else check "$hdr" MISSING "not found"; fi
      done
      local nccl_h header_code lib_code
      nccl_h=$(tr ' \\' '\n\n' < "$LOGDIR/headers.d" | grep -E '/nccl\.h$' | grep -v '/torch/csrc/' | head -1)
      header_code=$(grep -m1 -oE '^#define NCCL_VERSION_CODE +[0-9]+' "$nccl_h" 2>/dev/null | grep -oE '[0-9]+$')
      # torch reports the loaded library as "2.28.9": its NCCL_VERSION_CODE.
      lib_code=$(echo "$nccl_lib" | awk -F. 'NF == 3 {printf "%d", $1 * 10000 + $2 * 100 + $3}')
      if [ -z "$header_code" ] || [ -z "$lib_code" ]; then
        check nccl-version MISSING "header ${header_code:-?}, library ${nccl_lib:-?}"
      elif [ "$header_code" != "$lib_code" ]; then
        check nccl-version MISSING "nccl.h is $header_code, torch loads NCCL $nccl_lib ($lib_code)"
      else
        check nccl-version OK "nccl.h $header_code = the NCCL torch loads ($nccl_lib)"
      fi
      note[preflight]="torch ${torch_line%% *}, NCCL ${nccl_lib:-?}"
    else
      check headers MISSING "ProcessGroupNCCL.hpp does not preprocess: $(grep -m1 error "$LOGDIR/headers.stderr")"
    fi
  fi

  local tool
  for tool in cmake ninja "$CXX_BIN"; do
    if command -v "$tool" >/dev/null 2>&1; then
      check "$tool" OK "$("$tool" --version 2>&1 | head -1)"
    else
      check "$tool" MISSING "not on PATH"
    fi
  done
  free_gib=$(df -Pk "$REPO" | awk 'NR == 2 {printf "%d", $4 / 1048576}')
  if [ "${free_gib:-0}" -ge 4 ]; then check disk OK "$free_gib GiB free"; else
    check disk MISSING "${free_gib:-?} GiB free under $REPO (a build needs ~4)"; fi
  if [ -f "$BUNDLE/MANIFEST" ] && compgen -G "$BUNDLE/debs/*.deb" >/dev/null; then
    check bundle OK "$(ls "$BUNDLE"/debs/*.deb | wc -l) .debs in .gpu-bundle"
  else
    check bundle MISSING "no .gpu-bundle/MANIFEST or debs: run scripts/gpu_bundle.sh here and carry .gpu-bundle"
  fi
  [ -n "${note[preflight]:-}" ] && [ -n "$gpus" ] && note[preflight]="$(echo "$gpus" | head -1 | cut -d, -f2 | sed 's/^ //'), driver $driver, ${note[preflight]}"
  if [ ${#PREFLIGHT_MISSING[@]} -gt 0 ]; then
    note[preflight]="missing: ${PREFLIGHT_MISSING[*]}"
    return 1
  fi
  return 0
}

# extract_deb DEB DIR: dpkg -x, or python's ar + tarfile where dpkg is absent.
extract_deb() {
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$1" "$2"
  else
    "$PY" - "$1" "$2" <<'EOF'
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
with open(deb, "rb") as f:
    assert f.read(8) == b"!<arch>\n", deb + ": not an ar archive"
    while True:
        header = f.read(60)
        if len(header) < 60:
            sys.exit(deb + ": no data.tar member")
        name = header[:16].decode().strip().rstrip("/")
        size = int(header[48:58].decode().strip())
        data = f.read(size)
        f.read(size % 2)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
                if hasattr(tarfile, "fully_trusted_filter"):
                    t.extractall(dest, filter="fully_trusted")
                else:
                    t.extractall(dest)
            break
EOF
  fi
}

unpack() {
  shopt -s nullglob
  local debs=("$BUNDLE"/debs/*.deb) d l target stamp
  shopt -u nullglob
  if [ ${#debs[@]} -eq 0 ] || [ ! -f "$BUNDLE/MANIFEST" ]; then
    echo "gpu_check: no .gpu-bundle/debs/*.deb or MANIFEST: run scripts/gpu_bundle.sh on a Debian 12 machine and carry .gpu-bundle"
    return 1
  fi
  sed -n '1,5p' "$BUNDLE/MANIFEST"
  stamp=$(cat "$BUNDLE/MANIFEST"; ls -l "${debs[@]}" | awk '{print $5, $NF}')
  if [ -f "$DEPS/.stamp" ] && [ "$(cat "$DEPS/.stamp")" = "$stamp" ] && [ -d "$RUNTIME" ]; then
    echo "${#debs[@]} packages already unpacked in $DEPS"
    note[unpack]="${#debs[@]} packages (unpacked before)"
    return 0
  fi
  rm -rf "${DEPS:?}"
  mkdir -p "$DEPS"
  for d in "${debs[@]}"; do
    extract_deb "$d" "$DEPS" || { echo "gpu_check: cannot unpack $d"; return 1; }
  done
  echo "unpacked ${#debs[@]} packages into $DEPS ($(du -sm "$DEPS" | cut -f1) MiB)"
  note[unpack]="${#debs[@]} packages, $(du -sm "$DEPS" | cut -f1) MiB"

  # Debian 12 is merged-/usr but some packages (zlib1g, libcom-err2, ...)
  # still ship /lib/x86_64-linux-gnu: merge it into usr/lib, as / is.
  if [ -d "$DEPS/lib" ] && [ ! -L "$DEPS/lib" ]; then
    cp -a "$DEPS/lib/." "$DEPS/usr/lib/" && rm -rf "${DEPS:?}/lib" && ln -s usr/lib "$DEPS/lib" || return 1
  fi
  # Absolute symlinks (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13)
  # would point at this machine's /: point them into deps.
  while IFS= read -r -d '' l; do
    target=$(readlink "$l")
    ln -sfn "$DEPS$target" "$l"
    echo "symlink ${l#"$DEPS"/} -> \$DEPS$target"
  done < <(find "$DEPS" -type l -lname '/*' -print0)
  # pkg-config files name /usr (prefix=/usr, libdir=/usr/lib/..., -I/usr/...).
  # CMake's own package files compute their prefix from where they are, but
  # check: any IMPORTED_LOCATION / INTERFACE_* path hard-coded to /usr is
  # pointed into deps (the "_realOrig" /usr comparisons must stay as they are).
  local n=0 f
  while IFS= read -r -d '' f; do
    sed -i -E "s#(^|[=\" ]|-I|-L)/usr(/|\"|\$)#\1$DEPS/usr\2#g" "$f" && n=$((n + 1))
  done < <(find "$DEPS/usr" -name '*.pc' -print0)
  echo "pkg-config files pointed into deps: $n"
  while IFS= read -r -d '' f; do
    if grep -qE '(IMPORTED_LOCATION[A-Z_]*|INTERFACE_[A-Z_]+|_cmake_import_check_files_for_[A-Za-z0-9_:-]+) .*"/usr/' "$f"; then
      sed -i -E '/(IMPORTED_LOCATION[A-Z_]*|INTERFACE_[A-Z_]+|_cmake_import_check_files_for_[A-Za-z0-9_:-]+) /s#"/usr/#"'"$DEPS"'/usr/#g' "$f"
      echo "cmake file with /usr paths fixed: ${f#"$DEPS"/}"
    fi
  done < <(find "$DEPS/usr" -name '*.cmake' -print0)

  # The runtime libraries, for LD_LIBRARY_PATH: every lib*.so.N of the
  # bundle, except zlib where this machine has its own (then the machine's
  # tools keep loading theirs; our binaries find the bundle's through RUNPATH).
  mkdir -p "$RUNTIME"
  local have_zlib=0
  ldconfig -p 2>/dev/null | grep -q 'libz\.so\.1 .*x86-64' && have_zlib=1
  for f in "$LIBDIR"/lib*.so.*; do
    case ${f##*/} in libz.so.*) [ $have_zlib -eq 1 ] && continue ;; esac
    ln -sfn "$f" "$RUNTIME/${f##*/}"
  done
  echo "runtime libraries for LD_LIBRARY_PATH: $(ls "$RUNTIME" | wc -l) names in $RUNTIME$([ $have_zlib -eq 1 ] && echo " (zlib: this machine's)")"
  echo "$stamp" > "$DEPS/.stamp"
}

# What every later step runs with, and what a person needs to rerun a binary.
setup_env() {
  export LD_LIBRARY_PATH=$RUNTIME${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$LIBDIR/pkgconfig:$DEPS/usr/share/pkgconfig
  export PKG_CONFIG_PATH=
  cat > "$BUILD/env.sh" <<EOF
# source $build_dir/env.sh: the environment scripts/gpu_check.sh built and ran with.
export LD_LIBRARY_PATH=$RUNTIME\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PKG_CONFIG_LIBDIR=$PKG_CONFIG_LIBDIR
export PKG_CONFIG_PATH=
EOF
}

probe() {
  local need_glibc need_glibcxx need_cxxabi have_glibc libstdcxx have_glibcxx have_cxxabi rc=0
  need_glibc=$(awk '/^needs_glibc:/ {print $2}' "$BUNDLE/MANIFEST")
  need_glibcxx=$(awk '/^needs_glibcxx:/ {print $2}' "$BUNDLE/MANIFEST")
  need_cxxabi=$(awk '/^needs_cxxabi:/ {print $2}' "$BUNDLE/MANIFEST")
  have_glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  [ -n "$have_glibc" ] || have_glibc=$(ldd --version 2>&1 | head -1 | grep -oE '[0-9]+\.[0-9]+$')
  # The libstdc++ this machine's compiler links against and the loader finds.
  libstdcxx=$("$CXX_BIN" -print-file-name=libstdc++.so.6 2>/dev/null)
  [ -f "$libstdcxx" ] || libstdcxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
  libstdcxx=$(readlink -f "$libstdcxx" 2>/dev/null)
  have_glibcxx=$(grep -aoE 'GLIBCXX_3\.4\.[0-9]+' "$libstdcxx" 2>/dev/null | sed 's/GLIBCXX_//' | sort -uV | tail -1)
  have_cxxabi=$(grep -aoE 'CXXABI_1\.3\.[0-9]+' "$libstdcxx" 2>/dev/null | sed 's/CXXABI_//' | sort -uV | tail -1)
  echo "bundle needs glibc >= $need_glibc, GLIBCXX_$need_glibcxx, CXXABI_$need_cxxabi"
  echo "machine has  glibc $have_glibc, $libstdcxx: GLIBCXX_$have_glibcxx, CXXABI_$have_cxxabi"
  local why=()
  version_ge "${have_glibc:-0}" "$need_glibc" || why+=("glibc $have_glibc < $need_glibc")
  version_ge "${have_glibcxx:-0}" "$need_glibcxx" || why+=("libstdc++ has GLIBCXX_$have_glibcxx < $need_glibcxx")
  version_ge "${have_cxxabi:-0}" "$need_cxxabi" || why+=("libstdc++ has CXXABI_$have_cxxabi < $need_cxxabi")

  # Load every library of the bundle: the loader's own verdict.
  local libs=()
  mapfile -t libs < <(find "$LIBDIR" -maxdepth 1 -type f -name 'lib*.so.*' | sort)
  if ! timeout 60 "$PY" - "${libs[@]}" <<'EOF'
import ctypes, os, sys
bad = []
for path in sys.argv[1:]:
    try:
        ctypes.CDLL(path)
    except OSError as e:
        bad.append(str(e))
print("loaded %d of %d bundled libraries" % (len(sys.argv) - 1 - len(bad), len(sys.argv) - 1))
for b in bad:
    print("  cannot load:", b)
sys.exit(1 if bad else 0)
EOF
  then
    why+=("some bundled libraries do not load")
  fi

  # A tiny program against the bundle's headers and libraries, built by
  # this machine's compiler: headers, static gtest, link and run.
  cat > "$LOGDIR/probe.cc" <<'EOF'
#include <gtest/gtest.h>
#include <png.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>
#include <zmq.h>

#include <boost/filesystem.hpp>
#include <google/protobuf/stubs/common.h>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>
int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int a = 0, b = 0, c = 0;
  zmq_version(&a, &b, &c);
  const YAML::Node node = YAML::Load("{x: 7}");
  const nlohmann::json j = {{"y", 8}};
  spdlog::info("probe: zmq {}.{}.{} yaml {} json {} png {} protobuf {} boost {} cwd {}", a, b, c,
               node["x"].as<int>(), j["y"].get<int>(), png_access_version_number(),
               GOOGLE_PROTOBUF_VERSION, BOOST_LIB_VERSION,
               boost::filesystem::current_path().string());
  return a == 4 ? 0 : 1;
}
EOF
  if timeout 120 "${NICE[@]}" "$CXX_BIN" -std=c++20 -O0 -pthread -isystem "$DEPS/usr/include" \
       -DSPDLOG_COMPILED_LIB -DSPDLOG_SHARED_LIB -DSPDLOG_FMT_EXTERNAL -DFMT_SHARED \
       "$LOGDIR/probe.cc" -o "$LOGDIR/probe" -L"$LIBDIR" -Wl,-rpath-link,"$LIBDIR" \
       -lgtest -lspdlog -lfmt -lyaml-cpp -lzmq -lpng16 -lprotobuf -lboost_filesystem; then
    timeout 30 "$LOGDIR/probe" || why+=("the probe program does not run")
  else
    why+=("the probe program does not compile or link with $CXX_BIN")
  fi

  if [ ${#why[@]} -gt 0 ]; then
    echo "gpu_check: THE BUNDLED DEBIAN 12 LIBRARIES CANNOT BE USED ON THIS MACHINE: ${why[*]}."
    echo "gpu_check: they were built for glibc >= $need_glibc and GCC 12's libstdc++; this machine needs"
    echo "gpu_check: libraries built for it (e.g. the same versions built from source here)."
    note[probe]="unusable here: ${why[*]}"
    rc=1
  else
    echo "the bundled libraries load and link here"
    note[probe]="the bundle loads, links and runs with $("$CXX_BIN" -dumpfullversion 2>/dev/null | sed 's/^/compiler /')"
  fi
  return $rc
}

configure() {
  local arch=${TORCH_CUDA_ARCH_LIST:-}
  if [ -z "$arch" ]; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sort -u |
             grep -E '^[0-9]+\.[0-9]+$' | paste -sd';')
    arch=${arch:-9.0}
  fi
  # TorchConfig finds libtorch.so and libc10.so with find_library(... PATHS
  # <torch>/lib), and PATHS come after the system's /usr/lib: where another
  # LibTorch is installed (Debian's 1.13 here) it would be linked instead.
  # The torch package's own root as the last prefix finds <torch>/lib first;
  # last, because <torch>/include also holds fmt and protobuf headers.
  local prefix="$TORCH_PREFIX;$DEPS/usr;$LIBDIR/cmake;$DEPS/usr/share/cmake;$TORCH_ROOT"
  local args=(-S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DRLSWARM_WITH_CUDA=ON -DRLSWARM_BUILD_TESTS=ON -DRLSWARM_BUILD_BENCH=ON
    # Without it torch's CMake detects the GPUs with a try_run that fails
    # (CMake 3.25). In the cache as well as in the environment, so that a
    # re-run of CMake from ninja (after a CMakeLists.txt changed) has it too.
    "-DTORCH_CUDA_ARCH_LIST=$arch"
    "-DCMAKE_PREFIX_PATH=$prefix"
    # find_library looks in <prefix>/lib/<arch> only where the compiler
    # reports a multiarch triplet (Debian, Ubuntu): name the directory too.
    "-DCMAKE_LIBRARY_PATH=$LIBDIR"
    # <gloo/...> is included by torch's c10d headers, not by a CMake target.
    "-DCMAKE_CXX_FLAGS=-isystem $DEPS/usr/include"
    # Where cmake/Torch.cmake finds the {fmt} and protobuf headers that must
    # win over the copies inside the torch wheel (/usr/include on Debian).
    "-DRLSWARM_SYSTEM_INCLUDE_DIR=$DEPS/usr/include")
  local cmake_major
  cmake_major=$(cmake --version | head -1 | grep -oE '[0-9]+' | head -1)
  [ "${cmake_major:-3}" -ge 4 ] && args+=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5)
  # A cache from another prefix (another torch, another deps dir) would keep
  # its package paths: start that cache again (object files stay).
  if [ -f "$BUILD/CMakeCache.txt" ] &&
     ! grep -qxF "CMAKE_PREFIX_PATH:UNINITIALIZED=$prefix" "$BUILD/CMakeCache.txt"; then
    echo "removing $build_dir/CMakeCache.txt (configured with another CMAKE_PREFIX_PATH)"
    rm -f "$BUILD/CMakeCache.txt"
  fi
  echo "TORCH_CUDA_ARCH_LIST=$arch cmake ${args[*]}"
  export TORCH_CUDA_ARCH_LIST=$arch
  echo "export TORCH_CUDA_ARCH_LIST='$arch'" >> "$BUILD/env.sh"
  tmo "$1" "$2" "${NICE[@]}" cmake "${args[@]}" 2>&1 |
    tee "$LOGDIR/configure.log"
  local rc=${PIPESTATUS[0]}
  # cmake/TorchCudaHeaders.cmake's verdict on nccl.h.
  note[configure]=$(grep -m1 -oE 'NCCL [0-9]+: .* matches .*' "$LOGDIR/configure.log" |
    sed -E 's#^(NCCL [0-9]+): .*#\1: the nvidia-nccl wheel'"'"'s nccl.h matches its library#')
  [ $rc -eq 0 ] || note[configure]=$(grep -m1 -A2 'CMake Error' "$LOGDIR/configure.log" | tr '\n' ' ')
  return $rc
}

# The targets the later steps run; a target that failed does not keep the
# others from being built (-k 0) and run.
TARGETS=(learner_tests learner_unit_tests learner_bench rlswarm)
declare -A ready=()
build() {
  echo "ninja -C $build_dir -k 0 -j$jobs ${TARGETS[*]}"
  tmo "$1" "$2" "${NICE[@]}" ninja -C "$BUILD" -k 0 -j"$jobs" "${TARGETS[@]}" 2>&1 |
    tee "$LOGDIR/build.log"
  local rc=${PIPESTATUS[0]} t
  echo "ninja edges run: $(grep -cE '^\[[0-9]+/[0-9]+\]' "$LOGDIR/build.log")"
  if [ "$rc" -ne 0 ]; then
    echo "--- first errors:"
    grep -m 20 -E 'error|FAILED' "$LOGDIR/build.log"
    [ "$rc" -eq 124 ] && echo "gpu_check: the build ran out of time; run again: ninja goes on where it stopped"
  fi
  # All built, or (after a failure) those ninja has nothing left to do for.
  for t in "${TARGETS[@]}"; do
    if [ "$rc" -eq 0 ] || ninja -C "$BUILD" -n "$t" 2>/dev/null | grep -q 'no work to do'; then
      ready[$t]=1
    fi
  done
  echo "up to date: ${!ready[*]}"
  note[build]="$(grep -cE '^\[[0-9]+/[0-9]+\]' "$LOGDIR/build.log") ninja edges; built: ${!ready[*]}"
  return "$rc"
}

# Where things came from: CMake's package paths, the system headers the
# compiler read for a bundled package, and what the binaries load.
origins() {
  local rc=0 cache=$BUILD/CMakeCache.txt torch_root
  torch_root=$TORCH_ROOT
  classify() {
    case $1 in
      "$DEPS"/*) echo bundle ;;
      "$torch_root"/*|"$(dirname "$torch_root")"/nvidia/*) echo torch ;;
      /usr/local/cuda*) echo cuda ;;
      *NOTFOUND*|"") echo notfound ;;
      *) echo system ;;
    esac
  }
  echo "--- packages (CMakeCache.txt)"
  # Every path CMake cached for a bundled package (not the optional debug,
  # lite and protoc ones) must lie in deps.
  local pkgs='^(ZeroMQ|cppzmq|msgpackc-cxx|yaml-cpp|CLI11|spdlog|fmt|nlohmann_json|Boost|boost_[a-z_]+|GTest|benchmark|PNG|ZLIB|Protobuf)_'
  local line var path kind
  while IFS= read -r line; do
    var=${line%%:*}; path=${line#*=}
    kind=$(classify "$path")
    printf '  %-8s %s = %s\n' "$kind" "$var" "$path"
    # A NOTFOUND <pkg>_DIR is a config-mode probe that fell back to a module
    # (cppzmq's FindZeroMQ): not a failure.
    [ "$kind" = bundle ] || { [ "$kind" = notfound ] && [[ $var == *_DIR ]]; } || rc=1
  done < <(grep -E "${pkgs}[A-Za-z0-9_]*:(PATH|FILEPATH)=" "$cache" | grep -vE '(DEBUG|LITE|PROTOC)[A-Z_]*:')
  echo "--- LibTorch (CMakeCache.txt)"
  while IFS= read -r line; do
    var=${line%%:*}; path=${line#*=}
    kind=$(classify "$path")
    printf '  %-8s %s = %s\n' "$kind" "$var" "$path"
    [ "$kind" = torch ] || rc=1
  done < <(grep -E '^(Torch_DIR|Caffe2_DIR|TORCH_LIBRARY|c10_LIBRARY|C10_CUDA_LIBRARY|kineto_LIBRARY):' "$cache" | grep -v NOTFOUND)
  echo "--- headers of bundled packages read from the system's /usr/include (ninja -t deps)"
  local sys_headers
  sys_headers=$(ninja -C "$BUILD" -t deps 2>/dev/null |
    grep -oE '^\s+/usr/include/(zmq[^ ]*|msgpack[^ ]*|yaml-cpp/|CLI/|spdlog/|fmt/|nlohmann/|boost/|gtest/|gmock/|benchmark/|png[^ ]*|zlib\.h|zconf\.h|google/protobuf/|gloo/)' |
    sed -E 's#^\s+/usr/include/##; s#/.*#/#' | sort | uniq -c)
  if [ -n "$sys_headers" ]; then
    echo "$sys_headers"; rc=1
  else
    echo "  none"
  fi
  echo "--- what the binaries load (ldd)"
  local b
  for b in tests/learner/learner_tests bench/learner_bench rlswarm; do
    [ -x "$BUILD/$b" ] || continue
    ldd "$BUILD/$b" > "$LOGDIR/ldd.$(basename "$b").txt" 2>&1
    awk -v deps="$DEPS" -v tr="$torch_root" '
      /not found/ {nf = nf " " $1; next}
      $2 == "=>" {
        p = $3; k = "system"
        if (index(p, deps) == 1) k = "bundle"; else if (index(p, tr) == 1 || p ~ /\/nvidia\//) k = "torch"
        else if (p ~ /^\/usr\/local\/cuda/) k = "cuda"
        n[k]++; names[k] = names[k] " " $1
      }
      END {
        printf "  %s:\n", FILENAME
        for (k in n) printf "    %-7s %2d:%s\n", k, n[k], (k == "torch" ? "" : names[k])
        if (nf != "") { printf "    NOT FOUND:%s\n", nf; exit 1 }
      }' "$LOGDIR/ldd.$(basename "$b").txt" || rc=1
  done
  if [ $rc -eq 0 ]; then note[origins]="packages from the bundle, LibTorch from the wheel, nothing missing"; else
    note[origins]="something from outside the bundle or the wheel, or not found (see the log)"; fi
  return $rc
}

# run_gtest NAME CAP RESERVE FILTER: learner_tests (the multi-process
# scenarios; GTEST_BINARY names another, e.g. learner/learner_unit_tests)
# --gtest_filter=FILTER, output in NAME.log. When the binary dies in a test (a crash, no final
# summary), it runs again without the tests that already ran and the one that
# died, up to 5 runs, all within CAP seconds. Prints the totals.
run_gtest() {
  local name=$1 cap=$2 reserve=$3 pos=$4 t_end attempt=0 ran="" crashed=() rc=0 final=0 log
  local filter died
  t_end=$(($(date +%s) + cap))
  : > "$LOGDIR/$name.log"
  while [ $attempt -lt 5 ]; do
    attempt=$((attempt + 1))
    log=$LOGDIR/$name.$attempt.log
    filter=$pos
    [ -n "$ran" ] && filter="$pos-$ran"
    [ $attempt -gt 1 ] && echo "learner_tests again, without the tests that ran: --gtest_filter='$filter'"
    tmo $((t_end - $(date +%s))) "$reserve" "${NICE[@]}" "$BUILD/${GTEST_BINARY:-tests/learner/learner_tests}" \
      --gtest_filter="$filter" --gtest_output=json:"$LOGDIR/$name.$attempt.json" > "$log" 2>&1
    rc=$?
    cat "$log" >> "$LOGDIR/$name.log"
    grep -E '^\[  (FAILED  |SKIPPED )\] [^ ]+ \(|^\[==========\] [0-9]+ tests? from .* ran' "$log"
    grep -m 10 -A 3 -E ': Failure$' "$log"
    if grep -qE '^\[==========\] [0-9]+ tests? from .* ran' "$log"; then
      [ $rc -eq 0 ] || final=1
      break
    fi
    # It died: in which test (the last one started and not finished)?
    died=$(awk '/^\[ RUN      \]/ {r = $4} /^\[ +(OK|FAILED|SKIPPED) +\]/ {if ($4 == r) r = ""} END {print r}' "$log")
    final=1
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      echo "gpu_check: learner_tests ran out of time${died:+ in $died}"
      tail -15 "$log"
      break
    fi
    echo "gpu_check: learner_tests died (exit status $rc$([ $rc -gt 128 ] && echo ", signal $((rc - 128))"))${died:+ in $died}"
    tail -15 "$log"
    [ -n "$died" ] || break
    crashed+=("$died")
    ran=$(awk '/^\[ +(OK|FAILED|SKIPPED) +\] [^ ]+ \(/ {print $4}' "$LOGDIR/$name.log" | sort -u | paste -sd:)
    ran=${ran:+$ran:}$(printf '%s\n' "${crashed[@]}" | paste -sd:)
  done
  local passed skipped failed
  passed=$(grep -cE '^\[       OK \] [^ ]+ \(' "$LOGDIR/$name.log")
  skipped=$(grep -cE '^\[  SKIPPED \] [^ ]+ \(' "$LOGDIR/$name.log")
  failed=$(grep -cE '^\[  FAILED  \] [^ ]+ \(' "$LOGDIR/$name.log")
  echo "learner_tests --gtest_filter='$pos': $passed passed, $skipped skipped, $failed failed, ${#crashed[@]} crashed${crashed[*]:+ (${crashed[*]})}, $attempt run(s)"
  TOTAL_TESTS=$((passed + skipped + failed + ${#crashed[@]}))
  SKIPPED_TESTS=$skipped
  GTEST_COUNTS="$passed passed, $skipped skipped, $((failed + ${#crashed[@]})) failed"
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && return 124
  [ $final -eq 0 ]
}

tests() {
  local started rc unit_rc=0
  started=$(date +%s)
  GTEST_BINARY=learner/learner_unit_tests run_gtest learner_unit_tests "$1" "$2" '*' || unit_rc=$?
  local unit_counts=$GTEST_COUNTS
  run_gtest learner_tests $(($1 - ($(date +%s) - started))) "$2" '*'
  rc=$?
  note[tests]="CPU suite: unit tests $unit_counts; scenarios $GTEST_COUNTS"
  [ $rc -eq 0 ] && rc=$unit_rc
  return $rc
}

# The GPU path's building blocks (tests/learner/cuda_primitives_test.cc): the
# adapter's collectives on CUDA tensors (f32, f64, bf16, every reduce-scatter
# path) through a 1-rank NCCL group, storage take/adopt/reallocate, the host
# time a Wait() blocks behind a ~50 ms kernel, NCCL's device timings, a
# staged batch and a host copy beside a busy compute stream, a
# PeakMemoryMeter as a fresh process's first CUDA call. Without a GPU every
# one of them skips (saying why); on a GPU machine that is a failure.
cuda_primitives() {
  run_gtest cuda_primitives "$1" "$2" 'CudaPrimitives*'
  local rc=$?
  note[cuda_primitives]=$GTEST_COUNTS
  if [ "$TOTAL_TESTS" -eq 0 ]; then
    note[cuda_primitives]="no CudaPrimitives* test in this build"
    return 1
  fi
  if [ "$SKIPPED_TESTS" -eq "$TOTAL_TESTS" ]; then
    grep -m1 -A1 -E '^\[  SKIPPED \]|Skipped' "$LOGDIR/cuda_primitives.log" | tail -1
    [ $rehearse -eq 1 ] && { note[cuda_primitives]="all $TOTAL_TESTS skip without a GPU, as they must"; return 3; }
    return 1
  fi
  grep -hE '^(wait_host_ms|kernel_ms|stage_host_ms|copy_host_ms|storage) ' \
    /tmp/rlswarm_learner_tests_*_cuda_primitives_world1/cuda_primitives.txt 2>/dev/null | tr '\n' ' '
  echo
  return $rc
}

# The other CUDA tests (NCCL training against plain CPU training, the DQN
# learner on CUDA); world-2 cases skip on one GPU.
cuda_tests() {
  echo "visible GPUs: $NGPU (the tests use world 1 with one GPU, world 2 with two or more)"
  run_gtest learner_tests_cuda "$1" "$2" '*Cuda*-CudaPrimitives*'
  local rc=$?
  note[cuda_tests]=$GTEST_COUNTS
  if [ "$TOTAL_TESTS" -gt 0 ] && [ "$SKIPPED_TESTS" -eq "$TOTAL_TESTS" ]; then
    echo "gpu_check: every *Cuda* test skipped itself on this GPU machine"
    [ $rc -eq 0 ] && rc=1
  fi
  return $rc
}

# launch_run NAME SECONDS CONFIG OVERRIDES...: `rlswarm launch` into
# LOGDIR/e2e/NAME, at most SECONDS of training plus a short final
# evaluation; prints "solved updates wall_s" from its summary.json.
launch_run() {
  local name=$1 secs=$2 config=$3 dir=$LOGDIR/e2e/$1
  shift 3
  rm -rf "$dir"
  timeout -k 5 $((secs + 30)) "$BUILD/rlswarm" launch "$config" --run-dir "$dir" \
    launch.max_wall_time_s="$secs" launch.final_eval_timeout_s=10 "$@" \
    > "$LOGDIR/e2e/$name.json" 2> "$LOGDIR/e2e/$name.stderr"
  local rc=$?
  "$PY" - "$dir/summary.json" <<'PYEOF' || return 1
import json, sys
s = json.load(open(sys.argv[1]))
print(str(s["solved"]).lower(), s["updates"], s["wall_time_s"], s.get("time_to_solve_s"))
PYEOF
  return $rc
}

# End to end, in about 90 s: CartPole with the learner on the GPU must solve
# (the rehearsal runs it on the CPU); MinAtar Breakout trains E2E_SECONDS
# with the learner on the GPU and, at the same time (16 cores), with the
# learner on the CPU: updates/s of each (updates over the run's wall time,
# start-up included in both).
e2e() {
  mkdir -p "$LOGDIR/e2e"
  local device=cuda rc=0 cart gpu="" cpu="" pid_gpu="" pid_cpu=""
  [ $rehearse -eq 1 ] && device=cpu
  cart=$(launch_run cartpole 30 "$REPO/configs/cartpole.yaml" learner.device=$device) || rc=1
  echo "cartpole (learner on $device): solved updates wall_s time_to_solve_s = $cart"
  tail -3 "$LOGDIR/e2e/cartpole.stderr"
  [ "${cart%% *}" = true ] || rc=1
  local breakout=(launch.stop_at_target=false launch.eval_interval_s=10 launch.eval_episodes=10
    launch.eval_num_envs=10)
  if [ $rehearse -eq 0 ]; then
    launch_run breakout_gpu "$E2E_SECONDS" "$REPO/configs/minatar_breakout.yaml" \
      learner.device=cuda "${breakout[@]}" > "$LOGDIR/e2e/breakout_gpu.txt" & pid_gpu=$!
  fi
  launch_run breakout_cpu "$E2E_SECONDS" "$REPO/configs/minatar_breakout.yaml" \
    learner.device=cpu "${breakout[@]}" > "$LOGDIR/e2e/breakout_cpu.txt" & pid_cpu=$!
  if [ -n "$pid_gpu" ]; then wait "$pid_gpu" || rc=1; gpu=$(cat "$LOGDIR/e2e/breakout_gpu.txt"); fi
  wait "$pid_cpu" || rc=1
  cpu=$(cat "$LOGDIR/e2e/breakout_cpu.txt")
  rate() { echo "$1" | awk '$3 > 0 {printf "%.0f", $2 / $3}'; }
  echo "breakout (learner on cuda): solved updates wall_s = ${gpu:-not run}"
  echo "breakout (learner on cpu):  solved updates wall_s = ${cpu:-failed}"
  note[e2e]="CartPole ($device learner) solved: ${cart%% *}; Breakout ${E2E_SECONDS} s updates/s: cuda ${gpu:+$(rate "$gpu")}${gpu:-n/a}, cpu $(rate "$cpu")"
  return $rc
}

# bench_run NAME ARGS...: learner_bench --json ARGS into LOGDIR/NAME.json.
bench_run() {
  local name=$1
  shift
  echo "learner_bench $*"
  tmo "$BENCH_CAP" 0 "$BUILD/bench/learner_bench" --json "$@" \
    > "$LOGDIR/$name.json" 2> "$LOGDIR/$name.stderr"
  local rc=$?
  tail -5 "$LOGDIR/$name.stderr"
  return $rc
}

# learner_bench trimmed to fit (~1 min): world 1 on the GPU, the learner's
# plain path (no group) and the sharded path through a 1-rank NCCL group,
# each beside plain LibTorch in the same run, for the CartPole MLP and the
# MinAtar net. The rehearsal runs the plain path on the CPU, smaller.
bench() {
  local rc=0 common=(--worlds 1 --models mlp,minatar --batches 128,512 --seconds 0.3 --reps 2)
  BENCH_CAP=$(($1 / 2))
  if [ $rehearse -eq 1 ]; then
    bench_run learner_bench_plain --device cpu --worlds 1 --models mlp --batches 128 \
      --seconds 0.1 --reps 1 || rc=1
  else
    bench_run learner_bench_plain --device cuda "${common[@]}" || rc=1
    bench_run learner_bench_nccl --device cuda --backend nccl "${common[@]}" || rc=1
  fi
  "$PY" - "$LOGDIR"/learner_bench_plain.json "$LOGDIR"/learner_bench_nccl.json <<'PYEOF' > "$LOGDIR/bench_table.txt" || rc=1
import json, os, sys
rows = []
for path in sys.argv[1:]:
    if os.path.exists(path) and os.path.getsize(path) > 0:
        rows += json.load(open(path)).get("results", [])
print("%-13s %5s %-6s %-14s %10s %10s %6s" % ("model", "batch", "group", "strategy", "updates/s", "plain/s", "ratio"))
best = {}
for r in rows:
    u, p = r.get("updates_per_sec") or 0, r.get("plain_updates_per_sec") or 0
    print("%-13s %5s %-6s %-14s %10.0f %10.0f %6.2f" % (r.get("model"), r.get("batch"), r.get("backend"),
          r.get("strategy"), u, p, u / p if p else 0))
    key = r.get("backend")
    if p and u / p > best.get(key, 0):
        best[key] = u / p
print("BEST " + ", ".join("%s %.2fx plain" % (k, v) for k, v in sorted(best.items())))
PYEOF
  grep -v '^BEST ' "$LOGDIR/bench_table.txt"
  note[bench]="best ratio to plain LibTorch: $(sed -n 's/^BEST //p' "$LOGDIR/bench_table.txt")"
  return $rc
}

# ---------------------------------------------------------------- run
echo "gpu_check: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)$(git -C "$REPO" diff --quiet 2>/dev/null || echo '+changes')"
# Caps per step; on the GPU machine each step's reserve keeps time for the
# steps after it within the budget: cuda_primitives 45 s, e2e ~100 s, bench
# 100 s, then cuda_tests with what is left.
if [ $rehearse -eq 1 ]; then
  declare -A cap=([conf]=1800 [build]=9000 [tests]=1800 [prim]=300 [bench]=600)
  E2E_SECONDS=${e2e_seconds:-20}
else
  declare -A cap=([conf]=120 [build]=420 [tests]=120 [prim]=45 [bench]=100)
  E2E_SECONDS=${e2e_seconds:-60}
fi
stop_after() { [ "$until" = "$1" ] && { echo "gpu_check: stopping after $1 (--until)"; finish; }; }

step preflight preflight
ok preflight || finish
stop_after preflight
step unpack unpack
ok unpack || finish
setup_env
stop_after unpack
step probe probe
ok probe || finish
stop_after probe
step configure configure "${cap[conf]}" 330
stop_after configure
if ok configure; then
  step build build "${cap[build]}" 250
  stop_after build
else
  skip build "configure failed"
fi
TOTAL_TESTS=0 SKIPPED_TESTS=0 GTEST_COUNTS=""
if [ ${#ready[@]} -gt 0 ]; then
  step origins origins
else
  skip origins "nothing built"
fi
if [ -n "${ready[learner_tests]:-}" ]; then
  step cuda_primitives cuda_primitives "${cap[prim]}" 190
else
  skip cuda_primitives "learner_tests not built"
fi
if [ -z "${ready[rlswarm]:-}" ]; then
  skip e2e "rlswarm not built"
else
  # What is left after the bench and a margin goes to Breakout, 60 s at most.
  [ $rehearse -eq 0 ] && [ $(($(left) - 200)) -lt "$E2E_SECONDS" ] && E2E_SECONDS=$(($(left) - 200))
  if [ "$E2E_SECONDS" -lt 15 ]; then skip e2e "no time left"; else step e2e e2e; fi
fi
if [ -n "${ready[learner_bench]:-}" ]; then
  step bench bench "${cap[bench]}"
else
  skip bench "learner_bench not built"
fi
if [ $rehearse -eq 1 ]; then
  skip cuda_tests "no GPU"
elif [ -n "${ready[learner_tests]:-}" ] && [ "$(left)" -ge 30 ]; then
  step cuda_tests cuda_tests $(($(left) - 5)) 0
else
  skip cuda_tests "learner_tests not built, or no time left"
fi
if [ $cpu_tests -eq 1 ] && [ -n "${ready[learner_tests]:-}" ]; then
  step tests tests "${cap[tests]}" 0
fi
finish
