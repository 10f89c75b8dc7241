#!/usr/bin/env bash
# The grouped MoE / weight-only GEMM call on one H200, in one command (about 6 minutes):
# configure and build the GPU tests and bench_gemm, run the MoeGemm*/WeightOnlyGemm* tests, time
# the torch alternatives, run bench_gemm against them, summarise the kernels' SASS, then one
# compute-sanitizer pass on small shapes if time is left. Every step has its own timeout.
# Writes to OUT (at most 8 files): summary.txt build.log tests.log torch_gemm.json torch.log
#   gemm.json bench.log sass_summary.txt
# Usage (repo root, on the GPU machine): OUT=dir bash tools/gemm_device_run.sh
set -u
OUT=${OUT:-/tmp/gemm-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
B=build-gpu
S="$OUT/summary.txt"
: > "$S"
note() { echo "[${SECONDS}s] $*" | tee -a "$S"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >> "$S" 2>&1

# CUDA is enabled at the top level (cmake/cuda_language.cmake) so bench/gpu/*.cu can build.
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DEAGLESIM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DEAGLESIM_TESTS=ON -DEAGLESIM_BENCH=ON -DCMAKE_PROJECT_INCLUDE="$PWD/cmake/cuda_language.cmake" \
  > "$OUT/build.log" 2>&1
note "configure rc=$?"
timeout 330 cmake --build $B -j"$(nproc)" --target eaglesim_gpu_tests >> "$OUT/build.log" 2>&1
note "build eaglesim_gpu_tests rc=$?"
BENCH=$B/bench/bench_gemm
if ! timeout 120 cmake --build $B -j"$(nproc)" --target bench_gemm >> "$OUT/build.log" 2>&1; then
  # bench/CMakeLists.txt defines no targets without Google Benchmark: build the one file directly.
  note "no bench_gemm target; building it with nvcc"
  BENCH=$B/bench_gemm_direct
  timeout 150 nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. -Isrc -Ikernels \
    bench/gpu/bench_gemm.cu src/cuda/moe_gemm.cu src/cuda/moe_gemm_plan.cpp src/cuda/cuda_check.cpp \
    -lfmt -lcublasLt -lnccl -o $BENCH >> "$OUT/build.log" 2>&1
  note "nvcc bench_gemm rc=$?"
fi
grep -m8 -B2 -A6 "error" "$OUT/build.log" | head -40 >> "$S"

timeout 150 $B/tests/eaglesim_gpu_tests --gtest_filter='MoeGemm*:WeightOnlyGemm*' > "$OUT/tests.log" 2>&1
note "tests rc=$?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure|rel|differ" "$OUT/tests.log" | head -30 >> "$S"

timeout 170 python3 tools/torch_gemm_bench.py --out "$OUT/torch_gemm.json" > "$OUT/torch.log" 2>&1
note "torch rc=$? rows=$(wc -l < "$OUT/torch_gemm.json" 2>/dev/null)"

timeout 200 $BENCH --torch "$OUT/torch_gemm.json" --json "$OUT/gemm.json" > "$OUT/bench.log" 2>&1
note "bench rc=$?"

# Per kernel: registers/stack from the cubin, and the instructions that matter (tensor-core mma,
# bulk copies, 16-byte shared loads, local-memory traffic).
{
  cuobjdump --dump-resource-usage $BENCH 2>&1 | grep -A1 -E "moe_grouped_gemm|moe_gemm_reference" | grep -E "Function|REG" | head -60
  cuobjdump --dump-sass $BENCH 2>/dev/null | python3 -c '
import re, sys
cur, counts = None, {}
for line in sys.stdin:
    m = re.search(r"Function : (\S+)", line)
    if m:
        cur = m.group(1); counts[cur] = {}
        continue
    if cur and ("moe_grouped_gemm" in cur or "moe_gemm_reference" in cur):
        for op in ("HMMA", "UBLKCP", "LDSM", "LDS.128", "LDL", "STL", "SYNCS", "LOP3", "HMUL2", "HADD2", "HFMA2"):
            if re.search(r"\b" + re.escape(op), line):
                counts[cur][op] = counts[cur].get(op, 0) + 1
for f, c in counts.items():
    if c:
        print(f, " ".join(f"{k}={v}" for k, v in sorted(c.items())))
'
} > "$OUT/sass_summary.txt" 2>&1
note "sass summary: $(wc -l < "$OUT/sass_summary.txt") lines"

if [ "$SECONDS" -lt 400 ]; then
  EAGLESIM_TEST_QUICK=1 timeout $((460 - SECONDS)) compute-sanitizer --tool memcheck --report-api-errors no \
    $B/tests/eaglesim_gpu_tests --gtest_filter='MoeGemmGrouped.RowsPerExpertAcrossFormats' > "$OUT/sanitizer.log" 2>&1
  note "compute-sanitizer memcheck (quick) rc=$? $(grep -m1 'ERROR SUMMARY' "$OUT/sanitizer.log")"
  rm -f "$OUT/sanitizer.log"
fi
tail -45 "$OUT/bench.log"
cat "$S"
