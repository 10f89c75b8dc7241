#!/usr/bin/env python3
"""Writes the small handcrafted Kineto traces in synthetic/ and bad/ (run from this directory).

synthetic/vllm_tp2_rank{0,1}.json: 3 ProfilerStep#N steps of a 2-layer model with vLLM-style
kernels (custom allreduce, fused add+RMSNorm, silu_and_mul, FlashAttention in [B,T,H,D]
layout) plus an embedding, final norm and lm_head. Rank 1's clock is 1000 us ahead and rank 1
reaches every allreduce 20 us after rank 0, so rank 0's allreduce kernels last 25 us while the
collective itself costs 5 us. The last step is cut off (its lm_head kernel is missing).
synthetic/vllm_tp2_noshapes_rank0.json: rank 0 recorded without record_shapes.
synthetic/graph_tp2_rank{0,1}.json: the same, as a CUDA graph would run it: no skew, kernels
0.2 us apart (GPU-bound, so the step span is a real step time).
bad/mismatch_rank1.json: rank 1 with one allreduce missing from step 1.
"""
import copy, json

H, I, Q, KV, D, T, CTX, VOCAB = 256, 512, 4, 2, 64, 4, 128, 1000


def trace(rank, shapes=True, drop_allreduce_in_step=None, skew=20.0, gap=1.0):
    ev, ext, corr = [], [1], [1]
    cpu_t = [1000.0]
    gpu_t = [100000.0 + (1000.0 if rank == 1 else 0.0)]
    late = skew if rank == 1 else 0.0  # rank 1 reaches collectives later (true time)

    def op(name, dims, types, kernels, collective=False, cpu_dur=10.0):
        e = ext[0]; ext[0] += 1
        args = {"External id": e}
        if shapes:
            args["Input Dims"] = dims
            args["Input type"] = types
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": cpu_t[0], "dur": cpu_dur, "args": args})
        for kname, kdur in kernels:
            c = corr[0]; corr[0] += 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": cpu_t[0] + 1, "dur": 2, "args": {"External id": e, "correlation": c}})
            start = gpu_t[0]
            dur = kdur
            if collective:
                # rank 0 starts at start and waits for rank 1 (20 us); rank 1 starts 20 us later
                start = gpu_t[0] + late
                dur = kdur + (skew - late)
            ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7, "ts": start, "dur": dur,
                       "args": {"External id": e, "correlation": c, "stream": 7, "device": rank}})
            gpu_t[0] += (skew + kdur if collective else kdur) + gap
        cpu_t[0] += cpu_dur + 2

    bf = "c10::BFloat16"
    for step in range(3):
        start = cpu_t[0]
        op("aten::embedding", [[VOCAB, H], [T]], [bf, "long int"], [("void at::native::indexSelectLargeIndex<c10::BFloat16>(int)", 2.0)])
        ars = 0
        for layer in range(2):
            if layer == 0:
                op("_C::rms_norm", [[T, H], [T, H], [H], []], [bf, bf, bf, "Scalar"], [("void vllm::rms_norm_kernel<c10::BFloat16>(int)", 3.0)])
            else:
                op("_C::fused_add_rms_norm", [[T, H], [T, H], [H], []], [bf, bf, bf, "Scalar"],
                   [("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(int)", 3.0)])
            op("aten::mm", [[T, H], [H, (Q + 2 * KV) * D]], [bf, bf], [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64", 6.0)])
            op("aten::_flash_attention_forward", [[1, T, Q, D], [1, CTX, KV, D], [1, CTX, KV, D]], [bf, bf, bf],
               [("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 128, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)", 8.0),
                ("void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<64, 64, 128, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)", 2.0)])
            op("aten::mm", [[T, Q * D], [Q * D, H]], [bf, bf], [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64", 4.0)])
            for site in range(2):
                if site == 1:
                    op("_C::fused_add_rms_norm", [[T, H], [T, H], [H], []], [bf, bf, bf, "Scalar"],
                       [("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(int)", 3.0)])
                    op("aten::mm", [[T, H], [H, 2 * I]], [bf, bf], [("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT", 9.0)])
                    op("_C::silu_and_mul", [[T, I], [T, 2 * I]], [bf, bf], [("void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(int)", 2.0)])
                    op("aten::mm", [[T, I], [I, H]], [bf, bf], [("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_NNT", 7.0),
                                                               ("void cublasLt::splitKreduce_kernel<32, 16, int, float>(int)", 1.0)])
                ars += 1
                if drop_allreduce_in_step == step and ars == 3:
                    continue
                op("_C_custom_ar::all_reduce", [[], [T, H], [T, H], [], []], ["int", bf, bf, "", "Scalar"],
                   [("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", 5.0)],
                   collective=True)
        op("_C::fused_add_rms_norm", [[T, H], [T, H], [H], []], [bf, bf, bf, "Scalar"], [("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(int)", 3.0)])
        if step < 2:  # the last step is cut off before its lm_head ran
            op("aten::mm", [[T, H], [H, VOCAB]], [bf, bf], [("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_NNT", 12.0)])
            op("sampler", [[T, VOCAB]], [bf], [("my_custom_sampling_kernel", 4.0)])
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 10}", "pid": 1, "tid": 1,
                   "ts": start - 0.5, "dur": cpu_t[0] - start + 1, "args": {"External id": 0}})
        cpu_t[0] += 50
    doc = {"schemaVersion": 1, "record_shapes": 1 if shapes else 0,
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
           "deviceProperties": [{"id": rank, "name": "Synthetic GPU"}],
           "baseTimeNanoseconds": 1700000000000000000, "traceEvents": ev}
    return doc


def dump(doc, path):
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


dump(trace(0), "synthetic/vllm_tp2_rank0.json")
dump(trace(1), "synthetic/vllm_tp2_rank1.json")
dump(trace(0, skew=0.0, gap=0.2), "synthetic/graph_tp2_rank0.json")
dump(trace(1, skew=0.0, gap=0.2), "synthetic/graph_tp2_rank1.json")
dump(trace(0, shapes=False), "synthetic/vllm_tp2_noshapes_rank0.json")
dump(trace(1, drop_allreduce_in_step=1), "bad/mismatch_rank1.json")
with open("bad/not_json.json", "w") as f:
    f.write('{"traceEvents": [ {"ph": "X", "name": "nvjet", ')
dump({"format": "eaglesim-trace", "version": 1, "steps": []}, "bad/not_profiler.json")
dump({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0,
     "args": {"External id": 1, "Input Dims": [[4, 8], [8, 8]]}}]}, "bad/no_kernels.json")
dump({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst", "pid": 0, "tid": 7, "ts": "late", "dur": 5.0}]},
     "bad/bad_field.json")
