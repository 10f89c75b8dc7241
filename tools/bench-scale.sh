#!/usr/bin/env bash
# Start-up and sweep scale, the figures in docs/benchmarks.md ("Start-up and sweep memory"):
#   1. start-up: wall time and peak memory of eaglesim --version, gen, run --backend sim and a
#      small sweep (median of 5 runs each), and the CUDA libraries eaglesim needs at start (none);
#   2. a 1.49 M-combination sweep with --best-only, the full CSV streamed to disk, and the same
#      sweep keeping every row, each with its wall time and peak memory.
# Usage: tools/bench-scale.sh [EAGLESIM] (default build/eaglesim). Needs GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:-build/eaglesim}
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (apt-get install time)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {  # measure LABEL CMD...: mean wall of 10 back-to-back runs, peak RSS of one (GNU time)
  local label=$1; shift
  local t0; t0=$(date +%s%N)
  for _ in 1 2 3 4 5 6 7 8 9 10; do "$@" > /dev/null 2>&1; done
  local wall_us=$(( ($(date +%s%N) - t0) / 10000 ))
  /usr/bin/time -f "%M" -o "$tmp/t" "$@" > /dev/null 2>&1
  awk -v l="$label" -v w="$wall_us" -v m="$(cat "$tmp/t")" 'BEGIN {printf "%-34s %6.1f ms  %6.1f MB\n", l, w / 1000, m / 1024}'
}

echo "== start-up ($exe; CUDA libraries among its NEEDED: $(readelf -d "$exe" | grep -cE 'NEEDED.*(cuda|cublas|nccl)' || true))"
measure "--version" "$exe" --version
measure "gen (Llama-3.1-8B TP1)" "$exe" gen --model llama-3.1-8b --tp 1 --tokens 4 -o "$tmp/g.json"
measure "run --backend sim (default)" "$exe" run --backend sim
measure "sweep (112 combinations)" "$exe" sweep --model llama-3.1-8b --tp 1 --topology 8x-h100-nvswitch --batch 1,4

grid=(--model llama-3.1-8b,qwen3-8b,qwen3-30b-a3b --topology all --tp 1,2,4,8 --batch 1,2,4,8,16,32,64
      --speculative-num-steps 1..6 --speculative-eagle-topk 1,2,4,8
      --speculative-num-draft-tokens 2,4,6,8,12,16,24,32 --accept-rate 0.5,0.7 -j 2)
echo "== sweep: 3 models x 11 presets x TP 1,2,4,8 x 7 batches x 115 SGLang configurations x 2 rates x 7 strategies"
big() {  # big LABEL ARGS...: one run, wall and peak RSS, and the CSV's size when written
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$exe" sweep "${grid[@]}" "$@" > "$tmp/out.txt"
  read -r wall rss < "$tmp/t"
  local combos; combos=$(sed -n 's/^Sweep: \([0-9]*\) combinations.*/\1/p' "$tmp/out.txt")
  local csv=""; [ -f "$tmp/big.csv" ] && csv=$(printf ", CSV %.0f MB" "$(($(stat -c %s "$tmp/big.csv") / 1000000))") && rm -f "$tmp/big.csv"
  printf "%-34s %s combinations, %6.1f s, %7.1f MB peak%s\n" "$label" "$combos" "$wall" "$((rss / 1024))" "$csv"
}
big "--best-only" --best-only
big "--best-only -o big.csv" --best-only -o "$tmp/big.csv"
big "every row kept" 
