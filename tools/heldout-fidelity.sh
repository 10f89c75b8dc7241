#!/usr/bin/env bash
# Held-out fidelity on one GPU: calibrate on a training split of models and shapes, then run
# `eaglesim fidelity` on traces of models, token counts and KV lengths the calibration never
# measured, and write the table docs/fidelity.md shows ("Held-out fidelity").
#
#   OUT=dir tools/heldout-fidelity.sh [build]
#
# `build` first configures and builds build-gpu/ (Release, CUDA, sm_90 unless CUDA_ARCH), as
# tools/gpu-measure.sh build does. The split:
#   training  calibrate on the traces of Llama-3.1-8B, Qwen3-32B and Qwen3-30B-A3B (MoE) at TP1, 4
#             tokens, KV 2048, --grid coarse --grid-models llama-3.1-8b,qwen3-32b,qwen3-30b-a3b:
#             their traces' shapes and the designed grid over their widths, head layouts and
#             expert GEMMs only
#   in sample the three training traces (4 tokens, KV 2048)
#   held out  Llama-3.1-70B (another width family), Qwen3-8B and Qwen3-14B (other widths, 40 heads:
#             a group of 5), one rank of Qwen3-235B-A22B at TP8 (other expert widths, 128 experts
#             of 192 columns per rank), the training models at token counts 1, 16, 64 and KV 512
#             to 32768, and
#             batch x tree verify traces (SGLang's flags): Llama-3.1-8B batch 8 and 32 with the
#             (5, 4, 8) tree, Qwen3-8B batch 64 with the (3, 1, 4) chain; no batch trace is
#             calibrated on (the designed grid's batch points are of the training layouts, other
#             batches and KV lengths)
# SPLIT=lowbit (default dense, the split above) is the low-bit, MLA and large-MoE split, one TP8
# rank of each model replayed on one GPU (--ranks 1):
#   training  Kimi-K2 (MLA, 8 heads per rank, 384 experts, int4) and GLM-4.5 (GQA 12 query heads
#             over 1 KV head per rank, 160 experts, fp8), 4 tokens, KV 2048, --grid-models
#             kimi-k2-instruct,glm-4.5 (the grid in both weight formats)
#   held out  Kimi-K2 at 1 x 32768 and 16 x 8192 tokens x KV, DeepSeek-V3 (MLA with 16 heads per
#             rank, 256 experts) in fp8 and int4, GLM-4.5 at 32 tokens (fp8) and in int4,
#             Qwen3-235B-A22B in fp8, and batch verify: Kimi-K2 batch 8 (3, 1, 4) chain, GLM-4.5
#             batch 16 (5, 4, 8) tree
# and writes only its int4, fp8 and MLA fits, and the kernel transitions with those weight
# formats, into the presets (tools/paste-fitted.py --keys).
# Every case is run with the fused add + RMSNorm (the engines' default) and without it
# (--no-fused-add-norm): the A/B whose sign the simulator must get right. MODES="fused" runs the
# first only; ATTENTION_FIT (geometry or roofline, default geometry) is calibrate's --attention-fit;
# GRID_TP (e.g. 1,8; default empty: the traces' tp) is calibrate's --grid-tp; SKIP_70B=1 leaves the 70B case out (its weights take a minute to place); ITERS
# (default 10) sets the replays per case.
#
# Writes into $OUT (default /tmp/eaglesim-heldout): heldout.md (the table), heldout.json (the
# same, per case), calibrated.json, fidelity-fused.json, fidelity-unfused.json, fidelity-*-sample.json,
# presets/2x-h200-nvlink.json and presets/8x-h200-nvswitch.json (the presets with this run's fitted
# models, tools/paste-fitted.py), and the logs calibrate.log, fidelity-*.log. Budget: about 8 minutes on one H200 (calibration
# about 3, the replays the rest). BASELINE: the uncalibrated preset beside every case
# (default 2x-h200-nvlink, cut to one GPU by fidelity's --ranks 1; a path; or "pasted": this run's
# own presets/2x-h200-nvlink.json, the preset as it would ship with these fits).
set -u
OUT=${OUT:-/tmp/eaglesim-heldout}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$(dirname "$0")/.." || exit 1
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then export PATH=/usr/local/cuda/bin:$PATH; fi
BUILD_DIR=${BUILD_DIR:-build-gpu}
BASELINE=${BASELINE:-2x-h200-nvlink}
ITERS=${ITERS:-10}
ATTENTION_FIT=${ATTENTION_FIT:-geometry}
E=$BUILD_DIR/eaglesim
START=$(date +%s)
say() { echo "[heldout $(( $(date +%s) - START ))s] $*" | tee -a "$OUT/heldout.log"; }

if [ "${1:-}" = build ]; then
  say "build $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DEAGLESIM_CUDA=ON >"$OUT/build.log" 2>&1 && cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target eaglesim \
    >>"$OUT/build.log" 2>&1 || { say "build failed (build.log)"; exit 1; }
fi
[ -x "$E" ] || { echo "heldout-fidelity: $E not built (run with 'build')" >&2; exit 2; }

T=$OUT/traces
mkdir -p "$T"
# gen_case NAME MODEL TOKENS KV [TP [WEIGHTS]]: a verify trace of one request (TP1 unless TP; a
# TP8 trace is replayed as one rank's ops, --ranks 1, its allreduces free; bf16 weights unless
# WEIGHTS is fp8 or int4).
gen_case() {
  "$E" gen --model "models/llm/$2.json" --tp "${5:-1}" --weight-dtype "${6:-bf16}" --tokens "$3" --kv-len "$4" \
    -o "$T/$1.json" >/dev/null 2>>"$OUT/gen.log"
}
# gen_batch NAME MODEL BATCH STEPS TOPK DRAFT_TOKENS KV [TP [WEIGHTS]]: a verify trace of BATCH
# requests with SGLang's speculative configuration (a tree when TOPK > 1).
gen_batch() {
  "$E" gen --model "models/llm/$2.json" --tp "${8:-1}" --weight-dtype "${9:-bf16}" --batch "$3" \
    --speculative-num-steps "$4" --speculative-eagle-topk "$5" --speculative-num-draft-tokens "$6" --kv-len "$7" \
    -o "$T/$1.json" >/dev/null 2>>"$OUT/gen.log"
}
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1 | tr -dc '0-9')
# PASTE_KEYS: the fitted models this split writes into the presets (a regular expression; empty:
# all of them, with the launch gap and the kind-pair transitions).
case "${SPLIT:-dense}" in
dense)
  TRAIN_MODELS=llama-3.1-8b,qwen3-32b,qwen3-30b-a3b
  SAMPLE="llama-3.1-8b_t4_kv2048:llama-3.1-8b:4:2048 qwen3-32b_t4_kv2048:qwen3-32b:4:2048
qwen3-30b-a3b_t4_kv2048:qwen3-30b-a3b:4:2048"
  HELDOUT="llama-3.1-8b_t1_kv32768:llama-3.1-8b:1:32768 llama-3.1-8b_t64_kv512:llama-3.1-8b:64:512
qwen3-32b_t16_kv8192:qwen3-32b:16:8192 qwen3-32b_t2_kv16384:qwen3-32b:2:16384
qwen3-8b_t8_kv4096:qwen3-8b:8:4096 qwen3-8b_t1_kv1024:qwen3-8b:1:1024
qwen3-14b_t2_kv16384:qwen3-14b:2:16384 qwen3-14b_t32_kv1024:qwen3-14b:32:1024
qwen3-30b-a3b_t16_kv8192:qwen3-30b-a3b:16:8192 qwen3-235b-a22b_tp8_t4_kv4096:qwen3-235b-a22b:4:4096:8"
  # Llama-3.1-70B TP1 needs ~132 GiB of weights: only on a 141 GB part.
  [ "${GPU_MIB:-0}" -ge 140000 ] && [ -z "${SKIP_70B:-}" ] && HELDOUT="$HELDOUT llama-3.1-70b_t4_kv4096:llama-3.1-70b:4:4096"
  BATCH_HELDOUT="llama-3.1-8b_b8_tree548_kv2048:llama-3.1-8b:8:5:4:8:2048
llama-3.1-8b_b32_tree548_kv1024:llama-3.1-8b:32:5:4:8:1024
qwen3-8b_b64_chain314_kv1024:qwen3-8b:64:3:1:4:1024"
  PASTE_KEYS=""
  ;;
lowbit)
  # One TP8 rank of the large MoE models with low-bit weights: MLA (Kimi-K2, int4) and GQA
  # (GLM-4.5, fp8) trained; DeepSeek-V3 (MLA with 16 heads per rank, 256 experts) and
  # Qwen3-235B-A22B held out, each weight format on a model it was not trained on.
  TRAIN_MODELS=kimi-k2-instruct,glm-4.5
  SAMPLE="kimi-k2_tp8_int4_t4_kv2048:kimi-k2-instruct:4:2048:8:int4 glm-4.5_tp8_fp8_t4_kv2048:glm-4.5:4:2048:8:fp8"
  HELDOUT="kimi-k2_tp8_int4_t1_kv32768:kimi-k2-instruct:1:32768:8:int4 kimi-k2_tp8_int4_t16_kv8192:kimi-k2-instruct:16:8192:8:int4
deepseek-v3_tp8_fp8_t4_kv4096:deepseek-v3:4:4096:8:fp8 deepseek-v3_tp8_int4_t2_kv16384:deepseek-v3:2:16384:8:int4
glm-4.5_tp8_fp8_t32_kv1024:glm-4.5:32:1024:8:fp8 glm-4.5_tp8_int4_t8_kv4096:glm-4.5:8:4096:8:int4
qwen3-235b-a22b_tp8_fp8_t4_kv4096:qwen3-235b-a22b:4:4096:8:fp8"
  BATCH_HELDOUT="kimi-k2_tp8_int4_b8_chain314_kv2048:kimi-k2-instruct:8:3:1:4:2048:8:int4
glm-4.5_tp8_fp8_b16_tree548_kv1024:glm-4.5:16:5:4:8:1024:8:fp8"
  PASTE_KEYS='^(gemm|grouped_gemm):(fp8|int4)(:|$)|^attention:mla'
  ;;
*) echo "heldout-fidelity: SPLIT: expected dense or lowbit, got '$SPLIT'" >&2; exit 2 ;;
esac
MODES=${MODES:-fused unfused}
sample_files="" heldout_files=""
for c in $SAMPLE; do IFS=: read -r n m tk kv tp wd <<<"$c"; gen_case "$n" "$m" "$tk" "$kv" "$tp" "$wd" || exit 2; sample_files=$sample_files${sample_files:+,}$T/$n.json; done
for c in $HELDOUT; do IFS=: read -r n m tk kv tp wd <<<"$c"; gen_case "$n" "$m" "$tk" "$kv" "$tp" "$wd" || exit 2; heldout_files=$heldout_files${heldout_files:+,}$T/$n.json; done
for c in $BATCH_HELDOUT; do
  IFS=: read -r n m b st tk dt kv tp wd <<<"$c"
  gen_batch "$n" "$m" "$b" "$st" "$tk" "$dt" "$kv" "$tp" "$wd" || exit 2
  heldout_files=$heldout_files${heldout_files:+,}$T/$n.json
done
say "traces: in sample $SAMPLE; held out $(echo $HELDOUT $BATCH_HELDOUT)"

CAL=("$E" calibrate --traces "$sample_files" --ranks 1 --grid coarse --grid-models "$TRAIN_MODELS"
     --attention-fit "$ATTENTION_FIT" ${GRID_TP:+--grid-tp "$GRID_TP"} -o "$OUT/calibrated.json")
say "${CAL[*]}"
"${CAL[@]}" >"$OUT/calibrate.log" 2>&1 || { say "calibrate failed (calibrate.log)"; tail -5 "$OUT/calibrate.log"; exit 1; }
grep -E "plan \(|fitted |wrote " "$OUT/calibrate.log" | tee -a "$OUT/heldout.log"

# The H200 presets with this run's fitted models pasted in (copy them into models/topologies/ to make
# the uncalibrated H200 predictions use them; then tools/write-goldens.sh, the preset prices change).
mkdir -p "$OUT/presets"
cp models/topologies/2x-h200-nvlink.json models/topologies/8x-h200-nvswitch.json "$OUT/presets/"
python3 tools/paste-fitted.py ${PASTE_KEYS:+--keys "$PASTE_KEYS"} "$OUT/calibrated.json" \
  "eaglesim calibrate --ranks 1 --grid coarse --grid-models $TRAIN_MODELS (tools/heldout-fidelity.sh SPLIT=${SPLIT:-dense})" \
  "$OUT"/presets/*.json >>"$OUT/heldout.log" 2>&1 || { say "paste-fitted failed (heldout.log)"; exit 1; }
# BASELINE=pasted: the uncalibrated preset is the one just written (what the shipped preset
# predicts once these fits are copied into models/topologies/).
[ "$BASELINE" = pasted ] && BASELINE=$OUT/presets/2x-h200-nvlink.json

rc=0
# `ideal` allreduces: one rank of a TP8 trace replayed on one GPU has no peers, so its allreduces
# are free in both backends (NCCL on a one-rank communicator would copy each buffer, a cost of
# the method that no TP8 deployment has); at TP1 there are none.
for mode in $MODES; do
  flag=()
  [ "$mode" = unfused ] && flag=(--no-fused-add-norm)
  for set in sample heldout; do
    files=$sample_files
    [ "$set" = heldout ] && files=$heldout_files
    json=$OUT/fidelity-$mode.json
    [ "$set" = sample ] && json=$OUT/fidelity-$mode-sample.json
    say "fidelity $set ($mode)"
    "$E" fidelity "$files" --topology "$OUT/calibrated.json" --baseline-topology "$BASELINE" --strategy ideal --ranks 1 \
      --iters "$ITERS" "${flag[@]}" --json "$json" >"$OUT/fidelity-$mode-$set.log" 2>&1 || rc=1
  done
done
python3 tools/heldout_table.py --out "$OUT" --split "training: calibrate ${CAL[*]:1}" >>"$OUT/heldout.log" 2>&1 || rc=1
say "done (exit $rc): $OUT/heldout.md"
exit "$rc"
