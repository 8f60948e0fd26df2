#!/usr/bin/env bash
# examples/plugin_env/ builds as its README says, against rlswarm's plugin
# header alone: a fresh CMake tree whose include directory holds nothing but
# rlswarm/plugin_api.h, warnings as errors (C99, -pedantic), and a library
# that exports the plugin's entry point and nothing else.
#
#   tests/plugin_example_build_test.sh SOURCE_DIR INCLUDE_DIR
set -euo pipefail
src=$1/examples/plugin_env
include=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/include/rlswarm"
cp "$include/rlswarm/plugin_api.h" "$work/include/rlswarm/"
cmake -S "$src" -B "$work/build" -DRLSWARM_INCLUDE_DIR="$work/include" -DCMAKE_C_FLAGS=-Werror
cmake --build "$work/build"

plugin=$work/build/libcartpole_plugin.so
exported=$(nm -D --defined-only "$plugin" | awk '$2 == "T" { print $3 }')
if [ "$exported" != rlswarm_env_plugin_v1 ]; then
  echo "FAIL: $plugin exports [$exported], expected only rlswarm_env_plugin_v1" >&2
  exit 1
fi
echo "OK: $plugin exports rlswarm_env_plugin_v1 alone"
