# Sourced by setup.sh, build.sh and test.sh: which LibTorch a build uses.
#
#   --torch=debian (default)  Debian's libtorch-dev 1.13 (CPU), build dir build/
#   --torch=pypi              PyPI's torch wheel (CUDA + NCCL), pinned below, in the
#                             ignored virtual environment .venv-pypi/, build dir build-pypi/
#
# rlswarm_take_torch_flag "$@" sets RLSWARM_TORCH and leaves the other
# arguments in RLSWARM_ARGS (an array), in order.

RLSWARM_TORCH_PYPI_VERSION=2.11.0
RLSWARM_TORCH_VENV=.venv-pypi

rlswarm_take_torch_flag() {
  RLSWARM_TORCH=${RLSWARM_TORCH:-debian}
  RLSWARM_ARGS=()
  local arg
  for arg in "$@"; do
    case "$arg" in
      --torch=debian | --torch=pypi) RLSWARM_TORCH=${arg#--torch=} ;;
      --torch=*)
        echo "${0##*/}: unknown ${arg} (--torch=debian or --torch=pypi)" >&2
        exit 2
        ;;
      *) RLSWARM_ARGS+=("$arg") ;;
    esac
  done
}

# The build directory of a flavour (RLSWARM_BUILD_DIR overrides).
rlswarm_build_dir() {
  if [ -n "${RLSWARM_BUILD_DIR:-}" ]; then
    echo "$RLSWARM_BUILD_DIR"
  elif [ "$RLSWARM_TORCH" = pypi ]; then
    echo build-pypi
  else
    echo build
  fi
}
