#!/bin/sh
# An installed eaglesim finds its data under PREFIX/share/eaglesim from any directory:
# install into a fresh prefix, add a preset there only, and run the default scenario and that
# preset from /.  Usage: install_finds_data.sh CMAKE BUILD_DIR
set -eu
cmake=$1
build=$2
prefix=$(mktemp -d /tmp/eaglesim-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
"$cmake" --install "$build" --prefix "$prefix" > /dev/null
exe="$prefix/bin/eaglesim"
share="$prefix/share/eaglesim"
for f in models/llm/kimi-k2-instruct.json models/topologies/8x-h200-nvswitch.json traces/kimi-k2_tp8_t4.json; do
  [ -f "$share/$f" ] || { echo "not installed: $share/$f"; exit 1; }
done
sed 's/"name": *"8x-h200-nvswitch"/"name": "only-installed"/' "$share/models/topologies/8x-h200-nvswitch.json" \
  > "$share/models/topologies/only-installed.json"
cd /
"$exe" run > "$prefix/default.txt" || { echo "installed eaglesim run failed"; exit 1; }
grep -q "^best: " "$prefix/default.txt" || { echo "no best line in the default run"; cat "$prefix/default.txt"; exit 1; }
"$exe" run "$share/traces/kimi-k2_tp8_t4.json" --topology only-installed --strategy nccl > "$prefix/preset.txt" \
  || { echo "the installed preset was not found"; exit 1; }
grep -q "on only-installed" "$prefix/preset.txt" || { echo "ran on another topology"; cat "$prefix/preset.txt"; exit 1; }
# With the CUDA part built, the installed module (PREFIX/lib/eaglesim) is the one a GPU command
# loads: without a GPU the error is about the GPU, not a missing part.
if [ -f "$prefix/lib/eaglesim/libeaglesim-cuda.so" ]; then
  "$exe" run "$share/traces/kimi-k2_tp8_t4.json" --backend cuda --strategy nccl > /dev/null 2> "$prefix/cuda.txt" || true
  if grep -q "no CUDA part" "$prefix/cuda.txt"; then
    echo "the installed CUDA part was not found"; cat "$prefix/cuda.txt"; exit 1
  fi
fi
echo "installed eaglesim found its data in $share"
