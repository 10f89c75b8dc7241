#!/usr/bin/env bash
# Two-node layouts of a MoE model side by side: TP16, TP16 with the experts over 2 EP groups, and
# data-parallel attention with EP16 (DeepEP low-latency all-to-all), each plain and with EAGLE-3,
# per batch. Usage: tools/multinode-compare.sh EAGLESIM_EXE MODEL DRAFT WEIGHT_DTYPE TOPOLOGY BATCHES
#   e.g. tools/multinode-compare.sh build/eaglesim deepseek-v3 auto fp8 2x8-h200-nvswitch-ib400 8,32,128
set -euo pipefail
[[ $# -eq 6 ]] || { echo "usage: $0 EAGLESIM_EXE MODEL DRAFT WEIGHT_DTYPE TOPOLOGY BATCHES" >&2; exit 2; }
exe=$1 model=$2 draft=$3 wdtype=$4 topo=$5 batches=$6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-22s %6s %10s %10s %12s %12s %8s\n' layout batch verify_us decode_us plain_tok_s eagle3_tok_s speedup
for batch in ${batches//,/ }; do
  for layout in "TP16|--tp 16" "TP16 EP2|--tp 16 --ep 2" "DP-attn EP16|--tp 16 --ep 16 --dp-attention"; do
    name=${layout%%|*} flags=${layout#*|}
    # shellcheck disable=SC2086  # the flags are meant to split into words
    "$exe" gen --model "$model" --draft "$draft" $flags --tokens 4 --kv-len 4096 --batch "$batch" \
      --weight-dtype "$wdtype" -o "$tmp/t.json" > /dev/null 2> "$tmp/gen.err" || { cat "$tmp/gen.err" >&2; exit 2; }
    "$exe" run "$tmp/t.json" --topology "$topo" --strategy nccl --accept-rate 0.7 --json "$tmp/r.json" > /dev/null 2> "$tmp/run.err" || { cat "$tmp/run.err" >&2; exit 2; }
    python3 - "$tmp/r.json" "$name" "$batch" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f'{sys.argv[2]:<22} {sys.argv[3]:>6} {r["verify_us"]:>10.0f} {r["decode_us"]:>10.0f} '
      f'{r["decode_total_tokens_per_s"]:>12.0f} {r["total_tokens_per_s"]:>12.0f} {r["speedup_vs_decode"]:>7.2f}x')
PY
  done
done
