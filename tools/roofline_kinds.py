#!/usr/bin/env python3
"""Per-kind roofline tables of `eaglesim run --backend cuda --json` reports, in markdown.

One table per report: each op kind of the verify step with its time, the bytes it must move, its
floor max(bytes / read bandwidth, FLOPs / bf16 peak) from the ceilings measured in the same
process and the share of that floor it reaches; then the same kind split by op size, as the kernel
issue's bars judge ops: its ops of 16 MB or more each (count, us, floor us, % of floor) and the
smaller ones (count, us, floor us, us over the floor per op). The bar is met when the kind's large
ops reach 60 % of their floor or better; a kind without large ops is not held to it (its small
ops show their excess per op). Then one line per report naming the kinds that miss it. Reports
without the split (older ones) are judged per kind: every kind of 16 MB or more at 60 %. Used by
tools/gpu-measure.sh (kinds step).

Usage: roofline_kinds.py REPORT.json [REPORT.json ...]
"""
import json
import os
import sys

MIN_BYTES = 16e6   # ops below this are launch- and latency-bound: not held to the bar
MIN_PCT = 60.0


def num(v, form):
    return "-" if v is None else format(v, form)


def judge(row):
    """The bar cell and, when missed, the miss to name: on the large ops where the row splits by
    size, else on the kind as a whole."""
    large = row.get("large")
    if large is not None:
        if large["ops"] == 0:
            return "no op >= 16 MB", None
        pct = large["pct_of_floor"]
        if pct is not None and pct >= MIN_PCT:
            return "met", None
        n = large["ops"]
        return "**missed**", f"{row['kind']} {num(pct, '.1f')} % ({n} op{'s' if n != 1 else ''} >= 16 MB)"
    if row["bytes"] < MIN_BYTES:
        return "< 16 MB", None
    if row["pct_of_floor"] >= MIN_PCT:
        return "met", None
    return "**missed**", f"{row['kind']} {row['pct_of_floor']:.1f} %"


def split_cells(row):
    large, small = row.get("large"), row.get("small")
    if large is None or small is None:
        return ["-"] * 8
    return [str(large["ops"]), f"{large['us']:.0f}", f"{large['floor_us']:.0f}", num(large["pct_of_floor"], ".1f"),
            str(small["ops"]), f"{small['us']:.0f}", f"{small['floor_us']:.1f}",
            num(small["excess_us_per_op"], ".2f")]


def table(path):
    with open(path) as f:
        report = json.load(f)
    results = [r for r in report.get("results", []) if r.get("supported", True)]
    if not results:
        print(f"{path}: no supported result", file=sys.stderr)
        return None
    r = results[0]
    ceilings = r.get("verify_ceilings")
    rows = r.get("verify_roofline")
    if not ceilings or rows is None:
        print(f"{path}: no roofline block (not a --backend cuda report?)", file=sys.stderr)
        return None
    name = os.path.basename(path).removesuffix(".json")
    print(f"\n#### {name}: verify {r['verify_us']:.0f} us on {ceilings['device']} "
          f"(read {ceilings['read_gbps']:.0f} GB/s, bf16 {ceilings['bf16_tflops']:.0f} TFLOP/s)\n")
    print("| kind | us | MB | floor us | % of floor "
          "| ≥ 16 MB ops | ≥ 16 MB us | ≥ 16 MB floor us | ≥ 16 MB % of floor "
          "| < 16 MB ops | < 16 MB us | < 16 MB floor us | < 16 MB us over floor / op | bar |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    misses = []
    for row in sorted(rows, key=lambda x: -x["us"]):
        bar, miss = judge(row)
        if miss:
            misses.append(miss)
        cells = [row["kind"], f"{row['us']:.0f}", f"{row['bytes'] / 1e6:.1f}", f"{row['floor_us']:.0f}",
                 f"{row['pct_of_floor']:.1f}", *split_cells(row), bar]
        print("| " + " | ".join(cells) + " |")
    return name, misses


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    summary = []
    for path in sys.argv[1:]:
        t = table(path)
        if t is None:
            return 1
        summary.append(t)
    print()
    for name, misses in summary:
        print(f"| {name} | " + (", ".join(misses) if misses else "every op >= 16 MB at >= 60 % (per kind)") + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
