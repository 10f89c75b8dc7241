#!/usr/bin/env bash
# shellcheck disable=SC2317  # the step_* functions are called by name ("step_$step")
# The GPU measurements behind docs/results.md, docs/fidelity.md and docs/reliability.md, on the
# GPUs of this machine. Run from anywhere inside the repository:
#
#   OUT=dir tools/gpu-measure.sh [STEP...]
#
# Steps (default: every step that fits the visible GPUs, in this order):
#   build       configure and build build-gpu/ (Release, -DEAGLESIM_CUDA=ON, sm_90 unless CUDA_ARCH)
#   tests       ctest -L gpu (the GPU tests, stress included), then the rest of the suite
#   bench-comm  allreduce strategies over 1 KiB..64 KiB and 42 KiB, then 1 KiB..64 MiB (needs >= 2 GPUs)
#   replay      run --backend cuda on every shipped trace whose TP fits the GPUs; with >= 2 GPUs
#               also the imported PyTorch trace, the decoder-layer traces and mpirun -np 2
#   fidelity    calibrate (TP1 traces on 1 GPU; TP2, imported and TP1 traces on 2), then
#               eaglesim fidelity against the CUDA replay
#   kernels     the engine-grade kernels: their GPU tests, PyTorch on the same shapes
#               (tools/torch_attention_bench.py, torch_gemm_bench.py, torch_linear_bench.py,
#               torch_elementwise_bench.py, torch_fp8_gemm_bench.py, if torch imports), then
#               bench_attention, bench_gemm, bench_dense_gemm, bench_elementwise and bench_fp8_gemm
#               against the floor measured in the same run
#   sanitizer   compute-sanitizer memcheck, racecheck, synccheck over the kernel GPU tests
#   torch       tools/torch_reference_step.py (PyTorch on the replay's decoder ops), if torch imports
#   kinds       the TP8 per-rank verify steps of Kimi-K2 (Thinking: int4 experts; Instruct: fp8
#               128x128 blocks), DeepSeek-V3 (fp8 blocks) and Llama-3.1-70B (bf16, fp8, int4) as
#               their checkpoints ship, run --backend cuda --ranks 1 --strategy ideal, and each op
#               kind against the floor measured in the same process (tools/roofline_kinds.py)
#   int4        the dense int4 GEMM on wgmma (opt-in, EAGLESIM_INT4_GEMM=wgmma): its GPU tests under
#               memcheck, racecheck and synccheck, bench_gemm on Llama-3.1-70B TP8 (the wgmma kernel
#               beside the stream-K one, the floor and FLOPs at TENSOR_TFLOPS, default 890), and the
#               Llama-3.1-70B TP8 int4 verify step with each kernel (tools/roofline_kinds.py)
#   graph       tools/record_graph_trace.py (Llama-3.1-8B TP1 verify step in one CUDA graph, profiled),
#               trimmed by tools/trim_kineto.py into $OUT/graph/, imported with --config, then run
#               --op-times measured on the simulator and the CUDA backend beside the recorded step
#
# Writes into $OUT (default /tmp/eaglesim-gpu): summary.txt (one line per step with its exit
# status, then the key lines of each log), STEP.log per step, calibrated.json, fidelity.json,
# bench-comm.json, bench-attention.json, bench-gemm.json, bench-dense-gemm.json,
# bench-elementwise.json, and the replay reports replay-*.json. When that makes more than 8 files,
# everything except summary.txt and the JSON files named above goes into logs.tar.gz.
# Exit status: 0 when every step succeeded, 1 otherwise.
#
# Environment: OUT; BUILD_DIR (default build-gpu, relative to the repository); CUDA_ARCH (default 90); JOBS (default: all
# cores); CMD_TIMEOUT_S (limit per command, default 1200); ITERS (timed replays, default 30);
# BASELINE (the uncalibrated preset fidelity reports beside the calibration; default: the preset
# calibrate starts from for this GPU); FIDELITY_70B_REPEATS (extra processes of the 70B TP2 A/B,
# default 0). NCCL_NVLS_ENABLE=0 is always set (no NVLink multicast).
set -u
OUT=${OUT:-/tmp/eaglesim-gpu}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1  # relative to where it was called from
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

ALL="build tests bench-comm replay kernels kinds int4 fidelity sanitizer torch graph"
STEPS=${*:-$ALL}
for step in $STEPS; do
  case " $ALL " in *" $step "*) ;; *) echo "gpu-measure: unknown step '$step' (steps: $ALL)" >&2; exit 2 ;; esac
done

BUILD_DIR=${BUILD_DIR:-build-gpu}
CMD_TIMEOUT_S=${CMD_TIMEOUT_S:-1200}
ITERS=${ITERS:-30}
E=$BUILD_DIR/eaglesim
G=$BUILD_DIR/tests/eaglesim_gpu_tests
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
S=$OUT/summary.txt
: > "$S"
START=$(date +%s)
FAILED=0
note() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$S"; }
t() { timeout "$CMD_TIMEOUT_S" "$@"; }
keep() { grep -E "$1" "$2" | cut -c1-300 >> "$S"; }  # key lines of a log into the summary

# GPUs this process may use: CUDA_VISIBLE_DEVICES when set, otherwise what nvidia-smi lists.
if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
  NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c '[^[:space:]]')
else
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1 | tr -dc '0-9')
GPU_MIB=${GPU_MIB:-0}
if [ "$NGPU" -lt 1 ]; then
  echo "gpu-measure: no GPU visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES is empty)" >&2
  exit 3
fi
{
  echo "gpu-measure: $NGPU GPU(s) visible: ${GPU_NAME:-unknown}, ${GPU_MIB} MiB each; OUT=$OUT"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  nvidia-smi topo -m 2>&1
} >> "$S"

# The preset calibrate starts from for this GPU (the same choice as `eaglesim calibrate` without
# --base), used as fidelity's uncalibrated baseline.
preset_for_gpu() {
  case "$GPU_NAME" in
    *H200*) if [ "$NGPU" -le 2 ]; then echo 2x-h200-nvlink; else echo 8x-h200-nvswitch; fi ;;
    *H100*) echo 8x-h100-nvswitch ;;
    *B200*) echo 8x-b200-nvswitch ;;
    *A100*) echo 8x-a100-nvswitch ;;
    *L40S*) echo 8x-l40s-pcie4 ;;
    *"RTX PRO 6000"*) if [ "$NGPU" -le 4 ]; then echo 4x-rtx-pro-6000-pcie5; else echo 8x-rtx-pro-6000-pcie5; fi ;;
  esac
}
BASELINE=${BASELINE-$(preset_for_gpu)}
BASELINE_FLAG=()
[ -n "$BASELINE" ] && BASELINE_FLAG=(--baseline-topology "$BASELINE")

# The TP of a shipped trace, from its name (traces/MODEL_tpN_tT.json).
trace_tp() { basename "$1" | sed -nE 's/.*_tp([0-9]+).*/\1/p'; }

# Traces the replay, fidelity and torch steps share, written into $W on first use.
kineto_trace() {
  [ -f "$W/kineto.json" ] || "$E" import kineto tests/data/kineto/llama8b_tp2_t4_nccl_rank0.json.gz \
    tests/data/kineto/llama8b_tp2_t4_nccl_rank1.json.gz --config llama-3.1-8b -q -o "$W/kineto.json" >&2
  echo "$W/kineto.json"
}
l70_tp1_trace() {
  [ -f "$W/l70_tp1.json" ] || "$E" gen --model models/llm/llama-3.1-70b.json --tp 1 --tokens 4 \
    --draft models/llm/llama-3.1-70b-eagle3.json --kv-len 2048 -o "$W/l70_tp1.json" >&2
  echo "$W/l70_tp1.json"
}
decoder_trace() {  # decoder_trace TP
  [ -f "$W/l8dec_tp$1.json" ] || python3 tools/llama8b_decoder_trace.py --tp "$1" --out "$W/l8dec_tp$1.json" >&2
  echo "$W/l8dec_tp$1.json"
}
# The 70B traces need the weights to fit: 70B TP2 ~70 GiB per GPU, 70B TP1 ~130 GiB.
fits_70b_tp2() { [ "$GPU_MIB" -ge 100000 ]; }
fits_70b_tp1() { [ "$GPU_MIB" -ge 140000 ]; }
MPIRUN=()
if command -v mpirun >/dev/null 2>&1; then
  MPIRUN=(mpirun --bind-to none -np 2 -x NCCL_NVLS_ENABLE)
  [ "$(id -u)" -eq 0 ] && MPIRUN=(mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE)
fi
TP2_STRATEGIES=nccl,oneshot,twoshot,fused,quant

step_build() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" \
    -DEAGLESIM_CUDA=ON -DEAGLESIM_TESTS=ON -DEAGLESIM_BENCH=ON &&
  t cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
}

step_kernels() {
  local rc=0 torch_attn="" torch_gemm="" torch_linear="" torch_elem="" torch_fp8=""
  echo "### kernel tests"
  t "$G" --gtest_filter='VerifyAttention*:MoeGemm*:WeightOnlyGemm*:CudaGemm*:GemmFingerprint*:ElementwiseKernels*:ElementwisePlan*:EngineCycle*:ReplayAttention*:DraftCandidates*:Fp8*' || rc=1
  if python3 -c "import torch" 2>/dev/null; then
    echo "### PyTorch on the same shapes"
    t python3 tools/torch_attention_bench.py --out "$OUT/torch-attention.json" --budget-s "${TORCH_BUDGET_S:-120}" \
      && torch_attn="--torch $OUT/torch-attention.json"
    t python3 tools/torch_gemm_bench.py --out "$OUT/torch-gemm.json" && torch_gemm="--torch $OUT/torch-gemm.json"
    t python3 tools/torch_linear_bench.py --out "$OUT/torch-linear.json" && torch_linear="--torch $OUT/torch-linear.json"
    t python3 tools/torch_elementwise_bench.py --out "$OUT/torch-elementwise.json" && \
      torch_elem="--torch $OUT/torch-elementwise.json"
    t python3 tools/torch_fp8_gemm_bench.py --out "$OUT/torch-fp8.json" && torch_fp8="--torch $OUT/torch-fp8.json"
  else
    echo "### PyTorch: skipped (torch does not import)"
  fi
  echo "### bench_attention"
  # shellcheck disable=SC2086  # the --torch option is one word pair or nothing
  t "$BUILD_DIR/bench/bench_attention" $torch_attn --json "$OUT/bench-attention.json" \
    --budget-s "${BENCH_BUDGET_S:-150}" || rc=1
  echo "### bench_gemm"
  # shellcheck disable=SC2086
  t "$BUILD_DIR/bench/bench_gemm" $torch_gemm --json "$OUT/bench-gemm.json" || rc=1
  echo "### bench_dense_gemm"
  # shellcheck disable=SC2086
  t "$BUILD_DIR/bench/bench_dense_gemm" $torch_linear --json "$OUT/bench-dense-gemm.json" || rc=1
  echo "### bench_elementwise"
  # shellcheck disable=SC2086
  t "$BUILD_DIR/bench/bench_elementwise" $torch_elem --json "$OUT/bench-elementwise.json" || rc=1
  echo "### bench_fp8_gemm"
  # shellcheck disable=SC2086
  t "$BUILD_DIR/bench/bench_fp8_gemm" $torch_fp8 --json "$OUT/bench-fp8-gemm.json" || rc=1
  return "$rc"
}
step_tests() {
  local rc=0
  echo "### ctest -L gpu"
  t ctest --test-dir "$BUILD_DIR" -L gpu --output-on-failure || rc=1
  echo "### ctest -LE gpu (the rest of the suite)"
  t ctest --test-dir "$BUILD_DIR" -LE gpu --output-on-failure || rc=1
  return "$rc"
}

step_bench_comm() {
  local rc=0 s=nccl,oneshot,oneshot_push,twoshot,fused,quant
  echo "### bench-comm, latency-bound sizes and 42 KiB (3 x 7168 bf16)"
  t "$E" bench-comm --strategy "$s" --sizes 1K:64K,43008 --iters 50 || rc=1
  echo "### bench-comm 1K:64M"
  t "$E" bench-comm --strategy "$s" --sizes 1K:64M --json "$OUT/bench-comm.json" || rc=1
  return "$rc"
}

replay_one() {  # replay_one NAME TRACE [run flags...]
  local name=$1 trace=$2; shift 2
  echo "### $name: run $trace --backend cuda $*"
  t "$E" run "$trace" --backend cuda --iters "$ITERS" --warmup 5 --timeout 60 "$@" --json "$OUT/replay-$name.json" &&
    python3 tools/print_kinds.py "$OUT/replay-$name.json"
}

step_replay() {
  local rc=0 tr tp name
  for tr in traces/*.json; do
    tp=$(trace_tp "$tr"); name=$(basename "$tr" .json)
    [ -n "$tp" ] || continue
    if [ "$tp" -gt "$NGPU" ]; then echo "### $name: skipped (TP $tp > $NGPU GPUs)"; continue; fi
    case $name in *70b_tp2*) fits_70b_tp2 || { echo "### $name: skipped (needs ~70 GiB per GPU)"; continue; } ;; esac
    if [ "$tp" -eq 1 ]; then
      replay_one "$name" "$tr" --ranks 1 --strategy nccl || rc=1
    else
      replay_one "$name" "$tr" --strategy "$TP2_STRATEGIES,ideal" || rc=1
    fi
  done
  replay_one decoder-tp1 "$(decoder_trace 1)" --strategy nccl || rc=1
  # The imported PyTorch trace on one GPU: its recorded compute (--op-times measured) and
  # eaglesim's kernels (--op-times model) over the same ops.
  replay_one kineto-recorded "$(kineto_trace)" --ranks 1 --strategy ideal --op-times measured || rc=1
  replay_one kineto-kernels "$(kineto_trace)" --ranks 1 --strategy ideal --op-times model || rc=1
  if [ "$NGPU" -ge 2 ]; then
    replay_one decoder-tp2 "$(decoder_trace 2)" --strategy nccl,oneshot,fused,ideal || rc=1
    replay_one kineto "$(kineto_trace)" --strategy nccl,oneshot,fused,ideal || rc=1
    if [ ${#MPIRUN[@]} -gt 0 ]; then
      echo "### mpirun -np 2: run traces/llama-3.1-8b_tp2_t4.json --backend cuda, one process per GPU"
      t "${MPIRUN[@]}" "$E" run traces/llama-3.1-8b_tp2_t4.json --backend cuda --iters "$ITERS" --warmup 5 --timeout 60 \
        --strategy "$TP2_STRATEGIES,ideal" || rc=1
    else
      echo "### mpirun: skipped (not on PATH)"
    fi
  fi
  return "$rc"
}

# The must-show steps of the kernel issue: per-rank TP8 verify, one GPU, no allreduce time.
# Kimi-K2 and DeepSeek-V3 at one request of 4 tokens (KV 4096); Llama-3.1-70B at 32 requests of
# (3, 1, 4) with KV 2048 (gen flags below, with --tp 8 and a --weight-dtype).
L70_VERIFY=(--model models/llm/llama-3.1-70b.json --batch 32 --speculative-num-steps 3 --speculative-eagle-topk 1
            --speculative-num-draft-tokens 4 --kv-len 2048)

# replay_kinds TRACE REPORT: the trace's verify step on one GPU, ideal allreduces, the roofline
# block in the JSON report.
replay_kinds() {
  t "$E" run "$1" --backend cuda --ranks 1 --strategy ideal --iters "${KINDS_ITERS:-10}" --warmup 3 \
    --timeout 120 --json "$2"
}

step_kinds() {
  local rc=0 name reports=()
  kinds_one() {  # kinds_one NAME [gen flags...]
    local n=$1; shift
    echo "### $n: gen $*"
    t "$E" gen --tp 8 "$@" -o "$W/kinds-$n.json" || return 1
    replay_kinds "$W/kinds-$n.json" "$OUT/kinds-$n.json" || return 1
    reports+=("$OUT/kinds-$n.json")
  }
  local moe=(--tokens 4 --kv-len 4096)
  kinds_one kimi-k2-thinking-int4 --model models/llm/kimi-k2-thinking.json "${moe[@]}" || rc=1
  kinds_one kimi-k2-instruct-fp8 --model models/llm/kimi-k2-instruct.json --weight-dtype fp8 "${moe[@]}" || rc=1
  kinds_one deepseek-v3-fp8 --model models/llm/deepseek-v3.json --weight-dtype fp8 "${moe[@]}" || rc=1
  for name in bf16 fp8 int4; do
    kinds_one "llama-3.1-70b-$name" "${L70_VERIFY[@]}" --weight-dtype "$name" || rc=1
  done
  [ ${#reports[@]} -gt 0 ] && { python3 tools/roofline_kinds.py "${reports[@]}" || rc=1; }
  return "$rc"
}

step_int4() {
  local rc=0 kernel reports=()
  local filter='WeightOnlyGemm.Int4Wgmma*:WeightOnlyGemm.DenseRowsAcrossFormats'
  echo "### int4 GEMM tests"
  t "$G" --gtest_filter="$filter" || rc=1
  sanitize "$filter" || rc=1
  echo "### bench_gemm: Llama-3.1-70B TP8, wgmma beside stream-K"
  t "$BUILD_DIR/bench/bench_gemm" --filter llama-70b/tp8 --no-reference --tensor-tflops "${TENSOR_TFLOPS:-890}" \
    --json "$OUT/bench-gemm-int4.json" || rc=1
  t "$E" gen --tp 8 "${L70_VERIFY[@]}" --weight-dtype int4 -o "$W/int4-l70.json" || return 1
  for kernel in stream_k wgmma; do
    echo "### Llama-3.1-70B TP8 int4 verify step, EAGLESIM_INT4_GEMM=$kernel"
    EAGLESIM_INT4_GEMM=$kernel replay_kinds "$W/int4-l70.json" "$OUT/int4-l70-$kernel.json" || { rc=1; continue; }
    reports+=("$OUT/int4-l70-$kernel.json")
  done
  [ ${#reports[@]} -gt 0 ] && { python3 tools/roofline_kinds.py "${reports[@]}" || rc=1; }
  return "$rc"
}

step_fidelity() {
  local rc=0 tp1 i
  tp1=traces/llama-3.1-8b_tp1_t4.json
  fits_70b_tp1 && tp1=$tp1,$(l70_tp1_trace)
  if [ "$NGPU" -ge 2 ]; then
    local tp2=traces/llama-3.1-8b_tp2_t4.json
    fits_70b_tp2 && tp2=$tp2,traces/llama-3.1-70b_tp2_t4.json
    tp2=$tp2,$(kineto_trace)
    echo "### calibrate on 2 GPUs (TP2, imported and TP1 traces)"
    t "$E" calibrate --traces "$tp2,$tp1" --ranks 2 --strategy "$TP2_STRATEGIES" -o "$OUT/calibrated.json" || return 1
    echo "### fidelity TP2 on 2 GPUs"
    t "$E" fidelity "$tp2" --topology "$OUT/calibrated.json" "${BASELINE_FLAG[@]}" --strategy "$TP2_STRATEGIES" \
      --ranks 2 --iters 10 --json "$OUT/fidelity.json" || rc=1
    echo "### fidelity TP1 on 1 GPU"
    t "$E" fidelity "$tp1" --topology "$OUT/calibrated.json" "${BASELINE_FLAG[@]}" --strategy nccl \
      --ranks 1 --iters 10 --json "$OUT/fidelity-tp1.json" || rc=1
    if fits_70b_tp2; then
      for i in $(seq 1 "${FIDELITY_70B_REPEATS:-0}"); do
        echo "### fidelity 70B TP2, extra process $i"
        t "$E" fidelity traces/llama-3.1-70b_tp2_t4.json --topology "$OUT/calibrated.json" "${BASELINE_FLAG[@]}" \
          --strategy "$TP2_STRATEGIES" --ranks 2 --iters 10 || rc=1
      done
    fi
  else
    echo "### calibrate on 1 GPU (TP1 traces)"
    t "$E" calibrate --traces "$tp1" --ranks 1 -o "$OUT/calibrated.json" || return 1
    echo "### fidelity TP1 on 1 GPU"
    t "$E" fidelity "$tp1" --topology "$OUT/calibrated.json" "${BASELINE_FLAG[@]}" --strategy nccl \
      --ranks 1 --iters 10 --json "$OUT/fidelity.json" || rc=1
  fi
  return "$rc"
}

# compute-sanitizer memcheck, racecheck and synccheck over the GPU tests the filter names.
sanitize() {
  local rc=0 tool
  if ! command -v compute-sanitizer >/dev/null 2>&1; then
    echo "compute-sanitizer not found (it ships with the CUDA toolkit)"; return 1
  fi
  for tool in memcheck racecheck synccheck; do
    echo "### compute-sanitizer --tool $tool"
    EAGLESIM_TEST_QUICK=1 t compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 "$G" \
      --gtest_filter="$1" || rc=1
  done
  return "$rc"
}

step_sanitizer() {
  sanitize 'CustomAllreduce.EveryStrategyDtypeAndSize:CustomAllreduce.FusedSplitRows:CudaKernels.*:VerifyAttention.SmallShapes:MoeGemmGrouped.RowsPerExpertAcrossFormats:GemmFingerprint.*:ElementwiseKernels.*:EngineCycle.*:ReplayAttention.BatchedRaggedTreeShapesMatchCpuReference:Fp8ActQuant.*:Fp8Gemm.*:WeightOnlyGemm.*:WeightOnlyGemv.*'
}

step_torch() {
  local rc=0
  echo "### PyTorch, the decoder ops of tools/llama8b_decoder_trace.py, TP1"
  t python3 tools/torch_reference_step.py --tp 1 --iters "$ITERS" --warmup 5 || rc=1
  if [ "$NGPU" -ge 2 ]; then
    echo "### PyTorch, the same at TP2, with a per-kernel-class profile"
    t python3 tools/torch_reference_step.py --tp 2 --iters "$ITERS" --warmup 5 --profile || rc=1
  fi
  return "$rc"
}

# The graph-mode fixture: tests/data/kineto/graph/llama8b_tp1_t4_graph.{json.gz,measured.json}
# are $OUT/graph/llama8b_tp1_t4_graph.trimmed.json.gz and .measured.json of this step.
step_graph() {
  local rc=0 d="$OUT/graph" base="$OUT/graph/llama8b_tp1_t4_graph"
  mkdir -p "$d"
  echo "### tools/record_graph_trace.py: Llama-3.1-8B TP1, 4 tokens, KV 2048, one CUDA graph"
  t python3 tools/record_graph_trace.py --out "$d" || return 1
  t python3 tools/trim_kineto.py "$base.json.gz" "$base.trimmed.json.gz" --steps 2 || return 1
  rm -f "$base.json.gz"
  echo "### import kineto --config llama-3.1-8b --tokens 4 --kv-len 2048"
  t "$E" import kineto "$base.trimmed.json.gz" --config llama-3.1-8b --tokens 4 --kv-len 2048 -o "$d/imported.json" || return 1
  echo "### run --backend sim --op-times measured"
  t "$E" run "$d/imported.json" --backend sim --op-times measured --strategy nccl || rc=1
  echo "### run --backend cuda --op-times measured"
  t "$E" run "$d/imported.json" --backend cuda --op-times measured --strategy nccl --iters "$ITERS" --warmup 5 --timeout 60 || rc=1
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); print("### recorded step_us_median", m["step_us_median"], "(", m["sdpa"], ")")' "$base.measured.json" || rc=1
  return "$rc"
}

# Key lines of each step's log for the summary.
summary_pattern() {
  case $1 in
    build) echo "FAILED:|error:|^-- (CUDA|NCCL|MPI)" ;;
    tests) echo "^###|tests passed|tests failed|Failed|\(Failed\)|\(SKIPPED\)" ;;
    bench-comm) echo "^###|^ +(1024|43008|65536|1048576|67108864) " ;;
    replay) echo "^###|^(nccl|oneshot|twoshot|fused|quant|ideal) |^strategy |^error" ;;
    fidelity) echo "^###|^summary|^error" ;;
    kinds|int4) echo "^###|^\\||^error|^\\[  (PASSED|FAILED)|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^ *llama-70b" ;;
    kernels) echo "^###|^\[  (PASSED|FAILED)|FAILED|Failure|^summary:|^tuning:|^== summary|^(rmsnorm|add_rmsnorm|add_rmsnorm_unfused|residual_add|silu_mul) +[0-9]+ \||^empty kernel|^floor" ;;
    sanitizer) echo "^###|ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^\[  (PASSED|FAILED)" ;;
    torch) echo "^###|^\{|Error" ;;
    graph) echo "^###|^shapes:|^per step:|recorded verify step|^unrecognised|^nccl |^error|Error" ;;
  esac
}

for step in $STEPS; do
  log=$OUT/$step.log
  if [ "$step" != build ] && [ "$step" != torch ] && [ ! -x "$E" ]; then note "$step: SKIPPED ($E not built: run the build step)"; continue; fi
  if [ "$step" = sanitizer ] && [ ! -x "$G" ]; then note "sanitizer: SKIPPED ($G not built)"; continue; fi
  if [ "$step" = bench-comm ] && [ "$NGPU" -lt 2 ]; then note "bench-comm: SKIPPED (needs 2 GPUs, $NGPU visible)"; continue; fi
  if { [ "$step" = torch ] || [ "$step" = graph ]; } && ! python3 -c "import torch" >/dev/null 2>&1; then note "$step: SKIPPED (python3 cannot import torch)"; continue; fi
  t0=$(date +%s)
  "step_${step//-/_}" > "$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || FAILED=1
  note "$step: rc=$rc, $(( $(date +%s) - t0 )) s, log $step.log"
  keep "$(summary_pattern "$step")" "$log"
done

# At most 8 files in $OUT: pack the rest (logs, the per-trace replay reports) when there are more.
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
  mapfile -t extra < <(cd "$OUT" && find . -maxdepth 1 -type f ! -name summary.txt ! -name calibrated.json \
    ! -name fidelity.json ! -name bench-comm.json ! -name bench-attention.json ! -name bench-gemm.json ! -name bench-dense-gemm.json \
    ! -name bench-elementwise.json \
    ! -name logs.tar.gz -printf '%f\n' | sort)
  (cd "$OUT" && tar czf logs.tar.gz "${extra[@]}" && rm -f "${extra[@]}") &&
    note "packed ${#extra[@]} files (logs, replay reports) into logs.tar.gz"
fi
echo "==== $S"
cat "$S"
exit $FAILED
