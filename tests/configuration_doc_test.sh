#!/usr/bin/env bash
# docs/configuration.md is the output of `rlswarm config --markdown`, which
# renders the Visit methods of config/: a key, default, bound or doc changed
# in the code without regenerating the page fails here, with the difference
# and the command that mends it.
#
#   tests/configuration_doc_test.sh RLSWARM_BINARY SOURCE_DIR
set -euo pipefail
binary=$1
doc=$2/docs/configuration.md
generated=$(mktemp)
trap 'rm -f "$generated"' EXIT

"$binary" config --markdown >"$generated"
if ! diff -u --label "docs/configuration.md (checked in)" \
  --label "rlswarm config --markdown (the code)" "$doc" "$generated"; then
  echo >&2
  echo "docs/configuration.md is stale: it differs from what the code documents (above)." >&2
  echo "Regenerate it with:  build/rlswarm config --markdown > docs/configuration.md" >&2
  exit 1
fi
