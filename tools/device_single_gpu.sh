#!/usr/bin/env bash
# The checks one H200 can do (TP1 replay, 1-GPU calibration and fidelity, the 1-GPU kernel
# tests, sanitizers), and a tarball of the built binaries for a following 2-GPU call.
set -u
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/eaglesim-out}; mkdir -p "$OUT"
S="$OUT/summary.txt"; : > "$S"; T0=$(date +%s)
note() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$S"; }
E=build/eaglesim; G=build/tests/eaglesim_gpu_tests; W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$S" 2>&1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON \
  -DEAGLESIM_TESTS=ON -DEAGLESIM_BENCH=OFF > "$OUT/build.log" 2>&1
ninja -C build -k 0 -j16 eaglesim eaglesim_gpu_tests >> "$OUT/build.log" 2>&1; note "build rc=$?"
grep -m3 -A6 " error" "$OUT/build.log" | head -30 >> "$S"
tar czf "$OUT/bins.tgz" build/eaglesim build/tests/eaglesim_gpu_tests 2>/dev/null; note "bins $(du -h "$OUT/bins.tgz" | cut -f1)"
{
  echo "### gen Llama-3.1-8B TP1, cuda, 1 GPU"
  timeout 90 $E run traces/llama-3.1-8b_tp1_t4.json --backend cuda --strategy nccl --iters 30 --warmup 5; echo "rc=$?"
  python3 tools/llama8b_decoder_trace.py --tp 1 --out "$W/l8dec_tp1.json" >/dev/null 2>&1
  echo "### decoder-only Llama-3.1-8B TP1 (PyTorch's ops), cuda"
  timeout 60 $E run "$W/l8dec_tp1.json" --backend cuda --strategy nccl --iters 30 --warmup 5; echo "rc=$?"
  echo "### PyTorch, same decoder ops, TP1"
  timeout 90 python3 tools/torch_reference_step.py --tp 1 --iters 30 --warmup 5; echo "rc=$?"
} > "$OUT/replay.log" 2>&1
note "replay"; grep -E "^###|^nccl |^rc=|^\{" "$OUT/replay.log" >> "$S"
{
  echo "### GPU tests that need one GPU"
  EAGLESIM_TEST_TIMEOUT_S=20 timeout 150 $G --gtest_filter='CudaKernels.*:CudaGemm.*:CudaReplay.TinyTraceOnOneGpu:CudaReplay.UnknownStrategyIsAnInputError:CalibrateGpu*'; echo "rc=$?"
} > "$OUT/tests.log" 2>&1
note "tests"; grep -E "^\[  (PASSED|FAILED)|FAILED \]|^rc=" "$OUT/tests.log" >> "$S"
$E gen --model models/llm/llama-3.1-70b.json --tp 1 --tokens 4 --draft models/llm/llama-3.1-70b-eagle3.json \
  --kv-len 2048 -o "$W/l70_tp1.json" > /dev/null 2>&1
timeout 200 $E calibrate --traces traces/llama-3.1-8b_tp1_t4.json,$W/l70_tp1.json --ranks 1 -o "$OUT/calibrated-1gpu.json" > "$OUT/calibrate.log" 2>&1
note "calibrate rc=$?"; tail -3 "$OUT/calibrate.log" >> "$S"
timeout 200 $E fidelity "traces/llama-3.1-8b_tp1_t4.json,$W/l70_tp1.json" --topology "$OUT/calibrated-1gpu.json" \
  --baseline-topology 2x-h200-nvlink --strategy nccl --ranks 1 --iters 20 --json "$W/fid.json" > "$OUT/fidelity.log" 2>&1
note "fidelity rc=$?"; grep -E "^summary|error" "$OUT/fidelity.log" >> "$S"
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $G \
    --gtest_filter='CudaKernels.*' > "$W/$tool.log" 2>&1
  note "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^\[  (PASSED|FAILED)' "$W/$tool.log" | tr '\n' ' ')"
done
echo "==== summary"; cat "$S"
