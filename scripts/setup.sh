#!/usr/bin/env bash
# Installs what rlswarm needs to build, test and run.
#
#   scripts/setup.sh                 Debian 12 packages (LibTorch 1.13, CPU)
#   scripts/setup.sh --torch=pypi    the same, plus PyPI's torch wheel (CUDA LibTorch,
#                                    pinned in scripts/torch_flavour.sh) in the ignored
#                                    virtual environment .venv-pypi/ inside the repository
#   scripts/setup.sh --python        also the ignored virtual environment .venv/ with the
#                                    pinned packages of python/requirements-dev.txt (what
#                                    the Python package builds, tests and runs with) and
#                                    the pinned torch the examples and their tests use
#
# Both also install the test tools: PyPI's tensorboard (pinned below) in the
# ignored virtual environment .venv-tools/, whose reader checks the event
# files of a real run (tests/tensorboard_check.py).
#
# Idempotent: packages that are already installed are skipped, and when
# nothing is missing the script neither updates the package lists nor calls
# apt-get or pip at all. Must run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/torch_flavour.sh
rlswarm_take_torch_flag "$@"
with_python=0
for arg in "${RLSWARM_ARGS[@]}"; do
  case "$arg" in
    --python) with_python=1 ;;
    *)
      echo "setup.sh: unknown argument $arg (--torch=debian|pypi, --python)" >&2
      exit 2
      ;;
  esac
done

packages=(
  # Toolchain; ccache makes rebuilds (and CI on a warm machine) cheap.
  cmake ninja-build g++ git pkg-config ccache
  # LibTorch (CPU, with c10d) and the Gloo headers its c10d headers include
  # (PyPI's wheel does not ship them either).
  libtorch-dev libgloo-dev
  # OpenBLAS is not optional: without it Debian's LibTorch falls back to the
  # reference BLAS and a small MLP training step is ~10x slower.
  libopenblas0-openmp
  # Transport, and the rpc header's serialization (MessagePack).
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  # Boost (Asio, Beast, Process) and the rest of the third-party libraries.
  libboost-dev libboost-filesystem-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  # PNG frames of evaluated episodes (rlswarm evaluate --record) and plots;
  # protobuf for TensorBoard event files (message types built at run time).
  libpng-dev libprotobuf-dev
  # cairo draws `rlswarm plot`'s curves and text (its fontconfig brings a
  # font); giflib writes --record's animated GIFs.
  libcairo2-dev libgif-dev
  # Tests and benchmarks; clang with its runtime for libFuzzer targets.
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  # The observability tests: a real Prometheus server scrapes a run's
  # endpoints (tests/prometheus_test.cc), and TensorBoard's own reader
  # (PyPI, in .venv-tools/) reads its event files.
  prometheus
  # The Slurm launch test (tests/slurm_test.sh) starts a one-host cluster of
  # Debian's Slurm (scripts/slurm/local_cluster.sh).
  slurm-wlm munge
)
# Debian's python3 keeps `venv` in the standard library but ensurepip (which
# `python3 -m venv` needs to put pip into the venv) in python3-venv, so
# `python3 -m venv --help` succeeds even where creating a venv fails: ask for
# the package unless python3 is not Debian's and can make a venv by itself.
if [ "$(command -v python3)" = /usr/bin/python3 ] || ! python3 -m venv --help >/dev/null 2>&1; then
  packages+=(python3-venv)
fi
# The Python package's extension module compiles against Python's headers.
if [ "$with_python" = 1 ] && [ "$(command -v python3)" = /usr/bin/python3 ]; then
  packages+=(python3-dev)
fi

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for pkg in "${packages[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

sudo_cmd=()
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
else
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: run as root (missing: ${missing[*]})" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [ "$RLSWARM_TORCH" = pypi ]; then
  venv=$RLSWARM_TORCH_VENV
  want=$RLSWARM_TORCH_PYPI_VERSION
  if compgen -G "$venv/lib/python3*/site-packages/torch-$want.dist-info" >/dev/null; then
    echo "setup: torch $want is installed in $venv"
  else
    # The wheel is the CUDA build (torch $want+cu130 for CUDA 13) and pulls
    # its pinned nvidia-* runtime wheels (~3 GB); pip's cache keeps them for
    # the next install on this machine.
    echo "setup: installing torch==$want into $venv"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "torch==$want"
  fi
fi

# The test tools' venv: a pinned tensorboard, for its event file reader.
tools_venv=.venv-tools
tensorboard_version=2.21.0
if compgen -G "$tools_venv/lib/python3*/site-packages/tensorboard-$tensorboard_version.dist-info" \
  >/dev/null; then
  echo "setup: tensorboard $tensorboard_version is installed in $tools_venv"
else
  echo "setup: installing tensorboard==$tensorboard_version into $tools_venv"
  [ -x "$tools_venv/bin/python" ] || python3 -m venv "$tools_venv"
  "$tools_venv/bin/python" -m pip install --disable-pip-version-check -q \
    "tensorboard==$tensorboard_version"
fi

# The Python package's venv: build backend, nanobind, Gymnasium, NumPy, pytest,
# and the Gymnasium envs the actors will step (ale-py, minatar), all pinned.
# A copy of the requirements file in the venv says what was installed.
if [ "$with_python" = 1 ]; then
  py_venv=.venv
  py_requirements=python/requirements-dev.txt
  if [ -x "$py_venv/bin/python" ] && cmp -s "$py_requirements" "$py_venv/rlswarm-requirements.txt"; then
    echo "setup: the packages of $py_requirements are installed in $py_venv"
  else
    echo "setup: installing $py_requirements into $py_venv"
    [ -x "$py_venv/bin/python" ] || python3 -m venv "$py_venv"
    "$py_venv/bin/python" -m pip install --disable-pip-version-check -q -r "$py_requirements"
    cp "$py_requirements" "$py_venv/rlswarm-requirements.txt"
  fi
  # torch for the examples and their tests (python/tests/test_examples.py);
  # the package itself never imports it. The same pinned version as
  # .venv-pypi's (PyPI's CUDA build, ~3 GB with its nvidia-* wheels), so that
  # one download in pip's cache serves both venvs.
  want=$RLSWARM_TORCH_PYPI_VERSION
  if compgen -G "$py_venv/lib/python3*/site-packages/torch-$want.dist-info" >/dev/null; then
    echo "setup: torch $want is installed in $py_venv"
  else
    echo "setup: installing torch==$want into $py_venv"
    "$py_venv/bin/python" -m pip install --disable-pip-version-check -q "torch==$want"
  fi
fi
