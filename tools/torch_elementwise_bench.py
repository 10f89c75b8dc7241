#!/usr/bin/env python3
"""PyTorch on the shapes of bench_elementwise (bench/gpu/bench_elementwise.cu): same list, same keys.

What runs for each op (bf16 tensors, eager PyTorch captured in a CUDA graph):
  rmsnorm              F.rms_norm(x, (w,), weight, eps)
  add_rmsnorm          residual.add_(x); F.rms_norm(residual, (w,), weight, eps)   (PyTorch has no
                       fused add + RMSNorm: this is what a PyTorch user runs; written under the
                       add_rmsnorm_unfused key too, the same computation)
  residual_add         residual.add_(x)
  silu_mul             F.silu(gate_up[:, :w]) * gate_up[:, w:]
Each configuration is first checked against an fp32 reference (||out - ref|| / ||ref|| < 2e-2).
Timing: tools/torch_attention_bench.py's time_op, a CUDA graph of back-to-back calls (eager where
capture fails), median replay time per call; the buffers rotate over enough copies that one graph
touches at least twice the L2 (up to 4096 copies), as in bench_elementwise.

Writes one JSON line per shape: {"shape", "us", "what", "rel_err", "timing"}; bench_elementwise --torch FILE
joins them by "shape". Every shape also goes to stdout.

Usage: python3 tools/torch_elementwise_bench.py --out torch-elementwise.json [--filter TEXT] [--quick] [--budget-s S]
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

from torch_attention_bench import time_op  # the same graph timer (tools/ is on the path of a tools/ script)

EPS = 1e-5
MAX_COPIES = 4096
ROWS = [1, 4, 16, 64, 256, 1024, 4096]
QUICK_ROWS = [1, 16, 256, 4096]
NORM_WIDTHS = [4096, 7168, 8192]
# Llama-3.1-8B (14336; TP8 1792), Llama-3.1-70B (28672; TP8 3584), Kimi-K2 dense (18432; TP8 2304)
# and experts (2048; TP8 256): models/llm/*.json intermediate sizes.
SILU_WIDTHS = [14336, 1792, 28672, 3584, 18432, 2304, 2048, 256]


def shapes(quick):
    rows = QUICK_ROWS if quick else ROWS
    for op in ("rmsnorm", "add_rmsnorm", "add_rmsnorm_unfused", "residual_add"):
        for w in NORM_WIDTHS:
            for r in rows:
                yield dict(op=op, rows=r, width=w, key=f"{op} rows={r} width={w}")
    for w in SILU_WIDTHS:
        for r in rows:
            yield dict(op="silu_mul", rows=r, width=w, key=f"silu_mul rows={r} width={w}")


def copy_elements(s):
    """Elements of one copy's buffers (x or gate_up, residual, weight, out), as bench_elementwise counts them."""
    n, w = s["rows"] * s["width"], s["width"]
    return {"rmsnorm": 2 * n + w, "add_rmsnorm": 3 * n + w, "add_rmsnorm_unfused": 3 * n + w,
            "residual_add": 2 * n, "silu_mul": 3 * n}[s["op"]]


class Case:
    """`copies` sets of one shape's inputs, as views of one tensor per buffer kind."""

    def __init__(self, s, l2_bytes, device):
        self.s = s
        r, w = s["rows"], s["width"]
        self.copies = int(max(1, min(MAX_COPIES, math.ceil(2 * l2_bytes / (copy_elements(s) * 2)))))
        g = torch.Generator(device=device)
        g.manual_seed(1234)

        def rand(shape, lo, hi):
            return (torch.rand((self.copies,) + shape, device=device, generator=g) * (hi - lo) + lo).to(torch.bfloat16)

        op = s["op"]
        if op == "silu_mul":
            self.gate_up = rand((r, 2 * w), -6, 6)
        else:
            self.x = rand((r, w), -2, 2)
        if op != "rmsnorm" and op != "silu_mul":
            self.residual = rand((r, w), -3, 3)
        if op in ("rmsnorm", "add_rmsnorm", "add_rmsnorm_unfused"):
            self.weight = rand((w,), 0.5, 1.5)

    def call(self, c):
        op, w = self.s["op"], self.s["width"]
        if op == "rmsnorm":
            return F.rms_norm(self.x[c], (w,), self.weight[c], EPS)
        if op in ("add_rmsnorm", "add_rmsnorm_unfused"):
            res = self.residual[c]
            res.add_(self.x[c])
            return F.rms_norm(res, (w,), self.weight[c], EPS)
        if op == "residual_add":
            return self.residual[c].add_(self.x[c])
        gu = self.gate_up[c]
        return F.silu(gu[:, :w]) * gu[:, w:]

    def check(self):
        """Relative error of one call on copy 0 against fp32 (the add ops' inputs restored after)."""
        op, w = self.s["op"], self.s["width"]
        if op == "silu_mul":
            gu = self.gate_up[0].float()
            ref = F.silu(gu[:, :w]) * gu[:, w:]
        else:
            x = self.x[0].float()
            if op == "rmsnorm":
                ref_in = x
            else:
                before = self.residual[0].clone()
                ref_in = (before.float() + x).to(torch.bfloat16).float()
            if op == "residual_add":
                ref = ref_in
            else:
                ref = ref_in * torch.rsqrt(ref_in.pow(2).mean(-1, keepdim=True) + EPS) * self.weight[0].float()
        got = self.call(0).float()
        if op not in ("rmsnorm", "silu_mul"):
            self.residual[0].copy_(before)
        return (torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref)).item()


WHAT = {"rmsnorm": "F.rms_norm", "add_rmsnorm": "add_ + F.rms_norm", "add_rmsnorm_unfused": "add_ + F.rms_norm",
        "residual_add": "add_", "silu_mul": "F.silu(g) * u"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON lines, one per shape")
    ap.add_argument("--filter", default="")
    ap.add_argument("--quick", action="store_true", help="rows 1, 16, 256, 4096 only (as bench_elementwise --quick)")
    ap.add_argument("--budget-s", type=float, default=1e9, help="no new shape starts after this many seconds")
    args = ap.parse_args()
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    print(f"torch {torch.__version__}, {props.name}, L2 {l2 / 1e6:.0f} MB", flush=True)
    if not hasattr(F, "rms_norm"):
        print("torch.nn.functional.rms_norm is missing (PyTorch >= 2.4 has it): the norm rows are skipped", flush=True)
    t_start = time.perf_counter()
    todo = [s for s in shapes(args.quick) if args.filter in s["key"]]
    done, failed, skipped = [], [], 0
    with open(args.out, "w") as out:
        for s in todo:
            if time.perf_counter() - t_start > args.budget_s:
                skipped += 1
                continue
            if "rmsnorm" in s["op"] and not hasattr(F, "rms_norm"):
                continue
            try:
                case = Case(s, l2, device)
                err = case.check()
                if not err < 2e-2:
                    failed.append(f"{s['key']} (rel err {err:.2e})")
                    print(f"{s['key']:40s} wrong: rel err {err:.2e}", flush=True)
                    continue
                us, how = time_op(case.call, case.copies)
            except Exception as e:  # noqa: BLE001 - a shape torch refuses is reported, not fatal
                why = str(e).splitlines()[0][:80] if str(e) else type(e).__name__
                failed.append(f"{s['key']} ({why})")
                print(f"{s['key']:40s} failed: {why}", flush=True)
                continue
            finally:
                case = None
                torch.cuda.empty_cache()
            line = {"shape": s["key"], "us": round(us, 3), "what": WHAT[s["op"]], "rel_err": float(f"{err:.3e}"),
                    "timing": how}
            out.write(json.dumps(line) + "\n")
            out.flush()  # what a timeout cuts short stays on disk
            done.append(s["key"])
            print(f"{s['key']:40s} {WHAT[s['op']]:20s} {us:10.2f} us  (rel err {err:.1e})", flush=True)
    if failed:
        print(f"no torch time for {len(failed)} shapes: " + "; ".join(failed), flush=True)
    if skipped:
        print(f"{skipped} shapes not run: the {args.budget_s:.0f} s budget ran out", flush=True)
    print(f"done: {len(done)} shapes in {time.perf_counter() - t_start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
