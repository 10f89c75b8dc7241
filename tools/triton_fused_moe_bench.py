#!/usr/bin/env python3
"""Times a Triton fused-MoE GEMM of the design SGLang and vLLM run at decode sizes, with the launch
configurations SGLang's tuned H100 tables pick, to measure what eaglesim's fused-MoE model
(src/cost/compute_model.cpp, fused_moe_us) assumes: how the kernel's time follows its grid.

The design (facts from SGLang moe_runner/triton_utils and vLLM fused_moe, written here anew): the
routed (token, expert) rows are sorted by expert and each expert's rows padded to BLOCK_M; one
CTA computes BLOCK_M sorted rows x BLOCK_N output columns over the whole K (no split-K),
streaming that expert's K x BLOCK_N weight tile; CTAs past the padded row count exit at once;
the grid is sized for the worst case (topk * M row blocks while topk * M <= E), CTAs ordered in
groups of GROUP_SIZE_M row blocks.

Each case is checked against a float32 reference (per-expert matmuls) before it is timed; times
are medians of CUDA-graph replays of 16 launches with different routings each (one launch's
share; L2 flushed before each replay, so each launch reads its experts' weights from DRAM as a
step does), beside the time the weight bytes the grid touches take at the copy bandwidth
measured in the same run.

usage: tools/triton_fused_moe_bench.py [--out DIR]   (needs a GPU, PyTorch and Triton)"""
import argparse, json, math, os, sys

import torch

try:
    import triton
    import triton.language as tl
except ImportError:
    sys.exit("triton_fused_moe_bench: Triton is not installed (pip package triton)")


@triton.jit
def moe_gemm_kernel(a_ptr, w_ptr, c_ptr, sorted_rows_ptr, block_expert_ptr, padded_rows_ptr,
                    n, k, routed_rows, topk, row_blocks,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    col_blocks = tl.cdiv(n, BLOCK_N)
    # grouped ordering: GROUP_M row blocks share their column sweep
    in_group = GROUP_M * col_blocks
    group = pid // in_group
    first = group * GROUP_M
    size = tl.minimum(row_blocks - first, GROUP_M)
    pid_m = first + ((pid % in_group) % size)
    pid_n = (pid % in_group) // size
    if pid_m * BLOCK_M >= tl.load(padded_rows_ptr):
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    routed = tl.load(sorted_rows_ptr + rows)
    valid = routed < routed_rows
    expert = tl.load(block_expert_ptr + pid_m)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_rows = a_ptr + (routed // topk)[:, None] * k
    w_cols = w_ptr + expert * n * k + cols[None, :] * k
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(k, BLOCK_K)):
        kk = k0 * BLOCK_K + ks
        a = tl.load(a_rows + kk[None, :], mask=valid[:, None] & (kk[None, :] < k), other=0.0)
        w = tl.load(w_cols + kk[:, None], mask=(kk[:, None] < k) & (cols[None, :] < n), other=0.0)
        acc += tl.dot(a, w)
    out = c_ptr + routed[:, None] * n + cols[None, :]
    tl.store(out, acc.to(tl.bfloat16), mask=valid[:, None] & (cols[None, :] < n))


def align(topk_ids, experts, block_m):
    """Sorted (token, expert) rows padded per expert to block_m; pad value = routed row count."""
    flat = topk_ids.flatten()
    routed = flat.numel()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=experts)
    rows, block_expert = [], []
    start = 0
    for e in range(experts):
        c = int(counts[e])
        if c == 0:
            continue
        padded = -(-c // block_m) * block_m
        rows += order[start:start + c].tolist() + [routed] * (padded - c)
        block_expert += [e] * (padded // block_m)
        start += c
    # the grid's worst case: topk * M row blocks while that is <= E (SGLang), else the bound
    max_blocks = routed if routed <= experts else -(-(routed + (experts + 1) * (block_m - 1)) // block_m)
    total = len(rows)
    rows += [routed] * (max_blocks * block_m - len(rows))
    block_expert += [0] * (max_blocks - len(block_expert))
    dev = topk_ids.device
    return (torch.tensor(rows, dtype=torch.int32, device=dev), torch.tensor(block_expert, dtype=torch.int32, device=dev),
            torch.tensor([total], dtype=torch.int32, device=dev), max_blocks, int((counts > 0).sum()))


def run_case(m, experts, topk, n, k, cfg, gen, launches=16):
    """One GEMM shape: `launches` launches per graph replay, each with its own routing, so that
    successive launches touch other experts and read their weights from DRAM as a step does."""
    dev = "cuda"
    a = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=gen)
    w = torch.randn(experts, n, k, device=dev, dtype=torch.bfloat16, generator=gen) * (1.0 / math.sqrt(k))
    routings = []
    for _ in range(launches):
        topk_ids = torch.stack([torch.randperm(experts, device=dev, generator=gen)[:topk] for _ in range(m)])
        routings.append((topk_ids,) + align(topk_ids, experts, cfg["BLOCK_SIZE_M"]))
    c = torch.zeros(m * topk, n, device=dev, dtype=torch.bfloat16)
    max_blocks = routings[0][4]
    grid = (max_blocks * triton.cdiv(n, cfg["BLOCK_SIZE_N"]),)

    def launch(i):
        _, rows, block_expert, padded, blocks, _ = routings[i]
        return moe_gemm_kernel[grid](a, w, c, rows, block_expert, padded, n, k, m * topk, topk, blocks,
                              BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
                              GROUP_M=cfg["GROUP_SIZE_M"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])

    compiled = launch(0)
    torch.cuda.synchronize()
    regs = getattr(compiled, "n_regs", None)
    smem = getattr(getattr(compiled, "metadata", None), "shared", None)
    topk_ids = routings[0][0]
    ref = torch.stack([a[r // topk].float() @ w[int(topk_ids[r // topk, r % topk])].float().T for r in range(m * topk)])
    rel = float((c.float() - ref).norm() / ref.norm())
    if not rel < 2e-2:
        raise SystemExit(f"fused-MoE kernel wrong at m={m} n={n} k={k}: relative error {rel:.3g}")
    flush = torch.empty(256 * 1024 * 1024 // 4, device=dev, dtype=torch.float32)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(launches):
            launch(i)
        with torch.cuda.graph(g, stream=s):
            for i in range(launches):
                launch(i)
    torch.cuda.current_stream().wait_stream(s)
    times = []
    for _ in range(15):
        flush.zero_()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) * 1000.0 / launches)
    times.sort()
    touched = sum(r[5] for r in routings) / launches
    active = sum(int(r[3].item()) // cfg["BLOCK_SIZE_M"] for r in routings) / launches * triton.cdiv(n, cfg["BLOCK_SIZE_N"])
    return dict(m=m, n=n, k=k, experts=experts, topk=topk, touched=touched, grid=grid[0], active=active,
                cfg=cfg, us=times[len(times) // 2], us_min=times[0], rel_err=rel, weight_bytes=touched * n * k * 2,
                regs=regs, smem=smem)


def copy_bandwidth_gbs():
    x = torch.empty(1 << 28, device="cuda", dtype=torch.uint8)
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(10):
        y.copy_(x)
    e1.record()
    torch.cuda.synchronize()
    return 2 * x.numel() * 10 / (e0.elapsed_time(e1) * 1e-3) / 1e9


# SGLang's tuned configurations for E=128 on NVIDIA_H100_80GB_HBM3, bf16 (SGLang
# python/sglang/srt/layers/moe/moe_runner/triton_utils/configs/triton_3_2_0/E=128,N={768,384,192},
# device_name=NVIDIA_H100_80GB_HBM3.json): keys are M, the tokens before top-k; the nearest key
# is used. Fields: BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_warps, num_stages.
H100_E128 = {
    768: {1: (16, 64, 128, 1, 4, 3), 2: (16, 64, 64, 1, 4, 3), 4: (16, 64, 64, 64, 4, 5), 8: (16, 128, 128, 1, 8, 5),
          16: (16, 128, 128, 1, 8, 5), 32: (16, 128, 256, 1, 8, 3)},
    384: {1: (16, 64, 64, 1, 4, 5), 2: (16, 64, 64, 1, 4, 5), 4: (16, 64, 128, 1, 4, 2), 8: (16, 64, 128, 64, 4, 3),
          16: (16, 32, 128, 64, 4, 2), 32: (16, 128, 128, 16, 8, 5)},
    192: {1: (16, 64, 64, 1, 4, 5), 2: (16, 64, 64, 64, 4, 5), 4: (16, 64, 64, 32, 4, 5), 8: (16, 128, 64, 16, 4, 5),
          16: (16, 128, 64, 1, 8, 3), 32: (16, 128, 128, 16, 4, 3)},
}
FIELDS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("triton_fused_moe_bench: no GPU")
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    hidden, topk, experts = 2048, 8, 128  # Qwen3-30B-A3B
    bw = copy_bandwidth_gbs()
    rows = []
    for inter, table in H100_E128.items():
        tp = 768 // inter
        for m, c in table.items():
            cfg = dict(zip(FIELDS, c))
            # w1 (gate_up): 2 x inter outputs over the hidden; w2 (down): hidden outputs over inter
            for gemm, n, k in (("w1", 2 * inter, hidden), ("w2", hidden, inter)):
                r = run_case(m, experts, topk, n, k, cfg, gen)
                r.update(gemm=gemm, tp=tp)
                rows.append(r)
                print(f"tp{tp} M={m:2d} {gemm} n={n:4d} k={k:4d} experts touched {r['touched']:5.1f} "
                      f"active CTAs {r['active']:7.1f} ({cfg['BLOCK_SIZE_N']}x{cfg['BLOCK_SIZE_K']}x{cfg['num_stages']}): "
                      f"{r['us']:7.2f} us, roofline {r['weight_bytes'] / bw / 1e3:6.2f} us, regs {r['regs']} smem {r['smem']}, "
                      f"err {r['rel_err']:.1e}", flush=True)
    meta = dict(gpu=torch.cuda.get_device_name(), copy_gbs=bw, sms=torch.cuda.get_device_properties(0).multi_processor_count,
                torch=torch.__version__, triton=triton.__version__)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "fused_moe_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
