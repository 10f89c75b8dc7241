#!/usr/bin/env python3
"""Prints the per-kind split of an `eaglesim run --json` report, one line per strategy and step.

Used by tools/gpu-measure.sh (replay step) so its log carries where the measured time went.
Usage: print_kinds.py REPORT.json
"""
import json
import sys

KINDS = ["gemm", "attention", "allreduce", "rmsnorm", "residual_add", "act", "other"]


def main() -> int:
    with open(sys.argv[1]) as f:
        report = json.load(f)
    print("strategy   verify_us " + " ".join(f"{k:>12}" for k in KINDS))
    for r in report["results"]:
        kinds = r.get("verify_kind_us") or {}
        print(f"{r['strategy']:<10} {r['verify_us']:9.1f} " + " ".join(f"{kinds.get(k, 0.0):12.1f}" for k in KINDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
