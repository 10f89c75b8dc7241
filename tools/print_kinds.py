#!/usr/bin/env python3
"""Prints the per-kind split of an `eaglesim run --json` report, one line per strategy.

Every op kind that took time in any strategy gets a column (GEMMs, grouped GEMMs, attention,
allreduces, norms, ...). Used by tools/gpu-measure.sh (replay step) so its log carries where the
measured time went. Usage: print_kinds.py REPORT.json
"""
import json
import sys


def main() -> int:
    with open(sys.argv[1]) as f:
        report = json.load(f)
    results = [r for r in report["results"] if r.get("supported", True)]
    kinds = []
    for r in results:
        for k in (r.get("verify_kind_us") or {}):
            if k not in kinds:
                kinds.append(k)
    print("strategy   verify_us " + " ".join(f"{k:>12}" for k in kinds))
    for r in results:
        split = r.get("verify_kind_us") or {}
        print(f"{r['strategy']:<10} {r['verify_us']:9.1f} " + " ".join(f"{split.get(k, 0.0):12.1f}" for k in kinds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
