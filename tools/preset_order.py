#!/usr/bin/env python3
"""Checks that the presets are on one basis: a GPU at least as fast in every resource (BF16 and FP8
TFLOP/s, memory bandwidth, SMs; at TP > 1 also the link bandwidth of the same interconnect) is never
predicted slower. SMs count because latency-bound kernels (the engines' fused-MoE grid at decode
sizes) finish in waves over them. Prices dense, MoE and MLA models in bf16, fp8 and int4 at batches 1-64 with
`eaglesim sweep` (NCCL, chain of 3 drafts, a = 0.7) on every preset and lists every inverted pair.

usage: tools/preset_order.py [--eaglesim build/eaglesim] [--verbose]
Exit 0 when no pair is inverted, 1 otherwise."""
import argparse, csv, glob, itertools, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (model, TP): TP1 compares single GPUs; TP8 the 8-GPU NVSwitch boxes.
CASES = [("llama-3.1-8b", 1), ("qwen3-8b", 1), ("qwen3-30b-a3b", 1),
         ("llama-3.1-70b", 8), ("qwen3-235b-a22b", 8), ("deepseek-v3", 8), ("kimi-k2-instruct", 8)]
DTYPES = ["bf16", "fp8", "int4"]
BATCHES = [1, 2, 4, 8, 16, 32, 64]
METRICS = ["verify_us", "decode_us", "cycle_us"]


def presets():
    out = {}
    for f in sorted(glob.glob(os.path.join(ROOT, "models", "topologies", "*.json"))):
        d = json.load(open(f))
        g = d["gpu"]
        links = d.get("links", {})
        link_bw = max((l.get("bw_gbs", 0) for l in links.values() if isinstance(l, dict)), default=0)
        out[d["name"]] = dict(bf16=g["bf16_tflops"], fp8=g["fp8_tflops"], bw=g["mem_bw_gbs"], sms=g["sms"], gpus=d["gpu_count"],
                              interconnect=d["interconnect"], link=link_bw, p2p=d.get("p2p", True))
    return out


def dominates(a, b, tp):
    keys = ["bf16", "fp8", "bw", "sms"] + (["link"] if tp > 1 else [])
    if tp > 1 and (a["interconnect"] != b["interconnect"] or a["p2p"] != b["p2p"]):
        return False
    return all(a[k] >= b[k] for k in keys) and any(a[k] > b[k] for k in keys)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eaglesim", default=os.path.join(ROOT, "build", "eaglesim"))
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    ps = presets()
    work = tempfile.mkdtemp(prefix="eaglesim-preset-order-")
    times = {}
    for model, tp in CASES:
        tops = [n for n, p in ps.items() if p["gpus"] >= tp]
        out = os.path.join(work, f"{model}_tp{tp}.csv")
        cmd = [a.eaglesim, "sweep", "--model", model, "--topology", ",".join(tops), "--tp", str(tp),
               "--weight-dtype", ",".join(DTYPES), "--batch", ",".join(map(str, BATCHES)), "--draft-tokens", "3",
               "--accept-rate", "0.7", "--strategy", "nccl", "-o", out]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
        for r in csv.DictReader(open(out)):
            if r["status"] == "ok":
                for m in METRICS:
                    times[(model, tp, r["weight_dtype"], int(r["batch"]), m, r["topology"])] = float(r[m])
    checked, inverted = 0, []
    for (model, tp) in CASES:
        for dt, b, m in itertools.product(DTYPES, BATCHES, METRICS):
            for fa, fb in itertools.permutations(ps, 2):
                ka, kb = (model, tp, dt, b, m, fa), (model, tp, dt, b, m, fb)
                if ka not in times or kb not in times or not dominates(ps[fa], ps[fb], tp):
                    continue
                checked += 1
                if times[ka] > times[kb] * 1.001:
                    inverted.append((model, tp, dt, b, m, fa, times[ka], fb, times[kb]))
    pairs = sorted({(i[0], i[1], i[2], i[5], i[7]) for i in inverted})
    for i in inverted if a.verbose else []:
        print(f"{i[0]} tp{i[1]} {i[2]} batch {i[3]} {i[4]}: {i[5]} {i[6]:.1f} us > {i[7]} {i[8]:.1f} us")
    for pr in pairs:
        n = sum(1 for i in inverted if (i[0], i[1], i[2], i[5], i[7]) == pr)
        print(f"inverted: {pr[3]} slower than {pr[4]} on {pr[0]} tp{pr[1]} {pr[2]} ({n} batch x metric points)")
    print(f"preset order: {len(inverted)} of {checked} dominated comparisons inverted "
          f"({len(pairs)} model x dtype x preset pairs)")
    return 1 if inverted else 0


if __name__ == "__main__":
    sys.exit(main())
