#!/usr/bin/env bash
# The CUDA replay of batched, tree-shaped EAGLE-3 cycles on one GPU, beside the simulator on the
# H200 preset: Llama-3.1-8B TP1 with its EAGLE-3 head at B in {1, 8, 32, 64} x (num_steps,
# eagle_topk, num_draft_tokens) in {(3,1,4), (5,4,8), (6,8,32)}, KV 2048, the engine's cycle
# (gen --engine-cycle: draft-extend, top-k, tree building, sampling, host synchronisation), then
# the GPU tests of the batch/tree replay and the per-cycle kernels. Run from anywhere inside the
# repository on a machine with one H200 (or more; the first is used):
#
#   OUT=dir tools/gpu-batch-replay.sh
#
# Writes into $OUT: batch-replay.md (the table), batch-replay.json (one row per configuration,
# both backends), replay-B*-s*-k*-d*.json and sim-B*-....json (the reports), tests.log, and
# batch-replay.log. The replays and tests are planned for at most 4 minutes on one H200 (12
# processes of ~8-12 s: GEMM tuning, the 16 GB of weights filled once per step, ITERS timed
# replays per step); past BUDGET_S the remaining configurations are listed as skipped. Building
# is not part of that: the script builds BUILD_DIR only when its binaries are missing.
# Exit status: 0 when every replay and test passed, 1 otherwise.
#
# Environment: OUT (default /tmp/eaglesim-batch); BUILD_DIR (default build-gpu); CUDA_ARCH
# (default 90); ITERS (timed replays per step, default 10); WARMUP (default 2); KV (default
# 2048); BATCHES (default "1 8 32 64"); CONFIGS (default "3,1,4 5,4,8 6,8,32"); SIM_TOPOLOGY
# (default 2x-h200-nvlink, the preset calibrate starts from on an H200); BUDGET_S (default 200).
set -u
OUT=${OUT:-/tmp/eaglesim-batch}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then export PATH=/usr/local/cuda/bin:$PATH; fi
BUILD_DIR=${BUILD_DIR:-build-gpu}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-2}
KV=${KV:-2048}
BATCHES=${BATCHES:-1 8 32 64}
CONFIGS=${CONFIGS:-3,1,4 5,4,8 6,8,32}
SIM_TOPOLOGY=${SIM_TOPOLOGY:-2x-h200-nvlink}
BUDGET_S=${BUDGET_S:-200}
E=$BUILD_DIR/eaglesim
LOG=$OUT/batch-replay.log
: > "$LOG"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

if [ ! -x "$E" ] || [ ! -x "$BUILD_DIR/tests/eaglesim_gpu_tests" ]; then
  echo "building $BUILD_DIR (not counted in the replay budget)" | tee -a "$LOG"
  if ! { cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
           -DEAGLESIM_CUDA=ON -DEAGLESIM_TESTS=ON >> "$LOG" 2>&1 &&
         cmake --build "$BUILD_DIR" -j "$(nproc)" --target eaglesim eaglesim_gpu_tests >> "$LOG" 2>&1; }; then
    echo "gpu-batch-replay: the build failed (see $LOG)" >&2
    exit 1
  fi
fi

START=$(date +%s)
FAILED=0
ROWS=()
for b in $BATCHES; do
  for c in $CONFIGS; do
    IFS=, read -r steps topk draft <<< "$c"
    name="B$b-s$steps-k$topk-d$draft"
    if [ $(( $(date +%s) - START )) -gt "$BUDGET_S" ]; then
      echo "### $name: skipped (past BUDGET_S = $BUDGET_S s)" | tee -a "$LOG"
      ROWS+=("$name $b $steps $topk $draft skipped")
      continue
    fi
    trace=$W/$name.json
    echo "### $name: gen, run --backend cuda, run --backend sim --topology $SIM_TOPOLOGY" | tee -a "$LOG"
    t0=$(date +%s)
    status=ok
    if ! "$E" gen --model models/llm/llama-3.1-8b.json --draft models/llm/llama-3.1-8b-eagle3.json --tp 1 \
         --batch "$b" --kv-len "$KV" --speculative-num-steps "$steps" --speculative-eagle-topk "$topk" \
         --speculative-num-draft-tokens "$draft" --engine-cycle -o "$trace" >> "$LOG" 2>&1; then
      status=gen-failed
    else
      timeout 120 "$E" run "$trace" --backend cuda --ranks 1 --strategy ideal --iters "$ITERS" --warmup "$WARMUP" \
        --timeout 60 --json "$OUT/replay-$name.json" >> "$LOG" 2>&1 || status=cuda-failed
      "$E" run "$trace" --backend sim --topology "$SIM_TOPOLOGY" --strategy ideal \
        --json "$OUT/sim-$name.json" >> "$LOG" 2>&1 || status=sim-failed
    fi
    [ "$status" = ok ] || { echo "### $name: $status (see $LOG)" | tee -a "$LOG"; FAILED=1; }
    ROWS+=("$name $b $steps $topk $draft $status")
    echo "    $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
  done
done

echo "### ctest -L gpu: the batch/tree replay and the per-cycle kernels" | tee -a "$LOG"
timeout 120 ctest --test-dir "$BUILD_DIR" -L gpu -R 'EngineCycle|ReplayAttention|DraftCandidates|CudaReplay\.BatchTree' \
  --output-on-failure > "$OUT/tests.log" 2>&1 || FAILED=1
tail -3 "$OUT/tests.log" | tee -a "$LOG"

printf '%s\n' "${ROWS[@]}" | python3 tools/batch_replay_table.py "$OUT" "$SIM_TOPOLOGY" "$KV" \
  > "$OUT/batch-replay.md" || FAILED=1
cat "$OUT/batch-replay.md"
echo "total $(( $(date +%s) - START )) s (replays and tests); exit $FAILED" | tee -a "$LOG"
exit "$FAILED"
