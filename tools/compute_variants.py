#!/usr/bin/env python3
"""Diagnostic: cut a trace's verify step into variants that keep only some op kinds (or names),
so the CUDA replay and the calibrated simulator can be compared on each part alone.

Usage: tools/compute_variants.py TRACE OUTDIR
Writes OUTDIR/<variant>.json, each a trace with one step (the verify step) holding only the ops
the variant keeps. Allreduces are always dropped (compare with --strategy ideal)."""
import json
import sys

VARIANTS = {
    "all": lambda o: True,
    "gemm": lambda o: o["kind"] in ("gemm", "lm_head"),
    "nongemm": lambda o: o["kind"] not in ("gemm", "lm_head"),
    "gate_up_down": lambda o: o.get("name") in ("gate_up_proj", "down_proj"),
    "gate_up": lambda o: o.get("name") == "gate_up_proj",
    "qkv_o": lambda o: o.get("name") in ("qkv_proj", "o_proj"),
    "norm_gemm": lambda o: o["kind"] in ("gemm", "lm_head", "rmsnorm"),
    "gemm_attn": lambda o: o["kind"] in ("gemm", "lm_head", "attention"),
}
# The first N gate_up GEMMs alone: does a GEMM's cost depend on how long the sequence runs?
PREFIXES = {"gate_up_8": 8, "gate_up_16": 16, "gate_up_32": 32}


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    trace = json.load(open(src))
    verify = next(s for s in trace["steps"] if s["name"] == "verify")
    for name, keep in VARIANTS.items():
        ops = [o for o in verify["ops"] if o["kind"] != "allreduce" and keep(o)]
        out = dict(trace)
        out["steps"] = [{"name": "verify", "ops": ops}]
        with open(f"{outdir}/{name}.json", "w") as f:
            json.dump(out, f)
        print(name, len(ops))
    gate_up = [o for o in verify["ops"] if o.get("name") == "gate_up_proj"]
    for name, n in PREFIXES.items():
        out = dict(trace)
        out["steps"] = [{"name": "verify", "ops": gate_up[:n]}]
        with open(f"{outdir}/{name}.json", "w") as f:
            json.dump(out, f)
        print(name, len(gate_up[:n]))


if __name__ == "__main__":
    main()
