#!/usr/bin/env bash
# One device call for the row-split fused allreduce + residual + RMSNorm (issue #6, target:
# fused <= oneshot + 1 us at 3 x 7168 bf16 on 2 x H200): build, the custom-allreduce GPU tests,
# bench-comm oneshot vs fused (4K:1M plus the 7168-wide shapes), the same fused sizes under
# other split targets (EAGLESIM_FUSED_CHUNK_UNITS: 0 = one block per row, the old kernels),
# the row-sync A/B (split rows through thread-block clusters, the default on sm_90, vs the
# global-memory rendezvous, EAGLESIM_FUSED_CLUSTER=0), then compute-sanitizer racecheck/memcheck
# on the fused tests. Each step gets a slice of the
# remaining time so the call never overruns its limit.
# Usage (repo root, on the GPU machine): OUT=dir BUDGET_S=280 tools/run_fused_check.sh [steps]
# steps: any of build tests bench ab tune racecheck memcheck (default: all, in that order).
set -u
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on the lent machines
OUT=${OUT:-/tmp/eaglesim-out}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-280}
START=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
cap() { local t=$1 m=$2; echo $(( t - 5 < m ? t - 5 : m )); }  # min(time left - 5, step max)
STEPS=${*:-build tests bench ab tune racecheck memcheck}
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
# 4K:1M doubling, plus 1..4 rows of 7168 (bench-comm shapes count % 7168 == 0 as 7168-wide rows).
SIZES=4K:1M,14336,28672,43008,57344
TUNE_SIZES=8K,14336,16K,28672,43008,57344,64K,256K

for step in $STEPS; do
  t=$(left)
  if [ "$t" -lt 20 ]; then note "$step: skipped (out of time)"; continue; fi
  case $step in
    build)
      cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON -DEAGLESIM_TESTS=ON \
        -DEAGLESIM_BENCH=OFF > "$OUT/build.log" 2>&1 &&
      timeout $((t - 10)) ninja -C build -j"$(nproc)" eaglesim eaglesim_gpu_tests >> "$OUT/build.log" 2>&1
      rc=$?; note "build: rc=$rc ($(( $(date +%s) - START )) s)"
      if [ $rc -ne 0 ]; then grep -E "error|Error" "$OUT/build.log" | head -20; exit 1; fi ;;
    tests)
      timeout "$(cap "$t" 120)" ./build/tests/eaglesim_gpu_tests --gtest_filter='CustomAllreduce.*' > "$OUT/tests.log" 2>&1
      note "tests: rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/tests.log" | tr '\n' ' ')"
      grep -E "FAILED|Failure|wrong|Expected" "$OUT/tests.log" | head -20 ;;
    bench)
      timeout "$(cap "$t" 90)" ./build/eaglesim bench-comm --strategy oneshot,fused --sizes "$SIZES" --iters 50 \
        --csv "$OUT/bench.csv" > "$OUT/bench.txt" 2>&1
      note "bench (default split target): rc=$?"; cat "$OUT/bench.txt" >> "$summary" ;;
    ab)
      # Same call, alternating row syncs twice, so drift between runs shows up in the spread.
      for round in 1 2; do
        for sync in 1 0; do
          t=$(left); [ "$t" -lt 25 ] && { note "ab $round cluster=$sync: skipped (out of time)"; continue; }
          EAGLESIM_FUSED_CLUSTER=$sync timeout "$(cap "$t" 40)" ./build/eaglesim -v bench-comm --strategy oneshot,fused \
            --sizes "$TUNE_SIZES" --iters 50 > "$OUT/ab_${round}_$sync.txt" 2>&1
          note "ab round $round EAGLESIM_FUSED_CLUSTER=$sync: rc=$? $(grep -o 'through [a-z -]*' "$OUT/ab_${round}_$sync.txt" | head -1)"
          grep -E '^ +[0-9]' "$OUT/ab_${round}_$sync.txt" | awk -v c="$sync" '{print "  cluster=" c ": " $0}' >> "$summary"
        done
      done ;;
    tune)
      for units in 0 128 512; do
        t=$(left); [ "$t" -lt 25 ] && { note "tune $units: skipped (out of time)"; continue; }
        EAGLESIM_FUSED_CHUNK_UNITS=$units timeout "$(cap "$t" 40)" ./build/eaglesim bench-comm --strategy fused \
          --sizes "$TUNE_SIZES" --iters 50 > "$OUT/tune_$units.txt" 2>&1
        note "tune EAGLESIM_FUSED_CHUNK_UNITS=$units: rc=$?"
        grep -E '^ +[0-9]' "$OUT/tune_$units.txt" | awk -v u="$units" '{print "  units=" u ": " $1 " B fused " $5 " us (ctx " $6 ", #wrong " $9 ")"}' >> "$summary"
      done ;;
    racecheck|memcheck)
      EAGLESIM_TEST_QUICK=1 EAGLESIM_TEST_TIMEOUT_S=20 timeout "$(cap "$t" 70)" \
        compute-sanitizer --tool $step --report-api-errors no --error-exitcode 9 ./build/tests/eaglesim_gpu_tests \
        --gtest_filter='CustomAllreduce.FusedSplit*:CustomAllreduce.FusedBackToBack*' > "$OUT/$step.log" 2>&1
      note "$step: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)' "$OUT/$step.log" | tr '\n' ' ')" ;;
  esac
done
echo "==== summary"; cat "$summary"
