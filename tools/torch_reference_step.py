#!/usr/bin/env python3
"""PyTorch reference for the CUDA replay: runs the same semantic ops as
tools/llama8b_decoder_trace.py (Llama-3.1-8B decoder layers at TP N, 4 tokens, KV 2048, bf16,
random weights, one weight set per layer) with PyTorch kernels — cuBLAS GEMMs (x @ W.T),
F.rms_norm, SDPA decode attention with native GQA, SiLU*mul, in-place residual adds and NCCL
all_reduce through torch.distributed — captured in one CUDA graph per rank, and times graph
replays with CUDA events (all ranks released together by a barrier; step = max over ranks).
Also times the same graph without the allreduces. Prints one JSON line on rank 0.

With --profile, rank 0 also runs one eager step (with allreduces) under torch.profiler and
prints where its GPU time goes, per kernel class (sum of kernel durations; eager, so gaps
between kernels are not included): the per-kind comparison with `eaglesim run --backend cuda`.

Usage: python3 tools/torch_reference_step.py --tp 2 [--iters 20 --warmup 5] [--profile]
"""
import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, INTER = 4096, 32, 32, 8, 128, 14336


def make_layers(tp, kv_len, dev):
    h, kvh, inter = HEADS // tp, KV_HEADS // tp, INTER // tp
    g = torch.Generator(device=dev).manual_seed(1234)

    def rnd(*shape, scale=0.05):
        return ((torch.rand(*shape, generator=g, device=dev) * 2 - 1) * scale).to(torch.bfloat16)

    layers = []
    for _ in range(LAYERS):
        layers.append(dict(
            n1=rnd(HIDDEN, scale=1.0), n2=rnd(HIDDEN, scale=1.0),
            wqkv=rnd((h + 2 * kvh) * HEAD_DIM, HIDDEN), wo=rnd(HIDDEN, h * HEAD_DIM),
            wgu=rnd(2 * inter, HIDDEN), wd=rnd(HIDDEN, inter),
            k=rnd(1, kvh, kv_len, HEAD_DIM, scale=1.0), v=rnd(1, kvh, kv_len, HEAD_DIM, scale=1.0)))
    return layers, h, kvh, inter


def step(x, residual, layers, h, kvh, inter, tokens, mask, allreduce):
    for L in layers:
        y = F.rms_norm(x, (HIDDEN,), L["n1"], 1e-5)
        qkv = y @ L["wqkv"].t()
        q = qkv[:, : h * HEAD_DIM].view(1, tokens, h, HEAD_DIM).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, L["k"], L["v"], attn_mask=mask, enable_gqa=True)
        a = a.transpose(1, 2).reshape(tokens, h * HEAD_DIM)
        o = a @ L["wo"].t()
        if allreduce:
            dist.all_reduce(o)
        residual.add_(o)
        y = F.rms_norm(residual, (HIDDEN,), L["n2"], 1e-5)
        gu = y @ L["wgu"].t()
        act = F.silu(gu[:, :inter]) * gu[:, inter:]
        d = act @ L["wd"].t()
        if allreduce:
            dist.all_reduce(d)
        residual.add_(d)
        x = residual
    return x


def time_graph(graph, iters, warmup, tp):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for i in range(warmup + iters):
        torch.cuda.synchronize()
        if tp > 1:
            dist.barrier()
        torch.cuda._sleep(200_000)  # ~100 us of GPU pre-roll: the timed span excludes the graph's launch latency
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        if i >= warmup:
            samples.append(start.elapsed_time(end) * 1000.0)
    t = torch.tensor(samples, device="cuda", dtype=torch.float64)
    if tp > 1:
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # a replay ends when its slowest rank ends
    s = t.tolist()
    return statistics.median(s), min(s), max(s)


def kernel_class(name):
    n = name.lower()
    if "nccl" in n:
        return "allreduce"
    if any(k in n for k in ("flash", "fmha", "sdpa", "attention", "softmax")):
        return "attention"
    if any(k in n for k in ("nvjet", "gemm", "cutlass", "splitk", "cublas", "xmma")):
        return "gemm"
    if "norm" in n:
        return "rmsnorm"
    if "silu" in n:
        return "silu"
    if "mul" in n:
        return "mul"
    if "add" in n:
        return "add"
    if "copy" in n:
        return "copy"
    return "other"


def profile_classes(run_step):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run_step()
        torch.cuda.synchronize()
    totals, counts, names = {}, {}, {}
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None)
        if us is None:
            us = e.self_cuda_time_total
        if us <= 0:
            continue
        c = kernel_class(e.key)
        totals[c] = totals.get(c, 0.0) + us
        counts[c] = counts.get(c, 0) + e.count
        names.setdefault(c, []).append(e.key[:60])
    return {c: dict(us=round(totals[c], 1), kernels=counts[c], names=sorted(set(names[c]))[:4]) for c in totals}


def worker(rank, args):
    tp = args.tp
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    if tp > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        dist.init_process_group("nccl", rank=rank, world_size=tp, device_id=dev)
    layers, h, kvh, inter = make_layers(tp, args.kv_len, dev)
    tokens = args.tokens
    # Causal over the newest `tokens` positions of the cache.
    pos = torch.arange(args.kv_len, device=dev)
    mask = (pos[None, :] <= (args.kv_len - tokens + torch.arange(tokens, device=dev))[:, None]).view(1, 1, tokens, args.kv_len)
    x = ((torch.rand(tokens, HIDDEN, device=dev) * 2 - 1)).to(torch.bfloat16)
    residual = x.clone()
    results = {}
    for allreduce in ([True, False] if tp > 1 else [False]):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step(x, residual, layers, h, kvh, inter, tokens, mask, allreduce)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(x, residual, layers, h, kvh, inter, tokens, mask, allreduce)
        med, lo, hi = time_graph(graph, args.iters, args.warmup, tp)
        results["with_allreduce" if allreduce else "no_allreduce"] = dict(step_us=med, min_us=lo, max_us=hi)
        del graph
    if args.profile:
        # Every rank runs the eager step (the allreduces need all of them); rank 0 reports.
        classes = profile_classes(lambda: step(x, residual, layers, h, kvh, inter, tokens, mask, tp > 1))
        results["eager_profile_us_by_class"] = classes
    if rank == 0:
        print(json.dumps(dict(tool="torch_reference_step", tp=tp, tokens=tokens, kv_len=args.kv_len,
                              iters=args.iters, torch=torch.__version__, **results)), flush=True)
    if tp > 1:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--kv-len", type=int, default=2048)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="also print the eager step's GPU time per kernel class")
    a = ap.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    if a.tp == 1:
        worker(0, a)
    else:
        mp.spawn(worker, args=(a,), nprocs=a.tp, join=True)


if __name__ == "__main__":
    main()
