#!/usr/bin/env python3
"""Sets the engine-overhead parameters of an engine profile (src/cost/engine_profile.cpp) on the FIT
rows of validation/published.tsv only; the held-out rows are never read here. Two parameters, one
after the other, each by a grid search minimising the median |log(predicted / published)|:
  1. moe_cta_gbs on the plain-decoding tok/s of the MoE fit rows (it is what moves them);
  2. cycle_host_us on the EAGLE-3 speedups of the fit rows, with 1. fixed.
Prints the values and the fit rows' errors; the defaults in engine_profile.cpp are set from it.

usage: tools/fit_engine_profile.py [--engine sglang] [--eaglesim build/eaglesim]"""
import argparse, math, os, statistics, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate  # noqa: E402


def score(exe, work, rows, option, which):
    errs = []
    for r in rows:
        plain, eagle = validate.predict(exe, work, r, option)
        if which == "plain" and validate.num(r["plain_tok_s"]):
            errs.append(abs(math.log(plain / validate.num(r["plain_tok_s"]))))
        if which == "speedup" and r["spec"] != "none" and r["accept_len"]:
            pub = validate.num(r["speedup"]) or validate.num(r["eagle_tok_s"]) / validate.num(r["plain_tok_s"])
            errs.append(abs(math.log((eagle / plain) / pub)))
    return statistics.median(errs) if errs else float("inf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="sglang")
    ap.add_argument("--eaglesim", default=os.path.join(validate.ROOT, "build", "eaglesim"))
    a = ap.parse_args()
    rows = [r for r in validate.read_rows(os.path.join(validate.ROOT, "validation", "published.tsv"))
            if r["set"] == "fit" and r["engine"] == a.engine]
    if not rows:
        sys.exit(f"no fit rows for engine {a.engine}")
    work = tempfile.mkdtemp(prefix="eaglesim-fit-")
    moe_rows = [r for r in rows if "a3b" in r["model"] or "moe" in r["model"]]
    best_moe = min((score(a.eaglesim, work, moe_rows, f"{a.engine}.moe_cta_gbs={g:.1f}", "plain"), g)
                   for g in [x / 2 for x in range(12, 61)])
    print(f"moe_cta_gbs = {best_moe[1]:.1f} (median |log error| of plain tok/s {best_moe[0]:.3f} over "
          f"{len(moe_rows)} MoE fit rows)")
    moe = f"{a.engine}.moe_cta_gbs={best_moe[1]:.1f}"
    best_host = min((score(a.eaglesim, work, rows, f"{moe},{a.engine}.cycle_host_us={h}", "speedup"), h)
                    for h in range(0, 6001, 250))
    print(f"cycle_host_us = {best_host[1]} (median |log error| of the speedup {best_host[0]:.3f} over the fit rows)")


if __name__ == "__main__":
    main()
