#!/usr/bin/env bash
# Everything that needs the 2 x H200 machine, in one call, most important first; each step gets
# a slice of what is left of BUDGET_S so the call never overruns. Writes to OUT:
#   summary.txt  build.log  replay.log  calibrate.log  fidelity.log  fidelity.json  kernels.log  calibrated.json
#   (calibrated_1gpu.json with `single`); the device tool returns at most 8 files, so with more
#   than that the logs travel packed as logs.tar.gz.
# Usage (repo root, on the GPU machine): OUT=dir BUDGET_S=560 tools/device_session.sh [steps]
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/eaglesim-out}
mkdir -p "$OUT"
BUDGET_S=${BUDGET_S:-560}
START=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
cap() { local t; t=$(left); echo $(( t - 5 < $1 ? t - 5 : $1 )); }
S="$OUT/summary.txt"; : > "$S"
note() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$S"; }
E=build/eaglesim
G=build/tests/eaglesim_gpu_tests
W=$(mktemp -d)
# One calibration on 2 GPUs over every trace the fidelity step uses (TP1 shapes too):
# calibrate_all CAP_S OUTPUT LOG [calibrate flags...]
calibrate_all() {
  local cap_s=$1 output=$2 log=$3; shift 3
  timeout "$(cap "$cap_s")" $E calibrate "$@" --traces traces/llama-3.1-8b_tp2_t4.json,traces/llama-3.1-70b_tp2_t4.json,traces/llama-3.1-8b_tp1_t4.json,$W/l70_tp1.json,$W/kineto.json \
    --ranks 2 --strategy nccl,oneshot,twoshot,fused,quant -o "$output" > "$log" 2>&1
}
# A TP2 verify trace of MODEL (models/llm/MODEL.json) cut to LAYERS decoder layers; prints its path:
# layers_trace MODEL LAYERS
layers_trace() {
  local cfg="$W/$1-$2.json" trace="$W/$1-$2.trace.json"
  if [ ! -f "$trace" ]; then
    python3 -c "import json; c=json.load(open('models/llm/$1.json')); c['num_hidden_layers']=$2; json.dump(c,open('$cfg','w'))"
    $E gen --model "$cfg" --tp 2 --tokens 4 -o "$trace" > /dev/null 2>&1
  fi
  echo "$trace"
}
STEPS=${*:-build replay calibrate fidelity kernels fusedab stress diag70b sanitize}

for step in $STEPS; do
  if [ "$(left)" -lt 25 ]; then note "$step: SKIPPED (out of time)"; continue; fi
  case $step in
  build)
    { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv; nvidia-smi topo -m; } >> "$S" 2>&1
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON \
      -DEAGLESIM_TESTS=ON -DEAGLESIM_BENCH=OFF > "$OUT/build.log" 2>&1 || \
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DEAGLESIM_CUDA=ON \
      -DEAGLESIM_TESTS=OFF -DEAGLESIM_BENCH=OFF >> "$OUT/build.log" 2>&1
    timeout "$(cap 200)" ninja -C build -k 0 -j"$(nproc)" eaglesim eaglesim_gpu_tests >> "$OUT/build.log" 2>&1
    note "build rc=$?"; grep -m5 -A5 "error" "$OUT/build.log" | head -30 | tee -a "$S" ;;
  replay)
    # Issue 5: the Llama-3.1-8B TP2 trace through the CUDA backend, TP1 on one GPU, mpirun,
    # the imported Kineto trace, and PyTorch running the same ops for comparison.
    $E import kineto tests/data/kineto/llama8b_tp2_t4_nccl_rank0.json.gz tests/data/kineto/llama8b_tp2_t4_nccl_rank1.json.gz \
      --config llama-3.1-8b -q -o "$W/kineto.json" > /dev/null 2>&1
    python3 tools/llama8b_decoder_trace.py --tp 2 --out "$W/l8dec_tp2.json" > /dev/null 2>&1
    R="--iters 30 --warmup 5 --timeout 60"
    {
      echo "### gen Llama-3.1-8B TP2 (verify+draft+decode), cuda"
      timeout "$(cap 90)" $E run traces/llama-3.1-8b_tp2_t4.json --backend cuda $R --strategy nccl,oneshot,twoshot,fused,quant,ideal --json "$W/run_tp2.json"; echo "rc=$?"
      echo "### decoder-only Llama-3.1-8B TP2 (what PyTorch ran), cuda"
      timeout "$(cap 60)" $E run "$W/l8dec_tp2.json" --backend cuda $R --strategy nccl,oneshot,fused,ideal --json "$W/run_dec.json"; echo "rc=$?"
      python3 tools/print_kinds.py "$W/run_dec.json"
      echo "### imported Kineto trace, cuda (op-times as traced shapes)"
      timeout "$(cap 60)" $E run "$W/kineto.json" --backend cuda $R --strategy nccl,oneshot,fused,ideal --json "$W/run_kin.json"; echo "rc=$?"
      python3 tools/print_kinds.py "$W/run_kin.json"
      echo "### imported Kineto trace, sim on 2x-h200-nvlink"
      $E run "$W/kineto.json" --topology 2x-h200-nvlink --strategy nccl,oneshot,fused,ideal --json "$W/sim_kin.json"; echo "rc=$?"
      python3 tools/print_kinds.py "$W/sim_kin.json"
      echo "### gen Llama-3.1-8B TP1 on one GPU, cuda"
      timeout "$(cap 60)" $E run traces/llama-3.1-8b_tp1_t4.json --backend cuda $R --ranks 1 --strategy nccl; echo "rc=$?"
      python3 tools/llama8b_decoder_trace.py --tp 1 --out "$W/l8dec_tp1.json" > /dev/null 2>&1
      echo "### decoder-only Llama-3.1-8B TP1 on one GPU (what PyTorch ran), cuda"
      timeout "$(cap 60)" $E run "$W/l8dec_tp1.json" --backend cuda $R --strategy nccl --json "$W/run_dec1.json"; echo "rc=$?"
      python3 tools/print_kinds.py "$W/run_dec1.json"
      echo "### mpirun -np 2, gen Llama-3.1-8B TP2, cuda"
      timeout "$(cap 60)" mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE $E run traces/llama-3.1-8b_tp2_t4.json --backend cuda $R --strategy nccl; echo "rc=$?"
      echo "### PyTorch, same decoder ops, TP2 and TP1"
      timeout "$(cap 90)" python3 tools/torch_reference_step.py --tp 2 --iters 30 --warmup 5; echo "rc=$?"
      timeout "$(cap 60)" python3 tools/torch_reference_step.py --tp 1 --iters 30 --warmup 5; echo "rc=$?"
    } >> "$OUT/replay.log" 2>&1  # appends: the mpi step may have run first
    note "replay done"; grep -E "^###|^(nccl|oneshot|twoshot|fused|quant|ideal) |^rc=|^\{|^error" "$OUT/replay.log" >> "$S" ;;
  calibrate)
    # Issue 7: one calibration on 2 GPUs over every trace the fidelity step uses (TP1 shapes too).
    $E gen --model models/llm/llama-3.1-70b.json --tp 1 --tokens 4 --draft models/llm/llama-3.1-70b-eagle3.json \
      --kv-len 2048 -o "$W/l70_tp1.json" > /dev/null 2>&1
    [ -f "$W/kineto.json" ] || $E import kineto tests/data/kineto/llama8b_tp2_t4_nccl_rank0.json.gz \
      tests/data/kineto/llama8b_tp2_t4_nccl_rank1.json.gz --config llama-3.1-8b -q -o "$W/kineto.json" > /dev/null 2>&1
    calibrate_all 170 "$OUT/calibrated.json" "$OUT/calibrate.log" ${CALIBRATE_FLAGS:-}
    note "calibrate rc=$?"; { grep -E "vs GPU 0|used only by" "$OUT/calibrate.log"; tail -5 "$OUT/calibrate.log"; } | cut -c1-400 >> "$S" ;;
  fidelity)
    {
      echo "### fidelity TP2 (2 GPUs)"
      timeout "$(cap 200)" $E fidelity "traces/llama-3.1-8b_tp2_t4.json,traces/llama-3.1-70b_tp2_t4.json,$W/kineto.json" \
        --topology "${FIDELITY_TOPOLOGY:-$OUT/calibrated.json}" --baseline-topology 2x-h200-nvlink --strategy nccl,oneshot,twoshot,fused,quant \
        --ranks 2 --iters 10 --json "$OUT/fidelity.json"; echo "rc=$?"
      echo "### fidelity TP1 (1 GPU)"
      timeout "$(cap 90)" $E fidelity "traces/llama-3.1-8b_tp1_t4.json,$W/l70_tp1.json" --topology "${FIDELITY_TOPOLOGY:-$OUT/calibrated.json}" \
        --baseline-topology 2x-h200-nvlink --strategy nccl --ranks 1 --iters 10 --json "$W/fidelity_tp1.json"; echo "rc=$?"
      cat "$W/fidelity_tp1.json" 2>/dev/null
    } > "$OUT/fidelity.log" 2>&1
    note "fidelity done"; grep -E "^###|^summary|^rc=" "$OUT/fidelity.log" >> "$S" ;;
  single)
    # Issue 7 on a machine with ONE H200 (kind nvidia-h200): a calibration made on that GPU over
    # the TP1 traces, and fidelity of both TP1 traces against it (preset beside it).
    $E gen --model models/llm/llama-3.1-70b.json --tp 1 --tokens 4 --draft models/llm/llama-3.1-70b-eagle3.json \
      --kv-len 2048 -o "$W/l70_tp1.json" > /dev/null 2>&1
    timeout "$(cap 120)" $E calibrate --traces traces/llama-3.1-8b_tp1_t4.json,$W/l70_tp1.json --ranks 1 \
      -o "$OUT/calibrated_1gpu.json" >> "$OUT/calibrate.log" 2>&1
    note "calibrate (1 GPU) rc=$?"; grep -E "compute layer .*placement" "$OUT/calibrate.log" | tail -2 >> "$S"
    {
      echo "### fidelity TP1 (machine with 1 GPU, its own calibration)"
      timeout "$(cap 90)" $E fidelity "traces/llama-3.1-8b_tp1_t4.json,$W/l70_tp1.json" --topology "$OUT/calibrated_1gpu.json" \
        --baseline-topology 2x-h200-nvlink --strategy nccl --ranks 1 --iters 10 --json "$OUT/fidelity.json"; echo "rc=$?"
    } > "$W/single.log" 2>&1
    cat "$W/single.log" >> "$OUT/fidelity.log"
    note "single done"; grep -E "^###|^summary|^ +nccl +[0-9]|^rc=" "$W/single.log" >> "$S" ;;
  ncclstate)
    # Issue 7: NCCL's 70B TP2 step ran ~300 us slower in a process that had replayed other traces
    # first (fidelity, sixth session, calls 1 and 4; the custom kernels did not move). Process
    # history, or NCCL's registration of the graphs' buffers? Fresh process vs after the 8B trace,
    # with NCCL's graph buffer registration on (default) and off; then what NCCL logs about it.
    export EAGLESIM_NCCL_PRIME=0  # the unprimed behaviour this step looks at (cuda_backend.cpp)
    {
      for ev in "" "NCCL_GRAPH_REGISTER=0"; do
        echo "### fresh process, 70B TP2 nccl,oneshot ${ev:-default}"
        env $ev timeout "$(cap 60)" $E run traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 10 --warmup 3 \
          --strategy nccl,oneshot 2>&1 | grep -E "^(nccl|oneshot) "
        echo "### after the 8B TP2 trace in the same process (fidelity), ${ev:-default}"
        env $ev timeout "$(cap 90)" $E fidelity traces/llama-3.1-8b_tp2_t4.json,traces/llama-3.1-70b_tp2_t4.json \
          --topology 2x-h200-nvlink --strategy nccl,oneshot --ranks 2 --iters 10 2>/dev/null | grep -E "^ +(nccl|oneshot) +[0-9]"
      done
      echo "### NCCL_DEBUG=INFO, fresh process, 70B TP2 nccl: registration, channels, algorithms"
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,REG,TUNING timeout "$(cap 60)" $E run traces/llama-3.1-70b_tp2_t4.json \
        --backend cuda --iters 5 --warmup 2 --strategy nccl > "$W/ncclinfo.log" 2>&1
      grep -iE "regist|NCCL_|version|channel|algo|proto" "$W/ncclinfo.log" | sed -E 's/^[^ ]+ [0-9]+ \[[0-9]+\] //' | sort | uniq -c | sort -rn | head -40
    } > "$W/ncclstate.log" 2>&1
    cat "$W/ncclstate.log" >> "$OUT/replay.log"
    note "ncclstate done"; grep -E "^###|^(nccl|oneshot) | +(nccl|oneshot) +[0-9]" "$W/ncclstate.log" >> "$S"; unset EAGLESIM_NCCL_PRIME ;;
  ncclhist)
    # Issue 7, after `ncclstate`: which history slows NCCL's 70B TP2 step? A process of its own;
    # after one-shot on the same weights (communicators created and destroyed, placement shared);
    # after the 8B trace (another placement too); the last two also without NCCL's cuMem buffers.
    R70="traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 10 --warmup 3"
    export EAGLESIM_NCCL_PRIME=0  # the unprimed behaviour this step looks at (cuda_backend.cpp)
    {
      echo "### A: fresh process, nccl"
      timeout "$(cap 45)" $E run $R70 --strategy nccl 2>&1 | grep -E "^(nccl|oneshot) "
      echo "### B: after oneshot in the same process (same weights), oneshot,nccl"
      timeout "$(cap 60)" $E run $R70 --strategy oneshot,nccl 2>&1 | grep -E "^(nccl|oneshot) "
      echo "### B2: nccl,oneshot,nccl"
      timeout "$(cap 60)" $E run $R70 --strategy nccl,oneshot,nccl 2>&1 | grep -E "^(nccl|oneshot) "
      for ev in "" "NCCL_CUMEM_ENABLE=0"; do
        echo "### C: after the 8B trace (fidelity), nccl ${ev:-default}"
        env $ev timeout "$(cap 60)" $E fidelity traces/llama-3.1-8b_tp2_t4.json,traces/llama-3.1-70b_tp2_t4.json \
          --topology 2x-h200-nvlink --strategy nccl --ranks 2 --iters 10 2>/dev/null | grep -E "^ +(nccl|oneshot) +[0-9]"
      done
      echo "### E: fresh process, nccl NCCL_CUMEM_ENABLE=0"
      NCCL_CUMEM_ENABLE=0 timeout "$(cap 45)" $E run $R70 --strategy nccl 2>&1 | grep -E "^(nccl|oneshot) "
      # Seventh session: any earlier replay (one with free allreduces: no communicator, same
      # weights), or the same NCCL step before?
      echo "### D: after ideal in the same process (same weights, no communicator), ideal,nccl"
      timeout "$(cap 60)" $E run $R70 --strategy ideal,nccl 2>&1 | grep -E "^(nccl|ideal) "
      echo "### F: nccl after nccl (fidelity of the 70B trace twice)"
      timeout "$(cap 90)" $E fidelity traces/llama-3.1-70b_tp2_t4.json,traces/llama-3.1-70b_tp2_t4.json \
        --topology 2x-h200-nvlink --strategy nccl --ranks 2 --iters 10 2>/dev/null | grep -E "^ +nccl +[0-9]"
    } > "$W/ncclhist.log" 2>&1
    cat "$W/ncclhist.log" >> "$OUT/replay.log"
    note "ncclhist done"; cat "$W/ncclhist.log" | cut -c1-60 >> "$S"; unset EAGLESIM_NCCL_PRIME ;;
  primeorder)
    # Issue 7: primed (the default since the seventh session; =1 says so explicitly), does NCCL's
    # 70B TP2 step stop depending on the order of the strategies (nccl first in a fresh process
    # vs after oneshot)?
    R70="traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 10 --warmup 3"
    {
      for order in nccl,oneshot oneshot,nccl; do
        echo "### EAGLESIM_NCCL_PRIME=1, fresh process, $order"
        EAGLESIM_NCCL_PRIME=1 timeout "$(cap 70)" $E run $R70 --strategy $order 2>&1 | grep -E "^(nccl|oneshot) "
      done
    } > "$W/primeorder.log" 2>&1
    cat "$W/primeorder.log" >> "$OUT/replay.log"
    note "primeorder done"; cut -c1-60 "$W/primeorder.log" >> "$S" ;;
  fidelity70)
    # The 70B TP2 A/B in two more processes (each a new weight placement), same calibration.
    {
      for rep in 1 2; do
        echo "### fidelity 70B TP2, process $rep"
        timeout "$(cap 60)" $E fidelity traces/llama-3.1-70b_tp2_t4.json --topology "${FIDELITY_TOPOLOGY:-$OUT/calibrated.json}" \
          --baseline-topology 2x-h200-nvlink --strategy nccl,oneshot,twoshot,fused,quant --ranks 2 --iters 10 2>/dev/null | grep -v "note:"; echo "rc=$?"
      done
    } > "$W/fidelity70.log" 2>&1
    cat "$W/fidelity70.log" >> "$OUT/fidelity.log"
    note "fidelity70 done"; grep -E "^###|^summary|^ +(nccl|oneshot|twoshot|fused|quant) " "$W/fidelity70.log" >> "$S" ;;
  kernels)
    {
      echo "### GPU tests (all but stress)"
      EAGLESIM_TEST_TIMEOUT_S=20 timeout "$(cap 120)" $G --gtest_filter='-Stress.*'; echo "rc=$?"
      echo "### bench-comm 42 KiB and the trace sizes"
      timeout "$(cap 40)" $E bench-comm --strategy nccl,oneshot,oneshot_push,twoshot,fused,quant --sizes 32768,43008,57344 --iters 50; echo "rc=$?"
    } > "$OUT/kernels.log" 2>&1
    note "kernels done"; grep -E "^\[  (PASSED|FAILED)|FAILED \]|^ +[0-9]+ |rc=|^###" "$OUT/kernels.log" >> "$S" ;;
  mpi)
    # Issue 5: every strategy through `mpirun -np 2` (our own ones over CUDA IPC) against the
    # same strategies with one process driving both GPUs, on the generated Llama-3.1-8B TP2 trace.
    R="--iters 30 --warmup 5 --timeout 60 --strategy nccl,oneshot,twoshot,fused,quant,ideal"
    {
      echo "### mpirun -np 2, gen Llama-3.1-8B TP2, cuda, every strategy"
      timeout "$(cap 120)" mpirun --allow-run-as-root --bind-to none -np 2 -x NCCL_NVLS_ENABLE $E run traces/llama-3.1-8b_tp2_t4.json \
        --backend cuda $R --json "$W/mpi.json"; echo "rc=$?"
      python3 -c "import json; [print(r['strategy'], *[n for n in r['notes'] if 'self-check' in n or 'MPI' in n], sep=' | ') for r in json.load(open('$W/mpi.json'))['results']]"
      echo "### one process (threads), the same"
      timeout "$(cap 90)" $E run traces/llama-3.1-8b_tp2_t4.json --backend cuda $R; echo "rc=$?"
      echo "### mpirun -np 2 with commands that use no GPU: refused by every process, exit 2"
      for c in "inspect traces/llama-3.1-8b_tp2_t4.json" "run traces/llama-3.1-8b_tp2_t4.json --topology 2x-h200-nvlink"; do
        timeout 30 mpirun --allow-run-as-root --bind-to none -np 2 $E $c 2>&1 | grep -E "^error" | sort | uniq -c | sed -E 's/^ +([0-9]+) /refused by \1 process(es): /'; echo "rc=${PIPESTATUS[0]}"
      done
    } >> "$OUT/replay.log" 2>&1
    note "mpi done"; grep -E "^###|^(nccl|oneshot|twoshot|fused|quant|ideal) |^rc=|^error|^refused" "$OUT/replay.log" >> "$S" ;;
  stress)
    { EAGLESIM_STRESS_SECONDS=15 timeout "$(cap 130)" $G --gtest_filter='Stress.*'; echo "rc=$?"; } >> "$OUT/kernels.log" 2>&1
    note "stress done"; grep -E "^STRESS|^STALL|time-capped|^\[  (PASSED|FAILED)|FAILED \]" "$OUT/kernels.log" >> "$S" ;;
  fusedab)
    # Issue 6: fused split rows pulled + rendezvous (default) vs pulled + cluster vs pushed, vs oneshot.
    {
      echo "### fused A/B at 3 x 7168 bf16: pull+rendezvous (default), pull+cluster, push; three runs each"
      for rep in 1 2 3; do
        timeout "$(cap 20)" $E bench-comm --strategy oneshot,oneshot_push,fused --sizes 43008 --iters 50 | grep -E "^ +43008" | sed 's/$/ rendezvous/'
        EAGLESIM_FUSED_CLUSTER=1 timeout "$(cap 20)" $E bench-comm --strategy oneshot,fused --sizes 43008 --iters 50 | grep -E "^ +43008" | sed 's/$/ cluster/'
        EAGLESIM_FUSED_PUSH=1 timeout "$(cap 20)" $E bench-comm --strategy oneshot,fused --sizes 43008 --iters 50 | grep -E "^ +43008" | sed 's/$/ push/'
      done
      echo "### fused, wider sizes (default)"
      timeout "$(cap 30)" $E bench-comm --strategy oneshot,fused --sizes 8K,14336,16K,28672,32K,57344,64K,256K --iters 50
      echo "### decoder-only Llama-3.1-8B TP2 replay, nccl / fused / ideal"
      python3 tools/llama8b_decoder_trace.py --tp 2 --out "$W/l8dec_tp2.json" > /dev/null 2>&1
      timeout "$(cap 60)" $E run "$W/l8dec_tp2.json" --backend cuda --iters 30 --warmup 5 --strategy nccl,oneshot,fused,ideal --json "$W/run_dec.json"; echo "rc=$?"
      python3 tools/print_kinds.py "$W/run_dec.json"
    } >> "$OUT/kernels.log" 2>&1
    note "fusedab done"; grep -E "cluster$|rendezvous$|push$|^(nccl|oneshot|fused|ideal) " "$OUT/kernels.log" | tail -17 >> "$S" ;;
  chunks)
    # Issue 6: the fused split target at 3 x 7168 bf16 (896 units per row): 256 (default, 4 chunks
    # of 256/256/256/128), 128 (7 chunks; 21 blocks > the 16-block cap, so 5), 448 (2 chunks),
    # 0 (no split), against oneshot in the same process.
    {
      echo "### fused split target sweep at 3 x 7168 bf16, three rounds"
      for rep in 1 2 3; do
        for t in "" 128 448 0; do
          EAGLESIM_FUSED_CHUNK_UNITS=$t timeout "$(cap 20)" $E bench-comm --strategy oneshot,fused --sizes 43008 --iters 50 | grep -E "^ +43008" | sed "s/\$/ target=${t:-256}/"
        done
      done
    } >> "$OUT/kernels.log" 2>&1
    note "chunks done"; grep -E "target=" "$OUT/kernels.log" >> "$S" ;;
  diag70b)
    # Why do the custom allreduces gain so little on Llama-3.1-70B TP2? Order, clocks, power.
    nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
      --format=csv,noheader -lms 200 > "$W/smi.csv" 2>&1 &
    SMI=$!
    {
      echo "### Llama-3.1-70B TP2 verify, cuda, order ideal,oneshot,nccl,oneshot,nccl"
      timeout "$(cap 90)" $E run traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 20 --warmup 5 \
        --strategy ideal,oneshot,nccl,twoshot --json "$W/run_70.json"; echo "rc=$?"
      python3 tools/print_kinds.py "$W/run_70.json"
      timeout "$(cap 60)" $E run traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 20 --warmup 5 --strategy nccl,oneshot; echo "rc=$?"
    } > "$W/diag.log" 2>&1
    kill $SMI 2>/dev/null
    { cat "$W/diag.log"; echo "### nvidia-smi samples (every 200 ms): min/max per GPU"; python3 - "$W/smi.csv" <<'PY'
import sys, collections
rows = [l.strip().split(", ") for l in open(sys.argv[1]) if l.count(",") >= 5]
by = collections.defaultdict(list)
for r in rows: by[r[0]].append(r)
for g, rs in by.items():
    def col(i):
        v = [float(x[i].split()[0]) for x in rs if x[i].split()[0].replace('.', '', 1).isdigit()]
        return (min(v), max(v)) if v else None
    print(f"GPU {g}: {len(rs)} samples, sm MHz {col(1)}, mem MHz {col(2)}, W {col(3)}, C {col(4)}, reasons {sorted(set(x[5] for x in rs))}")
PY
    } >> "$OUT/replay.log" 2>&1
    note "diag70b done"; grep -E "^###|^(nccl|oneshot|twoshot|ideal) |^GPU " "$OUT/replay.log" | tail -16 >> "$S" ;;
  diag7)
    # Issue 7: where does the calibrated simulator miss the replay? Per kind, free allreduces, for
    # 70B TP2 (8 % too low last time) and 8B TP2 (fine), on two GPUs, on one GPU (each), and the
    # simulator with the calibration of this call (needs the calibrate step first).
    {
      for tr in llama-3.1-70b_tp2_t4 llama-3.1-8b_tp2_t4; do
        echo "### $tr ideal, cuda, 2 GPUs"
        timeout "$(cap 60)" $E run traces/$tr.json --backend cuda --iters 20 --warmup 5 --strategy ideal --json "$W/d2.json" > "$W/d2.txt" 2>&1; echo "rc=$?"
        python3 tools/print_kinds.py "$W/d2.json"; grep -o "per-rank median step[^\"]*" "$W/d2.json"
        for dev in 0 1; do
          echo "### $tr ideal, cuda, --ranks 1 on GPU $dev"
          CUDA_VISIBLE_DEVICES=$dev timeout "$(cap 50)" $E run traces/$tr.json --backend cuda --ranks 1 --iters 20 --warmup 5 --strategy ideal --json "$W/d1.json" > /dev/null 2>&1; echo "rc=$?"
          python3 tools/print_kinds.py "$W/d1.json"
        done
        echo "### $tr ideal, sim, calibrated topology of this call"
        $E run traces/$tr.json --topology "$OUT/calibrated.json" --strategy ideal,nccl,oneshot --json "$W/ds.json" > /dev/null 2>&1; echo "rc=$?"
        python3 tools/print_kinds.py "$W/ds.json"
      done
    } > "$W/diag7.log" 2>&1
    cat "$W/diag7.log" >> "$OUT/replay.log"
    note "diag7 done"; grep -E "^###|^(ideal|nccl|oneshot) |per-rank" "$W/diag7.log" >> "$S" ;;
  calibrate_long)
    # Issue 7: the same calibration with chains 10x longer (3 ms graphs), to $OUT/calibrated_long.json.
    # (after the calibrate step, which writes the TP1 70B and imported traces it also measures)
    calibrate_all 200 "$OUT/calibrated_long.json" "$W/calibrate_long.log" --chain-us 3000
    note "calibrate_long rc=$?"; tail -3 "$W/calibrate_long.log" | cut -c1-400 >> "$S"; cat "$W/calibrate_long.log" >> "$OUT/calibrate.log" ;;
  layers)
    # Does the 70B TP2 step's twoshot-vs-NCCL gap (~1.2 us per allreduce, step level) show in a
    # step of a few layers? The same model with 4, 16 and 80 decoder layers (8B: 8 and 32), every
    # strategy in one run (one weight placement).
    {
      for spec in llama-3.1-70b:4 llama-3.1-70b:16 llama-3.1-70b:80 llama-3.1-8b:8 llama-3.1-8b:32; do
        m=${spec%%:*}; L=${spec##*:}; T=$(layers_trace "$m" "$L")
        for rep in 1 2; do
          echo "### $m $L layers TP2, rep $rep"
          timeout "$(cap 60)" $E run "$T" --backend cuda --iters 20 --warmup 5 --strategy nccl,twoshot,oneshot,fused,ideal; echo "rc=$?"
        done
      done
    } > "$W/layers.log" 2>&1
    cat "$W/layers.log" >> "$OUT/replay.log"
    note "layers done"; grep -E "^###|^ *(nccl|oneshot|twoshot|fused|ideal) " "$W/layers.log" >> "$S" ;;
  orders)
    # Is the fast compute of the first strategy of a run an order effect or NCCL's? The 70B TP2
    # step with 16 layers in several strategy orders, and one strategy per process.
    {
      T16=$(layers_trace llama-3.1-70b 16)
      for order in nccl,twoshot,oneshot,ideal ideal,twoshot,oneshot,nccl twoshot,nccl,twoshot,nccl ideal nccl twoshot oneshot; do
        echo "### 70B 16 layers TP2, order $order"
        timeout "$(cap 60)" $E run "$T16" --backend cuda --iters 20 --warmup 5 --strategy $order --json "$W/o.json" > /dev/null 2>&1; echo "rc=$?"
        python3 tools/print_kinds.py "$W/o.json"
      done
      echo "### 70B 80 layers TP2, order ideal,twoshot,oneshot,nccl"
      timeout "$(cap 60)" $E run traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 20 --warmup 5 --strategy ideal,twoshot,oneshot,nccl --json "$W/o.json" > /dev/null 2>&1; echo "rc=$?"
      python3 tools/print_kinds.py "$W/o.json"
    } > "$W/orders.log" 2>&1
    cat "$W/orders.log" >> "$OUT/replay.log"
    note "orders done"; cat "$W/orders.log" >> "$S" ;;
  domains)
    # Memory-sync domains: NCCL launches its kernels in the remote domain (and as clusters), ours
    # in the default one. The 70B TP2 step of 16 layers, one strategy per process, with NCCL's
    # domain/cluster switched off and ours switched to the remote domain; then 80 layers.
    {
      T16=$(layers_trace llama-3.1-70b 16)
      R16="$E run $T16 --backend cuda --iters 20 --warmup 5"
      for rep in 1 2; do
        for v in "ideal:" "nccl:" "nccl:NCCL_MEM_SYNC_DOMAIN=0" "nccl:NCCL_CGA_CLUSTER_SIZE=0" "oneshot:" "oneshot:EAGLESIM_COMM_REMOTE_DOMAIN=1" "fused:" "fused:EAGLESIM_COMM_REMOTE_DOMAIN=1"; do
          st=${v%%:*}; ev=${v#*:}
          echo "### 16 layers rep $rep: $st ${ev:-default}"
          env $ev timeout "$(cap 40)" $R16 --strategy $st --json "$W/d.json" > /dev/null 2>&1; echo "rc=$?"
          python3 tools/print_kinds.py "$W/d.json" | tail -1
        done
      done
      for ev in "" "EAGLESIM_COMM_REMOTE_DOMAIN=1 NCCL_MEM_SYNC_DOMAIN=0"; do
        echo "### 80 layers, nccl,oneshot,twoshot,fused,quant,ideal ${ev:-default}"
        env $ev timeout "$(cap 90)" $E run traces/llama-3.1-70b_tp2_t4.json --backend cuda --iters 20 --warmup 5 \
          --strategy nccl,oneshot,twoshot,fused,quant,ideal --json "$W/d.json" > /dev/null 2>&1; echo "rc=$?"
        python3 tools/print_kinds.py "$W/d.json"
      done
      echo "### GPU tests with EAGLESIM_COMM_REMOTE_DOMAIN=1 (all but stress)"
      EAGLESIM_COMM_REMOTE_DOMAIN=1 EAGLESIM_TEST_TIMEOUT_S=20 timeout "$(cap 120)" $G --gtest_filter='-Stress.*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED \]"; echo "rc=$?"
    } > "$W/domains.log" 2>&1
    cat "$W/domains.log" >> "$OUT/replay.log"
    note "domains done"; cat "$W/domains.log" >> "$S" ;;
  variants)
    nvidia-smi --query-gpu=index,power.draw,clocks.sm,clocks.mem,clocks_event_reasons.active --format=csv,noheader -lms 50 > "$W/vsmi.csv" 2>&1 &
    VSMI=$!
    # Issue 7: which part of a step does the calibrated simulator misprice? Each variant keeps only
    # some op kinds of the verify step (tools/compute_variants.py), replayed on one GPU with free
    # allreduces; the variants' traces and this call's calibration come back to price them here.
    {
      for tr in ${VARIANT_TRACES:-llama-3.1-70b_tp2_t4 llama-3.1-8b_tp1_t4}; do
        mkdir -p "$W/v_$tr"; python3 tools/compute_variants.py traces/$tr.json "$W/v_$tr" > /dev/null
        for v in ${VARIANT_LIST:-all gemm nongemm gate_up_down gate_up qkv_o norm_gemm gemm_attn gate_up_8 gate_up_16 gate_up_32}; do
          [ "$(left)" -lt 30 ] && break
          timeout "$(cap 40)" $E run "$W/v_$tr/$v.json" --backend cuda --ranks 1 --iters 20 --warmup 5 --strategy ideal \
            --json "$W/v.json" > /dev/null 2>&1
          echo "$tr $v${EAGLESIM_WEIGHT_POOL:+ (single pool)} rc=$? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); x=r["results"][0]; print(round(x["verify_us"],1), x["verify_spread"])' "$W/v.json" 2>&1 | head -c 300)"
        done
      done
    } > "$W/variants.log" 2>&1
    kill $VSMI 2>/dev/null
    python3 - "$W/vsmi.csv" >> "$W/variants.log" 2>&1 <<'PY'
import sys, collections
by = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = [x.strip() for x in l.split(",")]
    if len(r) >= 5 and r[1].split()[0].replace('.', '', 1).isdigit(): by[r[0]].append(r)
for g, rs in sorted(by.items()):
    w = sorted(float(x[1].split()[0]) for x in rs); sm = sorted(float(x[2].split()[0]) for x in rs)
    print(f"smi GPU {g}: {len(rs)} samples, W p50 {w[len(w)//2]:.0f} max {w[-1]:.0f}, SM MHz min {sm[0]:.0f} p50 {sm[len(sm)//2]:.0f}, reasons {collections.Counter(x[4] for x in rs).most_common(4)}")
PY
    cat "$W/variants.log" >> "$OUT/replay.log"
    note "variants done"; cat "$W/variants.log" >> "$S" ;;
  torchsplit)
    # Issue 5: where PyTorch's extra time on the same decoder ops goes (per kernel class, eager
    # profile) next to the replay's per-kind split of the same ops.
    {
      python3 tools/llama8b_decoder_trace.py --tp 2 --out "$W/l8dec_tp2.json" > /dev/null 2>&1
      echo "### decoder-only Llama-3.1-8B TP2 replay, nccl / ideal"
      timeout "$(cap 60)" $E run "$W/l8dec_tp2.json" --backend cuda --iters 30 --warmup 5 --strategy nccl,ideal --json "$W/run_dec.json" > /dev/null 2>&1; echo "rc=$?"
      python3 tools/print_kinds.py "$W/run_dec.json"
      echo "### PyTorch, same ops, TP2, graph step + eager profile per kernel class"
      timeout "$(cap 120)" python3 tools/torch_reference_step.py --tp 2 --iters 20 --warmup 5 --profile; echo "rc=$?"
    } > "$W/torchsplit.log" 2>&1
    cat "$W/torchsplit.log" >> "$OUT/replay.log"
    note "torchsplit done"; grep -E "^###|^(nccl|ideal) |^\{" "$W/torchsplit.log" >> "$S" ;;
  sanitize)
    for tool in ${SANITIZERS:-memcheck racecheck synccheck}; do
      [ "$(left)" -lt 25 ] && { note "$tool: SKIPPED (out of time)"; continue; }
      EAGLESIM_TEST_QUICK=1 EAGLESIM_TEST_TIMEOUT_S=20 timeout "$(cap 60)" compute-sanitizer --tool $tool --report-api-errors no \
        --error-exitcode 9 $G --gtest_filter='CustomAllreduce.EveryStrategyDtypeAndSize:CustomAllreduce.FusedSplitRows:CudaKernels.*' \
        > "$W/$tool.log" 2>&1
      note "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY|^\[  (PASSED|FAILED)' "$W/$tool.log" | tr '\n' ' ')"
      { echo "### compute-sanitizer $tool"; grep -E -A12 '^========= (Warning|Error|Race|Invalid)' "$W/$tool.log" | head -80; } >> "$OUT/kernels.log"
    done ;;
  esac
done
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
  (cd "$OUT" && tar czf logs.tar.gz ./*.log && rm -f ./*.log) && note "logs packed into logs.tar.gz (more than 8 files)"
fi
echo "==== summary"; cat "$S"
