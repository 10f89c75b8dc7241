#!/usr/bin/env bash
# Rebuilds the generated traces in traces/ from the model configs in models/llm/.
# Usage: tools/regen-traces.sh EAGLESIM_EXE
# The list lives in traces/MANIFEST ("OUTPUT_FILE  gen arguments" per line), which the CLI test
# tests/cli/test_gen_cli.cpp reads too, so the script and the test cannot drift apart.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 EAGLESIM_EXE" >&2
  exit 2
fi
exe=$(realpath "$1")
cd "$(dirname "$0")/.."

count=0
while read -r output args; do
  [[ -z "${output}" || "${output}" == \#* ]] && continue
  # shellcheck disable=SC2086  # the arguments are meant to split into words
  "${exe}" gen ${args} -o "traces/${output}"
  echo "regenerated traces/${output}"
  count=$((count + 1))
done < traces/MANIFEST
echo "${count} traces regenerated"
