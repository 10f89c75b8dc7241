#!/usr/bin/env python3
"""Best public alternative for every shape of bench/gpu/bench_gemm.cu, timed with PyTorch.

Writes one JSON object per line: {"key", "us", "what", "methods": {name: us | "error: ..."}};
bench_gemm --torch FILE joins them by "key" and shows the fastest as its reference column.

What runs (each in a CUDA graph, median of 15 replays, weight sets rotated so L2 does not serve
weights; routing identical to bench_gemm's, splitmix64 from a seed per (experts, tokens)):
  grouped bf16 : per-expert loop of F.linear over the active experts; torch._grouped_mm
  grouped fp8  : per-expert loop of torch._scaled_mm (fp8 x fp8, row-wise scales: the activations
                 are quantised beforehand and that is not timed); torch._scaled_grouped_mm
  grouped int4 : per-expert loop of torch._weight_int4pack_mm (tinygemm, group = the format's)
  dense fp8    : torch._scaled_mm row-wise;  dense int4: torch._weight_int4pack_mm
A method the installed PyTorch lacks or refuses for a shape is recorded with its error.

  python3 tools/torch_gemm_bench.py --out torch_gemm.json [--quick] [--filter SUBSTR]
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as Fn

MASK = (1 << 64) - 1


def splitmix_next(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def route(experts, tokens, topk=8):
    """Rows per expert: the generator of bench_gemm.cu's route()."""
    state = (0x5EED * 1000003 + experts * 7919 + tokens) & MASK
    counts = [0] * experts
    for _ in range(tokens):
        chosen = []
        while len(chosen) < topk:
            state, z = splitmix_next(state)
            e = z % experts
            if e not in chosen:
                chosen.append(e)
        for e in chosen:
            counts[e] += 1
    return counts


def shapes(quick):
    """The shape list of bench_gemm.cu's all_shapes(), with the same keys."""
    out = []
    moe = [("kimi-k2", 384, 7168, 2048, [8], "fp8_block", "int4_g32"),
           ("deepseek-v3", 256, 7168, 2048, [8], "fp8_block", "int4_g32"),
           ("qwen3-235b", 128, 4096, 1536, [1, 4, 8], "fp8_channel", "int4_g128"),
           ("glm-4.5", 160, 5120, 1536, [8], "fp8_channel", "int4_g128")]
    tokens = [4, 128] if quick else [4, 32, 128, 512]
    for name, E, hidden, inter, tps, fp8, int4 in moe:
        for tp in tps:
            for gemm in (0, 1):
                n, k = (2 * inter // tp, hidden) if gemm == 0 else (hidden, inter // tp)
                for f in ("bf16", fp8, int4):
                    if f == "int4_g128" and k % 128:
                        f = "int4_g32"
                    for t in tokens:
                        out.append(dict(key=f"moe|{f}|E{E}|n{n}|k{k}|T{t}", format=f, experts=E, n=n, k=k,
                                        tokens=t, dense=False,
                                        label=f"{name}/tp{tp} {'gate_up' if gemm == 0 else 'down'} T{t}"))
    dense = [("llama-70b/tp1", "qkv", 10240, 8192, "fp8_channel", "int4_g128"),
             ("llama-70b/tp1", "o", 8192, 8192, "fp8_channel", "int4_g128"),
             ("llama-70b/tp1", "gate_up", 57344, 8192, "fp8_channel", "int4_g128"),
             ("llama-70b/tp1", "down", 8192, 28672, "fp8_channel", "int4_g128"),
             ("llama-70b/tp8", "qkv", 1280, 8192, "fp8_channel", "int4_g128"),
             ("llama-70b/tp8", "o", 8192, 1024, "fp8_channel", "int4_g128"),
             ("llama-70b/tp8", "gate_up", 7168, 8192, "fp8_channel", "int4_g128"),
             ("llama-70b/tp8", "down", 8192, 3584, "fp8_channel", "int4_g128"),
             ("kimi-k2/tp8", "q_a+kv_a", 2112, 7168, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "q_b", 1536, 1536, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "kv_b", 2048, 512, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "o", 7168, 1024, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "mlp gate_up", 4608, 7168, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "mlp down", 7168, 2304, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "q_a", 1536, 7168, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "kv_a", 576, 7168, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "k_absorb", 4096, 128, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "v_up", 1024, 512, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "shared gate_up", 512, 7168, "fp8_block", "int4_g32"),
             ("kimi-k2/tp8", "shared down", 7168, 256, "fp8_block", "int4_g32")]
    ms = [1, 16] if quick else [1, 4, 16, 64, 256]
    for model, proj, n, k, fp8, int4 in dense:
        for f in (int4, fp8):
            for m in ms:
                out.append(dict(key=f"dense|{f}|n{n}|k{k}|m{m}", format=f, experts=1, n=n, k=k, tokens=m,
                                dense=True, label=f"{model} {proj} m{m}"))
    return out


def time_graph(ops, reps):
    """Median µs of one op; `ops` are callables cycling weight sets, captured `reps` times in a graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for op in ops:
            op()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for i in range(reps):
            ops[i % len(ops)]()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    us = []
    for _ in range(15):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        us.append(a.elapsed_time(b) * 1000.0 / reps)
    del g
    return statistics.median(us)


ROTATE_BYTES = 256e6
MAX_ALLOC = 6e9


def n_sets(touched):
    return max(1, min(16, math.ceil(ROTATE_BYTES / max(touched, 1)), int(MAX_ALLOC // max(touched, 1))))


def reps_for(launches_per_op):
    return max(2, min(20, 2000 // max(launches_per_op, 1)))


def fp8_rowwise(x):
    """Row-wise e4m3 quantisation: (fp8 tensor, fp32 scale [rows, 1])."""
    amax = x.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-6)
    scale = amax / 448.0
    return (x.float() / scale).to(torch.float8_e4m3fn), scale


def int4_pack(n, k, group, dev):
    """Random int4 weights in tinygemm's layout: (packed, scales_and_zeros, inner_k_tiles)."""
    w = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8, device=dev)
    err = None
    for inner in (8, 4, 2):
        if k % (inner * 16):
            continue
        try:
            packed = torch._convert_weight_to_int4pack(w, inner)
            sz = torch.empty(k // group, n, 2, dtype=torch.bfloat16, device=dev)
            sz[..., 0].uniform_(0.005, 0.015)
            sz[..., 1].uniform_(-0.01, 0.01)
            return packed, sz, inner
        except Exception as e:  # noqa: BLE001 - record why and try the next tiling
            err = e
    raise RuntimeError(f"_convert_weight_to_int4pack: {err}")


def group_of(fmt):
    return 32 if fmt == "int4_g32" else 128


def bench_shape(sh, dev):
    counts = [sh["tokens"]] if sh["dense"] else route(sh["experts"], sh["tokens"])
    active = [(e, c) for e, c in enumerate(counts) if c > 0]
    rows = sum(counts)
    n, k, fmt = sh["n"], sh["k"], sh["format"]
    x = torch.randn(rows, k, device=dev, dtype=torch.bfloat16)
    offs_rows = []
    r0 = 0
    for _, c in active:
        offs_rows.append((r0, r0 + c))
        r0 += c
    methods = {}

    def attempt(name, fn):
        try:
            methods[name] = fn()
        except Exception as e:  # noqa: BLE001 - an unsupported method is a result too
            methods[name] = "error: " + str(e).splitlines()[0][:160]
        torch.cuda.empty_cache()

    wbytes = {"bf16": 2.0, "fp8_block": 1.0, "fp8_channel": 1.0}.get(fmt, 0.5)
    touched = len(active) * n * k * wbytes
    sets = n_sets(touched)

    if fmt == "bf16":
        ws = [torch.randn(len(active), n, k, device=dev, dtype=torch.bfloat16) * 0.05 for _ in range(sets)]

        def loop_linear():
            ops = []
            for w in ws:
                def op(w=w):
                    for i, (a, b) in enumerate(offs_rows):
                        Fn.linear(x[a:b], w[i])
                ops.append(op)
            return time_graph(ops, reps_for(len(active)))
        attempt("loop F.linear", loop_linear)

        def grouped_mm():
            offs = torch.tensor([b for _, b in offs_rows], dtype=torch.int32, device=dev)
            ops = [lambda w=w: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs) for w in ws]
            return time_graph(ops, reps_for(1))
        if not sh["dense"]:
            if hasattr(torch, "_grouped_mm"):
                attempt("torch._grouped_mm", grouped_mm)
            else:
                methods["torch._grouped_mm"] = "error: not in this PyTorch"
        del ws
    elif fmt.startswith("fp8"):
        ws = [torch.randn(len(active), n, k, device=dev).to(torch.float8_e4m3fn) for _ in range(sets)]
        sb = torch.rand(len(active), 1, n, device=dev, dtype=torch.float32) * 1e-3 + 5e-4
        xq, sa = fp8_rowwise(x)

        def loop_scaled_mm(pad):
            xs = []
            for a, b in offs_rows:
                m = b - a
                mp = (m + 15) // 16 * 16 if pad else m
                xa = torch.zeros(mp, k, device=dev, dtype=torch.float8_e4m3fn)
                xa[:m] = xq[a:b]
                sca = torch.ones(mp, 1, device=dev, dtype=torch.float32)
                sca[:m] = sa[a:b]
                xs.append((xa, sca))
            ops = []
            for w in ws:
                def op(w=w):
                    for i, (xa, sca) in enumerate(xs):
                        torch._scaled_mm(xa, w[i].t(), scale_a=sca, scale_b=sb[i], out_dtype=torch.bfloat16)
                ops.append(op)
            return time_graph(ops, reps_for(len(active)))
        name = "torch._scaled_mm rowwise" + ("" if sh["dense"] else " loop")
        attempt(name, lambda: loop_scaled_mm(False))
        if isinstance(methods.get(name), str):
            attempt(name + " (rows padded to 16)", lambda: loop_scaled_mm(True))

        def scaled_grouped():
            offs = torch.tensor([b for _, b in offs_rows], dtype=torch.int32, device=dev)
            sbg = sb.reshape(len(active), n).contiguous()
            ops = [lambda w=w: torch._scaled_grouped_mm(xq, w.transpose(-2, -1), sa.reshape(-1), sbg, offs=offs,
                                                         out_dtype=torch.bfloat16) for w in ws]
            return time_graph(ops, reps_for(1))
        if not sh["dense"]:
            if hasattr(torch, "_scaled_grouped_mm"):
                attempt("torch._scaled_grouped_mm", scaled_grouped)
            else:
                methods["torch._scaled_grouped_mm"] = "error: not in this PyTorch"
        del ws
    else:
        g = group_of(fmt)

        def int4_loop():
            packs = [[int4_pack(n, k, g, dev) for _ in active] for _ in range(sets)]
            ops = []
            for pk in packs:
                def op(pk=pk):
                    for i, (a, b) in enumerate(offs_rows):
                        torch._weight_int4pack_mm(x[a:b], pk[i][0], g, pk[i][1])
                ops.append(op)
            return time_graph(ops, reps_for(len(active)))
        if hasattr(torch, "_weight_int4pack_mm"):
            attempt("torch._weight_int4pack_mm" + ("" if sh["dense"] else " loop"), int4_loop)
        else:
            methods["torch._weight_int4pack_mm"] = "error: not in this PyTorch"

    ok = {m: v for m, v in methods.items() if isinstance(v, float)}
    best = min(ok, key=ok.get) if ok else None
    return dict(key=sh["key"], label=sh["label"], us=round(ok[best], 3) if best else 0.0, what=best or "none",
                active_experts=len(active), methods=methods)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_gemm_bench: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    torch.manual_seed(0)
    t0 = time.time()
    todo = [s for s in shapes(args.quick) if args.filter in s["label"] + " " + s["format"]]
    with open(args.out, "w") as f:
        for i, sh in enumerate(todo):
            try:
                row = bench_shape(sh, dev)
            except Exception as e:  # noqa: BLE001 - one shape's failure (e.g. memory) must not end the run
                row = dict(key=sh["key"], label=sh["label"], us=0.0, what="none",
                           methods={"setup": "error: " + str(e).splitlines()[0][:160]})
            torch.cuda.empty_cache()
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"[{i + 1}/{len(todo)} {time.time() - t0:6.1f}s] {sh['label']:32s} {sh['format']:12s} "
                  f"{row['us']:10.2f} us  {row['what']}", file=sys.stderr, flush=True)
    print(f"torch {torch.__version__}: {len(todo)} shapes in {time.time() - t0:.0f} s -> {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
