#!/usr/bin/env python3
"""PyTorch's best scaled_dot_product_attention on the shapes of bench_attention.

For every shape of bench/gpu/bench_attention.cu (same list, same keys) this times
torch.nn.functional.scaled_dot_product_attention under each backend (FLASH_ATTENTION,
EFFICIENT_ATTENTION, CUDNN_ATTENTION, MATH, one at a time through torch.nn.attention.sdpa_kernel)
and each way a PyTorch user batches ragged requests: one padded batch with a boolean mask
(padding and the draft tree), or one call per request. GQA goes through enable_gqa=True, or, where
a backend refuses that, K/V expanded to every query head beforehand (not timed). A configuration
counts only if it runs and matches an fp32 reference (||out - ref|| / ||ref|| < 2e-2 on the first
and last request). Timing: a CUDA graph of back-to-back calls, K/V rotated over copies so one
graph touches >= 1 GiB (as bench_attention does), median replay time per call.

Writes one JSON line per shape, the fastest correct configuration: {"shape", "backend", "us",
"rel_err"}; every configuration tried goes to stdout. --budget-s bounds the run: a first pass
gives every shape one working configuration (the likeliest fastest first), a second pass tries the
others while time lasts; what the budget cut off is listed at the end.

Usage: python3 tools/torch_attention_bench.py --out torch.json [--budget-s 200] [--filter TEXT] [--quick]
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# "70b-tp8": Llama-3.1-70B's per-rank shape at TP8 (8 query heads, one KV head).
MODELS = [("8b", False, 32, 8), ("70b", False, 64, 8), ("70b-tp8", False, 8, 1), ("kimi", True, 8, 1),
          ("dsv3", True, 16, 1)]
BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH]
ROTATE_BYTES = 1 << 30


def lengths(batch, kv):
    # The ragged rows of bench_attention: 512 + 32256 * (2r + 1) // (2B).
    return [kv if kv else 512 + (32256 * (2 * r + 1)) // (2 * batch) for r in range(batch)]


def shapes():
    for name, mla, heads, kv_heads in MODELS:
        tp8 = not mla and kv_heads == 1
        batches = [1, 8, 32] if mla else [1, 8, 32, 64]
        qs = [1, 4] if mla or tp8 else [1, 4, 16, 32]
        kvs = [2048, 4096, 8192, 32768] if mla else [2048, 8192] if tp8 else [512, 2048, 8192, 32768, 0]
        for b in batches:
            for q in qs:
                for kv in kvs:
                    key = f"{name} B={b} q={q} kv={kv if kv else 'ragged'} {'tree' if q > 1 else 'decode'}"
                    yield dict(key=key, mla=mla, heads=heads, kv_heads=kv_heads, batch=b, q=q, kv=kv,
                               dk=576 if mla else 128, dv=512 if mla else 128, kv_len=lengths(b, kv))


def tree_allowed(q):
    """[q, q] bool: draft token i sees draft token j (binary tree, parent of i is (i - 1) // 2)."""
    allow = torch.zeros(q, q, dtype=torch.bool)
    for i in range(q):
        j = i
        while True:
            allow[i, j] = True
            if j == 0:
                break
            j = (j - 1) // 2
    return allow


def row_mask(q, length, width, device):
    """[q, width] bool for one request of `length` tokens whose last q are the draft tokens."""
    m = torch.zeros(q, width, dtype=torch.bool, device=device)
    prefix = length - q
    m[:, :prefix] = True
    m[:, prefix:length] = tree_allowed(q).to(device)
    return m


class Case:
    """One shape's tensors: Q, `copies` sets of K/V (padded to the longest request), masks."""

    def __init__(self, s, device):
        self.s = s
        B, T, H, HK, DK, DV = s["batch"], s["q"], s["heads"], s["kv_heads"], s["dk"], s["dv"]
        self.lmax = max(s["kv_len"])
        per_copy = B * HK * self.lmax * (DK + (0 if s["mla"] else DV)) * 2
        self.copies = max(1, min(64, -(-ROTATE_BYTES // per_copy)))
        g = torch.Generator(device=device)
        g.manual_seed(1234)
        self.q = (torch.rand(B, H, T, DK, device=device, generator=g) * 4 - 2).to(torch.bfloat16)
        self.k, self.v = [], []
        for _ in range(self.copies):
            if s["mla"]:
                latent = (torch.rand(B, 1, self.lmax, DK, device=device, generator=g) * 2 - 1).to(torch.bfloat16)
                self.k.append(latent)
                self.v.append(latent[..., :DV])  # V is the first 512 columns of the latent row
            else:
                self.k.append((torch.rand(B, HK, self.lmax, DK, device=device, generator=g) * 2 - 1).to(torch.bfloat16))
                self.v.append((torch.rand(B, HK, self.lmax, DV, device=device, generator=g) * 2 - 1).to(torch.bfloat16))
        uniform = len(set(s["kv_len"])) == 1
        self.needs_mask = T > 1 or not uniform
        self.padded_mask = None
        if self.needs_mask:
            if uniform:  # every request has the same tree and length: one broadcast mask
                self.padded_mask = row_mask(T, self.lmax, self.lmax, device)[None, None]
            else:
                self.padded_mask = torch.stack([row_mask(T, L, self.lmax, device) for L in s["kv_len"]])[:, None]
        self.request_masks = [row_mask(T, L, L, device)[None, None] if T > 1 else None for L in s["kv_len"]]

    def reference(self, r):
        """fp32 attention of request r: [H, T, DV]."""
        s = self.s
        L = s["kv_len"][r]
        q = self.q[r].float()
        k = self.k[0][r, :, :L].float()
        v = self.v[0][r, :, :L].float()
        g = s["heads"] // s["kv_heads"]
        k = k.repeat_interleave(g, 0)
        v = v.repeat_interleave(g, 0)
        sc = (q @ k.transpose(-1, -2)) / math.sqrt(s["dk"])
        sc = sc.masked_fill(~row_mask(s["q"], L, L, q.device)[None], float("-inf"))
        return torch.softmax(sc, -1) @ v


def sdpa(q, k, v, mask, gqa):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)


def expand_heads(x, heads):
    return x.repeat_interleave(heads // x.shape[1], 1) if x.shape[1] != heads else x


def make_op(case, backend, mode, kv_mode):
    """A callable for copy c, or raise. mode: padded | loop. kv_mode: gqa | expand."""
    s = case.s
    H = s["heads"]
    gqa = kv_mode == "gqa" and s["kv_heads"] != H
    ks, vs = case.k, case.v
    if kv_mode == "expand":
        ks = [expand_heads(k, H) for k in ks]
        vs = [expand_heads(v, H) for v in vs]
    if mode == "padded":
        def op(c):
            with sdpa_kernel(backend):
                return sdpa(case.q, ks[c], vs[c], case.padded_mask, gqa)
    else:
        lens = s["kv_len"]

        def op(c):
            with sdpa_kernel(backend):
                return [sdpa(case.q[r:r + 1], ks[c][r:r + 1, :, :lens[r]], vs[c][r:r + 1, :, :lens[r]],
                             case.request_masks[r], gqa) for r in range(len(lens))]
    return op


def rel_err(case, out, mode):
    worst = 0.0
    last = case.s["batch"] - 1
    for r in sorted({0, last}):
        got = (out[r] if mode == "loop" else out[r:r + 1])[0].float()
        ref = case.reference(r)
        worst = max(worst, (torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref)).item())
    return worst


def time_op(op, copies):
    """Median per call of a CUDA graph replay (eager timing when capture fails)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for c in range(min(copies, 2)):
            op(c)
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    op(0)
    torch.cuda.synchronize()
    one = time.perf_counter() - t0
    per_graph = max(copies, min(64, int(2e-3 / max(one, 1e-6)) + 1))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(per_graph):
                op(i % copies)
        graph.replay()
        torch.cuda.synchronize()
        samples = []
        for _ in range(7):
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3 / per_graph)
        del graph
        return statistics.median(samples), "graph"
    except Exception:  # noqa: BLE001 - some backends cannot be captured; time them eagerly
        torch.cuda.synchronize()
        samples = []
        for _ in range(7):
            start.record()
            for i in range(per_graph):
                op(i % copies)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3 / per_graph)
        return statistics.median(samples), "events"


def configs(s):
    """(backend, mode) pairs, the likeliest fastest first: the first pass times only until one works."""
    uniform = len(set(s["kv_len"])) == 1
    F_, E, C, M = BACKENDS
    if s["mla"]:  # head dims 576/512: beyond flash's and cuDNN's limits, but tried
        order = [E, M, C, F_]
    elif s["q"] == 1:
        order = [F_, C, E, M]
    else:  # a mask: flash takes none, tried last so its refusal is on record
        order = [E, C, M, F_]
    modes = ["padded"] if uniform else (["loop", "padded"] if s["q"] == 1 else ["padded", "loop"])
    return [(b, m) for b in order for m in modes]


def try_config(case, backend, mode, log):
    """Times one (backend, mode), enable_gqa first and expanded K/V where that is refused or wrong;
    returns (us, label, err) or None."""
    s = case.s
    scores_elems = s["batch"] * s["heads"] * s["q"] * case.lmax
    if backend == SDPBackend.MATH and scores_elems > (1 << 29):
        log(f"  {s['key']:40s} MATH {mode:35s} skipped (a {scores_elems / 1e9:.1f} G-element score matrix)")
        return None
    expand_bytes = case.copies * s["batch"] * s["heads"] * case.lmax * (s["dk"] + s["dv"]) * 2
    for kv_mode in (["gqa", "expand"] if s["kv_heads"] != s["heads"] else ["gqa"]):
        if kv_mode == "expand" and expand_bytes > 40e9:
            continue
        label = f"{backend.name} {mode}" + (" expanded-kv" if kv_mode == "expand" else "")
        try:
            op = make_op(case, backend, mode, kv_mode)
            res = op(0)
            torch.cuda.synchronize()
            err = rel_err(case, res, mode)
            del res
            if not err < 2e-2:
                log(f"  {s['key']:40s} {label:42s} wrong (rel err {err:.2e})")
                continue
            us, how = time_op(op, case.copies)
            log(f"  {s['key']:40s} {label:42s} {us:10.2f} us ({how}, rel err {err:.1e})")
            return (us, label, err)
        except Exception as e:  # noqa: BLE001 - a backend that refuses the shape
            log(f"  {s['key']:40s} {label:42s} refused: {str(e).splitlines()[0][:90] if str(e) else type(e).__name__}")
            torch.cuda.synchronize()
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON lines, one per shape (its fastest correct configuration)")
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--filter", default="")
    ap.add_argument("--quick", action="store_true", help="skip B=64 and kv=512 (as bench_attention --quick)")
    args = ap.parse_args()
    device = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    t_start = time.perf_counter()

    def log(line):
        print(line, flush=True)

    todo = [s for s in shapes() if args.filter in s["key"]]
    if args.quick:
        todo = [s for s in todo if s["batch"] != 64 and s["kv"] != 512]
    best = {}
    tried = {s["key"]: set() for s in todo}

    def write_best():  # rewritten after every shape, so a run cut short keeps what it measured
        with open(args.out, "w") as out:
            for s in todo:
                if s["key"] in best:
                    us, label, err = best[s["key"]]
                    out.write(json.dumps({"shape": s["key"], "backend": label, "us": round(us, 3),
                                          "rel_err": float(f"{err:.3e}")}) + "\n")

    # Pass 1: every shape gets one working configuration; pass 2: the rest, while time lasts.
    for pass_no in (1, 2):
        for s in todo:
            if time.perf_counter() - t_start > args.budget_s:
                break
            if pass_no == 2 and len(tried[s["key"]]) == len(configs(s)):
                continue
            case = Case(s, device)
            for backend, mode in configs(s):
                if (backend, mode) in tried[s["key"]]:
                    continue
                if time.perf_counter() - t_start > args.budget_s:
                    break
                tried[s["key"]].add((backend, mode))
                r = try_config(case, backend, mode, log)
                if r and (s["key"] not in best or r[0] < best[s["key"]][0]):
                    best[s["key"]] = r
                if r and pass_no == 1:
                    break
            del case
            torch.cuda.empty_cache()
            write_best()
    write_best()
    for s in todo:
        if s["key"] in best:
            us, label, _ = best[s["key"]]
            log(f"best {s['key']:40s} {label:42s} {us:10.2f} us")
    missing = [s["key"] for s in todo if s["key"] not in best]
    partial = [s["key"] for s in todo if s["key"] in best and len(tried[s["key"]]) < len(configs(s))]
    if missing:
        log(f"no torch time for {len(missing)} shapes (none ran correctly, or the budget ran out): " + "; ".join(missing))
    if partial:
        log(f"{len(partial)} shapes timed with only some backends before the budget ({args.budget_s:.0f} s) ran out")
    log(f"done in {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
