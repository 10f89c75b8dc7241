#!/usr/bin/env bash
# One device call for the allreduce kernels (issue #6): build, GPU tests, bench-comm (42 KiB
# focus + the full 1K:64M table), then compute-sanitizer memcheck/racecheck on a reduced size
# set. Each step gets a slice of the remaining time so the call never overruns its limit.
# Usage (repo root, on the GPU machine): OUT=dir BUDGET_S=400 tools/run_kernel_checks.sh [steps]
# steps: any of build tests bench table memcheck racecheck (default: all, in that order).
set -u
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on the lent machines
OUT=${OUT:-/tmp/eaglesim-out}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-400}
START=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
STEPS=${*:-build tests bench table memcheck racecheck}
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

for step in $STEPS; do
  t=$(left)
  if [ "$t" -lt 20 ]; then note "$step: skipped (out of time)"; continue; fi
  case $step in
    build)
      cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON -DEAGLESIM_TESTS=ON \
        -DEAGLESIM_BENCH=OFF > "$OUT/build.log" 2>&1 &&
      timeout $((t - 10)) ninja -C build -j16 eaglesim eaglesim_gpu_tests >> "$OUT/build.log" 2>&1
      rc=$?; note "build: rc=$rc ($(( $(date +%s) - START )) s)"
      if [ $rc -ne 0 ]; then grep -E "error|Error" "$OUT/build.log" | head -20; exit 1; fi
      nvidia-smi topo -m > "$OUT/topo.log" 2>&1 ;;
    tests)
      timeout $(( t > 150 ? 150 : t - 5 )) ./build/tests/eaglesim_gpu_tests > "$OUT/tests.log" 2>&1
      note "tests: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.log" | tr '\n' ' ')"
      grep -E "FAILED|Failure|wrong|Expected" "$OUT/tests.log" | head -20 ;;
    bench)
      timeout $(( t > 60 ? 60 : t - 5 )) ./build/eaglesim bench-comm --strategy nccl,oneshot,oneshot_push,twoshot,fused,quant \
        --sizes 43008 --iters 50 > "$OUT/bench_42k.txt" 2>&1
      note "bench 42KiB: rc=$?"; cat "$OUT/bench_42k.txt" >> "$summary" ;;
    table)
      timeout $(( t > 150 ? 150 : t - 5 )) ./build/eaglesim bench-comm --strategy nccl,oneshot,oneshot_push,twoshot,fused,quant \
        --sizes 1K:64M --json "$OUT/bench.json" --csv "$OUT/bench.csv" > "$OUT/bench_table.txt" 2>&1
      note "table: rc=$?"; cat "$OUT/bench_table.txt" >> "$summary" ;;
    memcheck|racecheck)
      EAGLESIM_TEST_QUICK=1 EAGLESIM_TEST_TIMEOUT_S=20 timeout $(( t > 120 ? 120 : t - 5 )) \
        compute-sanitizer --tool $step --report-api-errors no --error-exitcode 9 ./build/tests/eaglesim_gpu_tests \
        --gtest_filter='CustomAllreduce.EveryStrategyDtypeAndSize:CustomAllreduce.FusedResidualRmsNorm:CustomAllreduce.BackToBack*' \
        > "$OUT/$step.log" 2>&1
      note "$step: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' "$OUT/$step.log" | tr '\n' ' ')" ;;
  esac
done
echo "==== summary"; cat "$summary"
