#!/usr/bin/env bash
# Rewrites the goldens in tests/data/golden/ (list: tests/data/golden/CASES) from a binary.
# Usage: tools/write-goldens.sh EAGLESIM_EXE    (run it only when a change of output is intended)
# A golden is "exit N", then the output file ({OUT} in CASES) or stdout, or stderr when N != 0.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 EAGLESIM_EXE" >&2; exit 2; }
exe=$(realpath "$1")
cd "$(dirname "$0")/.."
golden=tests/data/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count=0
while read -r name args; do
  [[ -z "${name}" || "${name}" == \#* ]] && continue
  mkdir -p "$(dirname "$golden/$name")"
  out="$tmp/out"
  rm -f "$out"
  # shellcheck disable=SC2086  # the arguments are meant to split into words
  set +e
  "$exe" ${args//\{OUT\}/$out} > "$tmp/stdout" 2> "$tmp/stderr"
  rc=$?
  set -e
  # A failure's golden is its message; a success's is its output (the file, else stdout).
  {
    echo "exit $rc"
    if [[ $rc -ne 0 ]]; then cat "$tmp/stderr"
    elif [[ "$args" == *"{OUT}"* ]]; then cat "$out"
    else cat "$tmp/stdout"; fi
  } > "$golden/$name"
  count=$((count + 1))
done < "$golden/CASES"
echo "$count goldens written"
