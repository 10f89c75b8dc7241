#!/usr/bin/env python3
"""torch._scaled_mm on the shapes of bench/gpu/bench_fp8_gemm.cu: e4m3 activations x e4m3 weights,
bf16 out, in each recipe PyTorch has for them, timed as the benchmark times its kernels (CUDA-graph
replays over weight copies that L2 cannot hold, median per call).

Recipes (the key's first field, the bench's mode of the same name):
  tensor   per-tensor scales (fast accumulation, as serving stacks run it);
  channel  row-wise: one scale per activation row and per weight channel (fast accumulation);
  block    1 x 128 activation groups x 128 x 128 weight blocks (DeepSeek-style), where this PyTorch
           takes them on this GPU: torch.nn.functional.scaled_mm with ScalingType.BlockWise1x128 /
           BlockWise128x128, else torch._scaled_mm with the scale layouts it recognises; no fast
           accumulation (PyTorch refuses it with block scales).
A recipe PyTorch refuses for a shape is recorded with the error (and a second try with the rows
padded to a multiple of 16, as a caller would pad them). The activation quantisation is not timed.
The read bandwidth (a streaming reduction over 2 GiB, as the bench's floor) is measured in the
same process; every row carries the weights' floor at it.

Writes JSON lines {"key", "shape", "us", "what", "floor_us", "read_gbps", "methods"}; the first
line is {"read_gbps": ...}.

  python3 tools/torch_fp8_gemm_bench.py --out torch-fp8.json [--quick] [--filter TEXT]
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as Fn

SHAPES = [("llama-3.1-70b/tp8", "qkv", 1280, 8192), ("llama-3.1-70b/tp8", "o", 8192, 1024),
          ("llama-3.1-70b/tp8", "gate_up", 7168, 8192), ("llama-3.1-70b/tp8", "down", 8192, 3584),
          ("kimi-k2/tp8", "fused_qkv_a", 2112, 7168), ("kimi-k2/tp8", "q_b", 1536, 1536),
          ("kimi-k2/tp8", "k_absorb", 4096, 128), ("kimi-k2/tp8", "v_up", 1024, 512),
          ("kimi-k2/tp8", "o", 7168, 1024), ("kimi-k2/tp8", "mlp gate_up", 4608, 7168),
          ("kimi-k2/tp8", "mlp down", 7168, 2304), ("kimi-k2/tp8", "shared gate_up", 512, 7168),
          ("kimi-k2/tp8", "shared down", 7168, 256)]
ROWS = [1, 4, 16, 32, 64, 128, 256]
QUICK_ROWS = [1, 16, 128]
ROTATE_BYTES = 256e6
MAX_COPIES = 16


def shape_name(model, proj, m, n, k):
    return f"{model} {proj} m={m} n={n} k={k}"


def time_graph_us(fn, calls, replays=15, warmup=3):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()  # handles, workspaces and any lazy setup outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(calls):
            fn()
    for _ in range(warmup):
        g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    del g
    return statistics.median(times)


def read_gbps(dev):
    """A streaming read of 2 GiB (a max-reduction: every byte read once, a few bytes written)."""
    buf = torch.empty(1 << 29, device=dev, dtype=torch.float32).uniform_(-1, 1)
    us = time_graph_us(lambda: torch.amax(buf), 4, replays=9, warmup=2)
    del buf
    torch.cuda.empty_cache()
    return (1 << 31) / (us * 1e-6) / 1e9


def block_recipes():
    """torch.nn.functional.scaled_mm's recipe enum, where this PyTorch has it."""
    st = getattr(Fn, "ScalingType", None)
    if st is None or not hasattr(Fn, "scaled_mm"):
        return None
    return st


def scaled_mm_block_v2(x8, w8t, sa, sb, st):
    return Fn.scaled_mm(x8, w8t, sa, st.BlockWise1x128, sb, st.BlockWise128x128, output_dtype=torch.bfloat16)


def bench_shape(model, proj, n, k, rows, dev):
    wbytes = n * k
    copies = max(2, min(MAX_COPIES, math.ceil(ROTATE_BYTES / wbytes)))
    ws = [torch.randn(n, k, device=dev).mul_(0.5).to(torch.float8_e4m3fn) for _ in range(copies)]
    kb, nb = (k + 127) // 128, (n + 127) // 128
    w_channel = [torch.rand(1, n, device=dev, dtype=torch.float32) * 1e-2 + 5e-3 for _ in range(copies)]
    # Block scales of W^T (k, n) as _scaled_mm takes them: (ceil(k/128), ceil(n/128)), k-blocks
    # fastest; a row stride of a multiple of 4 where the recipe wants one.
    w_block = [torch.rand(nb, kb, device=dev, dtype=torch.float32) * 1e-2 + 5e-3 for _ in range(copies)]
    kb4 = (kb + 3) // 4 * 4
    w_block4 = [(torch.rand(nb, kb4, device=dev, dtype=torch.float32) * 1e-2 + 5e-3)[:, :kb] for _ in range(copies)]
    one = torch.ones((), device=dev, dtype=torch.float32)
    out = []
    for m in rows:
        x8 = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        xs_row = torch.rand(m, 1, device=dev, dtype=torch.float32) * 1e-2 + 5e-3
        # 1 x 128 groups of x: (m, ceil(k/128)) with the rows fastest (stride (1, m)).
        xs_grp = torch.rand(kb, m, device=dev, dtype=torch.float32).mul_(1e-2).add_(5e-3).t()
        state = {"i": 0}

        def attempt(name, make_call):
            try:
                call = make_call()
                call(0)  # refused shapes fail here, outside any graph

                def fn():
                    call(state["i"] % copies)
                    state["i"] += 1
                methods[name] = round(time_graph_us(fn, copies * 4), 3)
            except Exception as e:  # noqa: BLE001 - a refused recipe is a result too
                methods[name] = "error: " + str(e).splitlines()[0][:200]

        def padded(t, rows_to):
            if t.shape[0] == rows_to:
                return t
            p = torch.zeros(rows_to, *t.shape[1:], device=dev, dtype=t.dtype)
            p[: t.shape[0]] = t
            return p

        recipes = {}
        # tensor
        recipes["tensor"] = [(
            "torch._scaled_mm tensorwise fast-accum",
            lambda: (lambda c: torch._scaled_mm(x8, ws[c].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                use_fast_accum=True)))]
        # channel (row-wise)
        m16 = (m + 15) // 16 * 16
        recipes["channel"] = [
            ("torch._scaled_mm rowwise fast-accum",
             lambda: (lambda c: torch._scaled_mm(x8, ws[c].t(), scale_a=xs_row, scale_b=w_channel[c],
                                                 out_dtype=torch.bfloat16, use_fast_accum=True))),
            ("torch._scaled_mm rowwise fast-accum, rows padded to 16",
             lambda: (lambda xp, sp: (lambda c: torch._scaled_mm(xp, ws[c].t(), scale_a=sp, scale_b=w_channel[c],
                                                                 out_dtype=torch.bfloat16, use_fast_accum=True)))(
                 padded(x8, m16), padded(xs_row, m16)))]
        # block: the scale layouts PyTorch's checks name (1 x 128 groups of x rows-fastest; 128 x 128
        # blocks of W^T k-blocks-fastest, the row stride as is or rounded up to 4), rows as they are
        # or padded to a multiple of 4
        st = block_recipes()
        block = []
        m4 = (m + 3) // 4 * 4
        row_forms = [("", x8, xs_grp)]
        if m4 != m:
            row_forms.append((", rows padded to 4", padded(x8, m4),
                              torch.rand(kb, m4, device=dev, dtype=torch.float32).mul_(1e-2).add_(5e-3).t()))
        for rows_note, xa, sa in row_forms:
            for ld_note, wsc in (("", w_block), (", weight-scale rows of a multiple of 4", w_block4)):
                note = rows_note + ld_note
                if st is not None:
                    block.append((f"F.scaled_mm BlockWise1x128 x BlockWise128x128{note}",
                                  lambda xa=xa, sa=sa, wsc=wsc: (
                                      lambda c: scaled_mm_block_v2(xa, ws[c].t(), sa, wsc[c].t(), st))))
                block.append((f"torch._scaled_mm 1x128 x 128x128{note}",
                              lambda xa=xa, sa=sa, wsc=wsc: (
                                  lambda c: torch._scaled_mm(xa, ws[c].t(), scale_a=sa, scale_b=wsc[c].t(),
                                                             out_dtype=torch.bfloat16, use_fast_accum=False))))
        recipes["block"] = block
        shape = shape_name(model, proj, m, n, k)
        for mode, tries in recipes.items():
            methods = {}
            for name, make in tries:
                attempt(name, make)
                if isinstance(methods[name], float) and "padded" not in name and "multiple of 4" not in name:
                    break  # the plain form ran: the padded ones would only add work
            ok = {name: us for name, us in methods.items() if isinstance(us, float)}
            best = min(ok, key=ok.get) if ok else None
            out.append(dict(key=f"{mode}|{shape}", shape=shape, mode=mode, us=ok[best] if best else 0.0,
                            what=best or "none", methods=methods))
    del ws
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_fp8_gemm_bench: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    torch.manual_seed(0)
    t0 = time.time()
    gbps = read_gbps(dev)
    rows = QUICK_ROWS if args.quick else ROWS
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}: read bandwidth {gbps:.0f} GB/s",
          file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        f.write(json.dumps({"read_gbps": round(gbps, 1), "torch": torch.__version__}) + "\n")
        for model, proj, n, k in SHAPES:
            if args.filter and args.filter not in f"{model} {proj}":
                continue
            try:
                results = bench_shape(model, proj, n, k, rows, dev)
            except Exception as e:  # noqa: BLE001 - one shape's failure must not end the run
                print(f"{model} {proj}: {e}", file=sys.stderr, flush=True)
                continue
            for r in results:
                m = int(r["shape"].split(" m=")[1].split()[0])
                floor_bytes = n * k + 4 * ((n + 127) // 128) * ((k + 127) // 128) + m * k + 2 * m * n
                r["floor_us"] = round(floor_bytes / (gbps * 1e3), 3)
                r["read_gbps"] = round(gbps, 1)
                f.write(json.dumps(r) + "\n")
                f.flush()
                print(f"[{time.time() - t0:6.1f}s] {r['key']:60s} {r['us']:9.2f} us  {r['what']}", file=sys.stderr,
                      flush=True)
    print(f"torch_fp8_gemm_bench: done in {time.time() - t0:.0f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
