#!/usr/bin/env bash
# Calibrate the simulator on this machine and measure its fidelity against the CUDA replay, in
# one go (meant for a 2 x H200 machine; ~5 minutes after the build). Usage, from the repo root:
#   tools/calibrate_and_fidelity.sh OUTDIR
# Writes at most 8 files into OUTDIR:
#   build.log             configure + build (only when build/eaglesim is missing or BUILD=1; on the
#                         device, build in a call of its own first: nvcc takes minutes)
#   calibrate.log         GPUs, both calibrations' progress and summaries
#   calibrated-2gpu.json  topology calibrated on 2 GPUs (TP2 and TP1 shapes, allreduces on 2 ranks)
#   calibrated-1gpu.json  topology calibrated on 1 GPU (--ranks 1)
#   fidelity.log          sim vs CUDA replay tables (TP2 traces, then TP1 traces)
#   fidelity-tp2.json     Llama-3.1-8B / 70B TP2 (generated) and the imported Kineto 8B TP2 trace
#   fidelity-tp1.json     Llama-3.1-8B / 70B TP1 (generated) on 1 GPU
#   summary.txt           the two summary lines and the environment
set -u
out=${1:?usage: tools/calibrate_and_fidelity.sh OUTDIR}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
E=build/eaglesim

if [ ! -x "$E" ] || [ "${BUILD:-0}" = 1 ]; then
  { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON \
      -DEAGLESIM_BENCH=OFF && ninja -C build -j"$(nproc)" eaglesim; } > "$out/build.log" 2>&1 \
    || { echo "BUILD FAILED"; tail -40 "$out/build.log"; exit 1; }
fi

# Traces: the shipped TP2/TP1 ones, a generated 70B TP1 (same arguments as traces/MANIFEST's
# 70B line, TP 1), and the Kineto profile of Llama-3.1-8B TP2 imported.
T8_2=traces/llama-3.1-8b_tp2_t4.json
T70_2=traces/llama-3.1-70b_tp2_t4.json
T8_1=traces/llama-3.1-8b_tp1_t4.json
T70_1=traces/llama-3.1-70b_tp1_t4.json
if [ ! -f "$T70_1" ]; then
  T70_1=$work/llama-3.1-70b_tp1_t4.json
  $E gen --model models/llm/llama-3.1-70b.json --tp 1 --tokens 4 --draft models/llm/llama-3.1-70b-eagle3.json \
    --weight-dtype bf16 --kv-len 2048 -o "$T70_1" || exit 1
fi
TK=$work/kineto_llama8b_tp2_t4.json
$E import kineto tests/data/kineto/llama8b_tp2_t4_nccl_rank0.json.gz tests/data/kineto/llama8b_tp2_t4_nccl_rank1.json.gz \
  --layers 32 -o "$TK" > "$work/import.log" 2>&1 || { cat "$work/import.log"; exit 1; }

gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
S=nccl,oneshot,twoshot,fused,quant
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv 2>&1
  echo "### calibrate on 2 GPUs"
  t0=$SECONDS
  timeout 170 $E calibrate --traces "$T8_2,$T70_2,$T8_1,$T70_1,$TK" --ranks 2 \
    --strategy $S -o "$out/calibrated-2gpu.json"
  echo "rc=$?"; echo "calibrate 2 GPUs: $((SECONDS - t0)) s"
  echo "### calibrate on 1 GPU"
  t0=$SECONDS
  timeout 100 $E calibrate --traces "$T8_1,$T70_1" --ranks 1 \
    -o "$out/calibrated-1gpu.json"
  echo "rc=$?"; echo "calibrate 1 GPU: $((SECONDS - t0)) s"
} > "$out/calibrate.log" 2>&1
grep -E "^calibrate|rc=|wrote|error" "$out/calibrate.log"

{
  echo "### fidelity, TP2 traces on 2 GPUs (imported Kineto trace: compute ops priced from the tables, --op-times model)"
  timeout 220 $E fidelity "$T8_2,$T70_2,$TK" --topology "$out/calibrated-2gpu.json" --baseline-topology 2x-h200-nvlink \
    --strategy $S --ranks 2 --iters 20 --json "$out/fidelity-tp2.json"
  echo "rc=$?"
  echo "### fidelity, TP1 traces on 1 GPU"
  timeout 100 $E fidelity "$T8_1,$T70_1" --topology "$out/calibrated-1gpu.json" --baseline-topology 2x-h200-nvlink \
    --strategy nccl --ranks 1 --iters 20 --json "$out/fidelity-tp1.json"
  echo "rc=$?"
} > "$out/fidelity.log" 2>&1
{
  echo "gpus: $gpus"; head -3 "$out/calibrate.log"
  grep -E "^calibrate .*: [0-9.]+ s|^wrote" "$out/calibrate.log"
  grep -E "^summary|^rc=" "$out/fidelity.log"
} > "$out/summary.txt"
cat "$out/summary.txt"
