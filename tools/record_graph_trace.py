#!/usr/bin/env python3
"""Records a graph-mode verify step of a Llama-3.1-8B-shaped decoder on one GPU, the way a
serving engine runs it: the whole forward pass captured in one torch.cuda.CUDAGraph and
replayed, profiled with torch.profiler (ProfilerStep#N marks from a schedule). The profile is
what `eaglesim import kineto --config llama-3.1-8b --tokens T --kv-len L` reads; the step time
measured here with CUDA events over many replays is what the imported step is checked against.

Shape (https://huggingface.co/meta-llama/Llama-3.1-8B config.json, models/llm/llama-3.1-8b.json):
32 layers, hidden 4096, 32 heads / 8 KV heads of 128, intermediate 14336, vocab 128256, bf16,
random weights, TP=1. Per layer: RMSNorm, fused qkv F.linear, the new K/V written into a KV
cache tensor, SDPA of the T new tokens over kv_len cached positions (GQA through enable_gqa when
a fused backend takes it, else K/V expanded with repeat_interleave), o_proj, residual add,
RMSNorm, fused gate_up F.linear, SiLU(gate) * up, down F.linear, residual add; then the final
RMSNorm and lm_head.

Writes under --out DIR:
  llama8b_tp1_t<T>_graph.json.gz  the kineto trace (all profiled steps; tools/trim_kineto.py cuts it)
  llama8b_tp1_t<T>_graph.measured.json  step time (mean / median over --replays CUDA-graph replays),
                                        the SDPA path taken, torch and device versions

Usage (one GPU, well under 60 s on an H200):
  python3 tools/record_graph_trace.py --out $OUT/graph
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import time

import torch
import torch.nn.functional as F

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, INTER, VOCAB = 4096, 32, 32, 8, 128, 14336, 128256
EPS = 1e-5


def rms_norm(x, w):
    # One fused kernel where PyTorch has it (F.rms_norm, 2.4+), the reference formula otherwise.
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, EPS)
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


class Decoder:
    def __init__(self, tokens, kv_len, dev):
        def w(*shape):
            return torch.empty(*shape, device=dev, dtype=torch.bfloat16).normal_(0, 0.02)

        self.tokens, self.kv_len = tokens, kv_len
        self.embed = w(VOCAB, HIDDEN)
        self.lm_head = w(VOCAB, HIDDEN)
        self.final_norm = torch.ones(HIDDEN, device=dev, dtype=torch.bfloat16)
        qkv_out = (HEADS + 2 * KV_HEADS) * HEAD_DIM
        self.layers = []
        for _ in range(LAYERS):
            self.layers.append({
                "in_norm": torch.ones(HIDDEN, device=dev, dtype=torch.bfloat16),
                "post_norm": torch.ones(HIDDEN, device=dev, dtype=torch.bfloat16),
                "qkv": w(qkv_out, HIDDEN), "o": w(HIDDEN, HEADS * HEAD_DIM),
                "gate_up": w(2 * INTER, HIDDEN), "down": w(HIDDEN, INTER),
                # [1, kv_heads, kv_len, head_dim]; the step's T tokens are its last T positions.
                "k_cache": w(1, KV_HEADS, kv_len, HEAD_DIM), "v_cache": w(1, KV_HEADS, kv_len, HEAD_DIM),
            })
        self.gqa = True

    def attention(self, q, k_cache, v_cache):
        if self.gqa:
            return F.scaled_dot_product_attention(q, k_cache, v_cache, enable_gqa=True)
        rep = HEADS // KV_HEADS
        return F.scaled_dot_product_attention(q, k_cache.repeat_interleave(rep, 1), v_cache.repeat_interleave(rep, 1))

    def forward(self, ids):
        T = self.tokens
        x = F.embedding(ids, self.embed)  # [T, H]
        pos = self.kv_len - T
        for L in self.layers:
            h = rms_norm(x, L["in_norm"])
            qkv = F.linear(h, L["qkv"])
            q, k, v = qkv.split([HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1)
            L["k_cache"][0, :, pos:] = k.view(T, KV_HEADS, HEAD_DIM).transpose(0, 1)
            L["v_cache"][0, :, pos:] = v.view(T, KV_HEADS, HEAD_DIM).transpose(0, 1)
            q = q.view(1, T, HEADS, HEAD_DIM).transpose(1, 2)
            a = self.attention(q, L["k_cache"], L["v_cache"])  # [1, heads, T, D]
            a = a.transpose(1, 2).reshape(T, HEADS * HEAD_DIM)
            x = x + F.linear(a, L["o"])
            h = rms_norm(x, L["post_norm"])
            gate, up = F.linear(h, L["gate_up"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, L["down"])
        return F.linear(rms_norm(x, self.final_norm), self.lm_head)


def choose_sdpa(model, dev):
    """GQA inside the fused kernel if a fused backend takes enable_gqa; the math fallback would
    split attention into many small kernels, which is not what an engine runs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    q = torch.zeros(1, HEADS, model.tokens, HEAD_DIM, device=dev, dtype=torch.bfloat16)
    L = model.layers[0]
    try:
        with sdpa_kernel(fused):
            model.attention(q, L["k_cache"], L["v_cache"])
        torch.cuda.synchronize()
        return "fused SDPA with enable_gqa"
    except RuntimeError:
        model.gqa = False
        return "fused SDPA over K/V expanded with repeat_interleave (no fused backend took enable_gqa)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory to write into")
    ap.add_argument("--tokens", type=int, default=4, help="query tokens of the verify step (1 + draft tokens)")
    ap.add_argument("--kv-len", type=int, default=2048, help="KV positions attended over")
    ap.add_argument("--replays", type=int, default=200, help="graph replays timed with CUDA events")
    ap.add_argument("--profiled-steps", type=int, default=3, help="ProfilerStep#N steps recorded after 2 skipped")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    model = Decoder(a.tokens, a.kv_len, dev)
    sdpa = choose_sdpa(model, dev)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    ids = torch.randint(0, VOCAB, (a.tokens,), device=dev)

    # Warm up on a side stream (cuBLAS heuristics, allocator), then capture.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad(), sdpa_kernel(fused):
        for _ in range(3):
            model.forward(ids)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), sdpa_kernel(fused), torch.cuda.graph(graph):
        model.forward(ids)
    for _ in range(10):
        graph.replay()
    torch.cuda.synchronize()

    # Step time: each replay between two events, many times.
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(a.replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(a.replays)]
    for i in range(a.replays):
        starts[i].record()
        graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    step_us = [1000.0 * st.elapsed_time(en) for st, en in zip(starts, ends)]

    base = os.path.join(a.out, f"llama8b_tp1_t{a.tokens}_graph")
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=a.profiled_steps, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                schedule=schedule, record_shapes=True) as prof:
        for _ in range(2 + a.profiled_steps):
            graph.replay()
            torch.cuda.synchronize()  # each step's kernels inside its own ProfilerStep range
            prof.step()
    prof.export_chrome_trace(base + ".json")
    with open(base + ".json", "rb") as src, gzip.open(base + ".json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(base + ".json")

    measured = {
        "model": "llama-3.1-8b", "tp": 1, "tokens": a.tokens, "kv_len": a.kv_len, "layers": LAYERS,
        "step_us_mean": statistics.fmean(step_us), "step_us_median": statistics.median(step_us),
        "step_us_min": min(step_us), "replays": a.replays, "sdpa": sdpa,
        "torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(dev),
        "trace": os.path.basename(base + ".json.gz"), "wall_s": round(time.time() - t0, 1),
    }
    with open(base + ".measured.json", "w") as f:
        json.dump(measured, f, indent=1)
        f.write("\n")
    print(json.dumps(measured, indent=1))


if __name__ == "__main__":
    main()
