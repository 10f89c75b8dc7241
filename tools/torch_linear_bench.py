#!/usr/bin/env python3
"""torch.nn.functional.linear on the shapes of bench/gpu/bench_dense_gemm.cu (bf16 weights, the
Llama-3.1-8B and -70B TP1 projections at 1-256 rows), timed like the benchmark: CUDA-graph
replays over weight copies that L2 cannot hold, median per call. JSON lines {shape, us}.

Usage: tools/torch_linear_bench.py --out torch-linear.json
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

SHAPES = [("llama-3.1-8b", "qkv", 6144, 4096), ("llama-3.1-8b", "o", 4096, 4096),
          ("llama-3.1-8b", "gate_up", 28672, 4096), ("llama-3.1-8b", "down", 4096, 14336),
          ("llama-3.1-8b", "lm_head", 128256, 4096), ("llama-3.1-70b", "qkv", 10240, 8192),
          ("llama-3.1-70b", "o", 8192, 8192), ("llama-3.1-70b", "gate_up", 57344, 8192),
          ("llama-3.1-70b", "down", 8192, 28672), ("llama-3.1-70b", "lm_head", 128256, 8192)]
ROWS = [1, 4, 16, 64, 256]


def time_graph_us(fn, calls, replays=15, warmup=3):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()  # warm up cuBLAS handles and workspaces outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    for _ in range(warmup):
        g.replay()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    with open(args.out, "w") as out:
        for model, proj, n, k in SHAPES:
            copies = max(2, (512 << 20) // (n * k * 2) + 1)
            ws = [torch.empty(n, k, device="cuda", dtype=torch.bfloat16).uniform_(-0.05, 0.05) for _ in range(copies)]
            x_all = torch.empty(256, k, device="cuda", dtype=torch.bfloat16).uniform_(-0.05, 0.05)
            for m in ROWS:
                x = x_all[:m]
                state = {"i": 0}

                def call():
                    F.linear(x, ws[state["i"] % copies])
                    state["i"] += 1

                us = time_graph_us(call, copies * 4)
                shape = f"{model} {proj} m={m} n={n} k={k}"
                out.write(json.dumps({"shape": shape, "us": round(us, 3)}) + "\n")
                out.flush()
                print(f"{shape}: {us:.2f} us", flush=True)
            del ws
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
