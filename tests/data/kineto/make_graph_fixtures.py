#!/usr/bin/env python3
"""Writes the graph-mode Kineto fixtures in graph/ and the graph-mode bad inputs in bad/ (run from
this directory). None of them was recorded as such: they are SYNTHETIC, built to the layout
kineto writes for CUDA-graph replays (libkineto/src/CuptiActivity.cpp: every kernel of one
cudaGraphLaunch carries the launch's "correlation", plus "graph id" / "graph node id").

graph/sglang_tp1_synthetic.json: an SGLang-style TP1 verify step of the 4-layer model in
  graph/tiny_llama.json, 3 ProfilerStep#N steps, each one cudaGraphLaunch of the engine's
  kernels under their names in public source (FlashInfer norm.cuh RMSNormKernel /
  FusedAddRMSNormKernel, prefill.cuh BatchPrefillWithPagedKVCacheKernel, cascade.cuh
  VariableLengthMergeStatesKernel, activation.cuh act_and_mul_kernel, the RoPE kernel of
  pos_enc.cuh that the importer does not type, cuBLAS nvjet GEMMs) followed by an eager argmax.
graph/llama8b_tp2_t4_{nccl,one_shot}_graph_rank{0,1}.json.gz: the last step of the recorded
  eager TP2 fixtures (../llama8b_tp2_t4_*_rank*.json.gz, 2 x H200), its kernels with their
  recorded durations replayed back to back as two graph launches, CPU ops dropped (a graph
  replay has none). A collective keeps the shorter of the two ranks' durations (the later rank's,
  which did not wait), and rank 1's clock runs 1000 us ahead.
bad/rocm_graph.json: a graph-mode trace from an AMD GPU (hipGraphLaunch, hipBLASLt kernel names).
bad/graph_tp2_missing_step_rank1.json.gz: rank 1 of the NCCL pair with its second graph launch missing.
"""
import copy, gzip, json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tools"))
from trim_kineto import save as dump  # noqa: E402  (gzip by the name, no timestamp: reproducible bytes)

# graph/tiny_llama.json
H, I, Q, KV, D, LAYERS, VOCAB = 256, 512, 4, 2, 64, 4, 1000

BF = "__nv_bfloat16"
K_EMBED = "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)"
K_NORM = f"void flashinfer::norm::RMSNormKernel<8u, {BF}>({BF}*, {BF}*, {BF}*, unsigned int, unsigned int, unsigned int, float, float)"
K_ADD_NORM = f"void flashinfer::norm::FusedAddRMSNormKernel<8u, {BF}>({BF}*, {BF}*, {BF}*, unsigned int, unsigned int, unsigned int, float, float)"
K_ROPE = f"void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 64u, 8u, 16u, {BF}, long>({BF}*, {BF}*, {BF}*, {BF}*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int)"
K_PREFILL = f"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 16u, 1u, 4u, 8u, 8u, 1u, 4u, (flashinfer::PosEncodingMode)0, {BF}, {BF}, {BF}, float, int, flashinfer::DefaultAttention<false, false, false, false> >, flashinfer::BatchPrefillPagedParams<{BF}, {BF}, {BF}, int> >(flashinfer::BatchPrefillPagedParams<{BF}, {BF}, {BF}, int>)"
K_MERGE = f"void flashinfer::VariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, {BF}, {BF}, int>({BF}*, float*, int*, {BF}*, float*, unsigned int, unsigned int*, unsigned int)"
K_ACT = f"void flashinfer::activation::act_and_mul_kernel<{BF}, &silu>({BF}*, {BF} const*, int)"
K_QKV = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT"
K_O = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT"
K_DOWN = "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_NNT"
K_SPLITK = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false, float, __nv_bfloat16, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*, float*, float*, float const*, float const*, float const*, float const*, float const*)"
K_ARGMAX = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)"


def sglang_layer_kernels():
    ks = [(K_EMBED, 2.0)]
    for layer in range(LAYERS):
        ks += [(K_NORM if layer == 0 else K_ADD_NORM, 3.0), (K_QKV, 6.0), (K_ROPE, 1.5), (K_PREFILL, 8.0),
               (K_MERGE, 1.0), (K_O, 4.0), (K_ADD_NORM, 3.0), ("nvjet_sm90_tst_64x8_64x16_1x1_v_bz_NNT", 9.0),
               (K_ACT, 2.0), (K_DOWN, 7.0), (K_SPLITK, 1.0)]
    ks += [(K_ADD_NORM, 3.0), ("nvjet_sm90_tst_128x8_64x16_1x1_v_bz_NNT", 12.0)]
    return ks


def graph_trace(steps_kernels, rank=None, world=None, clock=0.0, marks=True, device="NVIDIA H200",
                launch="cudaGraphLaunch", eager_tail=True, runtime_prefix="cuda"):
    """steps_kernels: per step, a list of (name, dur, cat) replayed by one graph launch."""
    ev, corr, ext = [], [1000], [1]
    cpu_t, gpu_t = 1000.0, 50000.0 + clock
    for step, kernels in enumerate(steps_kernels):
        start = cpu_t
        c = corr[0]; corr[0] += 1
        e = ext[0]; ext[0] += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": launch, "pid": 1, "tid": 1, "ts": cpu_t + 1, "dur": 8,
                   "args": {"External id": e, "cbid": 311, "correlation": c}})
        step_gpu = gpu_t
        for node, kernel in enumerate(kernels):
            name, dur, cat = kernel[:3]
            if len(kernel) > 3:  # a start given on the common timeline (collectives line up across ranks)
                gpu_t = step_gpu + kernel[3]
            args = {"External id": e, "queued": 0, "device": rank or 0, "context": 1, "stream": 7, "correlation": c,
                    "graph id": 3, "graph node id": 400 + node}
            if cat != "kernel":
                args["bytes"] = 65536
            ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": round(gpu_t, 3), "dur": dur,
                       "args": args})
            gpu_t += dur + 0.3
        cpu_t += 12
        if eager_tail:
            e = ext[0]; ext[0] += 1
            c = corr[0]; corr[0] += 1
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::argmax", "pid": 1, "tid": 1, "ts": cpu_t, "dur": 6,
                       "args": {"External id": e, "Input Dims": [[4, VOCAB], [], []], "Input type": ["float", "", ""]}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": runtime_prefix + "LaunchKernel", "pid": 1, "tid": 1,
                       "ts": cpu_t + 1, "dur": 3, "args": {"External id": e, "cbid": 211, "correlation": c}})
            ev.append({"ph": "X", "cat": "kernel", "name": K_ARGMAX, "pid": 0, "tid": 7, "ts": round(gpu_t, 3),
                       "dur": 2.5, "args": {"External id": e, "device": rank or 0, "stream": 7, "correlation": c}})
            gpu_t += 3.0
            cpu_t += 8
        if marks:
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 5}", "pid": 1, "tid": 1,
                       "ts": start, "dur": cpu_t - start + 1, "args": {"External id": 0}})
        cpu_t += 20
        gpu_t += 20
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": rank or 0, "name": device}],
           "record_shapes": 1, "baseTimeNanoseconds": 1790857026000000000,
           "eaglesim_fixture": "SYNTHETIC: built by tests/data/kineto/make_graph_fixtures.py, not recorded",
           "traceEvents": ev}
    if world:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": world}
    return doc


def tiny_config():
    return {"_source": "SYNTHETIC: a 4-layer Llama shape for tests/data/kineto/graph/sglang_tp1_synthetic.json",
            "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
            "intermediate_size": I, "num_attention_heads": Q, "num_key_value_heads": KV, "head_dim": D,
            "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "tie_word_embeddings": False}


def last_step_of_eager(path):
    """GPU activities of the last of the three decoder-stack calls in a recorded eager fixture."""
    doc = json.load(gzip.open(path))
    gpu = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    gpu.sort(key=lambda e: e["ts"])
    n = len(gpu) // 3
    return doc, gpu[2 * n:]


def from_eager(variant):
    """Both ranks replay their own kernel durations back to back; a collective starts when its
    rank gets there and ends on both ranks at the later start plus its cost (the shorter of the
    two recorded durations: the later rank's, which did not wait)."""
    docs = [last_step_of_eager(f"llama8b_tp2_t4_{variant}_rank{r}.json.gz") for r in (0, 1)]
    t = [0.0, 0.0]
    per_rank = [[], []]
    for a, b in zip(docs[0][1], docs[1][1]):
        assert a["name"] == b["name"], (a["name"], b["name"])
        if "all_reduce" in a["name"] or "AllReduce" in a["name"]:
            end = max(t) + min(a["dur"], b["dur"])
            for r in (0, 1):
                per_rank[r].append((a["name"], round(end - t[r], 3), a["cat"], round(t[r], 3)))
                t[r] = end + 0.3
        else:
            for r, e in ((0, a), (1, b)):
                per_rank[r].append((e["name"], e["dur"], e["cat"], round(t[r], 3)))
                t[r] += e["dur"] + 0.3
    return [graph_trace([per_rank[r], per_rank[r]], rank=r, world=2, clock=1000.0 * r, marks=False, eager_tail=False)
            for r in (0, 1)]


main_steps = [[(n, d, "kernel") for n, d in sglang_layer_kernels()] for _ in range(3)]
with open("graph/tiny_llama.json", "w") as f:
    json.dump(tiny_config(), f, indent=1)
    f.write("\n")
dump(graph_trace(main_steps), "graph/sglang_tp1_synthetic.json")
for variant in ("nccl", "one_shot"):
    r0, r1 = from_eager(variant)
    dump(r0, f"graph/llama8b_tp2_t4_{variant}_graph_rank0.json.gz")
    dump(r1, f"graph/llama8b_tp2_t4_{variant}_graph_rank1.json.gz")
    if variant == "nccl":
        bad = copy.deepcopy(r1)
        second = max(e["args"]["correlation"] for e in bad["traceEvents"] if e.get("cat") == "cuda_runtime")
        bad["traceEvents"] = [e for e in bad["traceEvents"] if e.get("args", {}).get("correlation") != second]
        dump(bad, "bad/graph_tp2_missing_step_rank1.json.gz")
rocm_steps = [[("Cijk_Alik_Bljk_BBS_BH_MT64x16x128_MI16x16x16x1_SN_K1", 6.0, "kernel"),
               ("void ck_tile::kentry<64, 1, ck_tile::FmhaFwdKernel>", 8.0, "kernel")]] * 2
dump(graph_trace(rocm_steps, device="AMD Instinct MI300X", launch="hipGraphLaunch", runtime_prefix="hip"),
     "bad/rocm_graph.json")
