#!/usr/bin/env bash
# Device-side check of the CUDA replay backend, in one go (device time is scarce): builds the
# CUDA part, runs the replay GPU tests, replays the Llama-3.1-8B decoder-layer trace (TP2 with
# NCCL and ideal, TP1 on one GPU, TP2 under mpirun) and times tools/torch_reference_step.py on
# the same ops. Usage (repo root, on the GPU machine): tools/cuda_replay_measure.sh OUTDIR
set -u
out=${1:?usage: tools/cuda_replay_measure.sh OUTDIR}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvidia-smi topo -m; } > "$out/env.txt" 2>&1
tests=ON
cfg="-S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON -DEAGLESIM_BENCH=OFF"
cmake $cfg -DEAGLESIM_TESTS=ON > "$out/build.log" 2>&1 || { tests=OFF; cmake $cfg -DEAGLESIM_TESTS=OFF >> "$out/build.log" 2>&1; }
targets="eaglesim-cuda-replay eaglesim"
[ $tests = ON ] && targets="eaglesim_gpu_tests $targets"
# -k 0: a failure in one target (e.g. the CLI of a partly merged tree) leaves the others built.
ninja -C build -k 0 -j32 $targets >> "$out/build.log" 2>&1 || { echo "BUILD INCOMPLETE"; grep -B2 -A8 -m3 "error" "$out/build.log"; }
grep -i "mpi\|gtest" "$out/build.log" | head -5
python3 tools/llama8b_decoder_trace.py --tp 2 --out /tmp/l8_tp2.json
python3 tools/llama8b_decoder_trace.py --tp 1 --out /tmp/l8_tp1.json
if [ $tests = ON ]; then
  timeout 180 build/tests/eaglesim_gpu_tests --gtest_filter='CudaKernels.*:CudaGemm.*:CudaReplay.*' > "$out/gpu_tests.log" 2>&1
  echo "gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]|FAILED \]|GEMM m=" "$out/gpu_tests.log"
fi
T=build/src/cuda/eaglesim-cuda-replay
R="--iters 50 --warmup 10"
{
  echo "### TP2 decoder layers, nccl + ideal"; timeout 120 $T /tmp/l8_tp2.json $R --strategy nccl,ideal; echo "rc=$?"
  echo "### TP1 decoder layers, 1 GPU"; timeout 90 $T /tmp/l8_tp1.json $R --ranks 1 --strategy nccl; echo "rc=$?"
  echo "### TP2 under mpirun -np 2"; timeout 120 mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE $T /tmp/l8_tp2.json $R --strategy nccl; echo "rc=$?"
  if [ -x build/eaglesim ] && [ -f traces/llama-3.1-8b_tp2_t4.json ]; then
    echo "### eaglesim run, gen's full TP2 trace"; timeout 120 build/eaglesim run traces/llama-3.1-8b_tp2_t4.json --backend cuda $R --strategy nccl,ideal --json "$out/run_tp2.json"; echo "rc=$?"
  fi
} > "$out/runs.log" 2>&1
{
  timeout 150 python3 tools/torch_reference_step.py --tp 2 --iters 50 --warmup 10; echo "rc=$?"
  timeout 90 python3 tools/torch_reference_step.py --tp 1 --iters 50 --warmup 10; echo "rc=$?"
} > "$out/torch.log" 2>&1
echo "======== summary"; cat "$out/runs.log" | grep -v "^\s*$" | head -120; cat "$out/torch.log" | grep -E "^\{|rc=|Error" | head
