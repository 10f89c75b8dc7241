#!/usr/bin/env bash
# Records the PyTorch reference verify step (the "--engine torch" step: a copy of
# torch_verify_step.py, kept out of the repository in .shared-tools/) for the cases of
# tools/torch-steps.tsv, on the visible GPU, into $OUT (or the first argument):
# NAME_graph_rank0.json.gz (PyTorch profiler, 3 graph replays) and NAME_graph_times.json.
# Usage: OUT=dir tools/record-torch-steps.sh [CASES_FILTER_REGEX]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:?set OUT to the output folder}"
script="${TORCH_VERIFY_STEP:-$here/../.shared-tools/torch_verify_step.py}"
filter="${1:-.}"
mkdir -p "$out"
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' | tee "$out/device.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv >> "$out/device.txt" || true
grep -v '^#' "$here/torch-steps.tsv" | grep -E "$filter" | while read -r name model h i nh nkv hd l v qkn b t ctx; do
  [ -n "$name" ] || continue
  python3 "$script" "$out" "$name" "$h" "$i" "$nh" "$nkv" "$hd" "$l" "$v" "$qkn" "$b" "$t" "$ctx"
done
