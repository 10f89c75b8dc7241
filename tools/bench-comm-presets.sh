#!/usr/bin/env bash
# Writes docs/bench-comm-presets.md: `eaglesim bench-comm --backend sim` on every shipped preset
# (models/topologies/*.json), each table under the command that prints it, so a preset can be
# read beside published nccl-tests tables (docs/fidelity.md compares them).
# Usage: tools/bench-comm-presets.sh EAGLESIM_EXE
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 EAGLESIM_EXE" >&2; exit 2; }
exe=$(realpath "$1")
cd "$(dirname "$0")/.."
out=docs/bench-comm-presets.md
sizes=1K,4K,32K,43008,64K,256K,1M,8M,64M
strategies=nccl,oneshot,oneshot_push,twoshot,sglang,vllm
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# bench-comm --backend sim on every preset"
  echo
  echo "Written by \`tools/bench-comm-presets.sh build/eaglesim\`; what the columns mean:"
  echo "[engine-dispatch.md](engine-dispatch.md#bench-comm---backend-sim). The published figures"
  echo "these predictions are held against: [fidelity.md](fidelity.md#presets-against-published-measurements)."
  for f in models/topologies/*.json; do
    name=$(basename "$f" .json)
    cmd="eaglesim bench-comm --backend sim --topology $name --strategy $strategies --sizes $sizes"
    echo
    echo "## $name"
    echo
    echo '```'
    echo "\$ $cmd"
    # shellcheck disable=SC2086  # the command is meant to split into words
    "$exe" ${cmd#eaglesim }
    echo '```'
  done
} > "$tmp"
mv "$tmp" "$out"
echo "wrote $out"
