#!/usr/bin/env python3
"""Bins an nvidia-smi CSV log (timestamp, clocks.sm, clocks.mem, power.draw, reasons; -lms 20) into
250 ms bins relative to T0 (seconds since the epoch, as tools/placement_probe.py --timeline prints).
Usage: tools/smi_bins.py smi.csv T0"""
import sys, collections, datetime
bins = collections.defaultdict(list)
t0 = float(sys.argv[2])
for l in open(sys.argv[1]):
    r = [x.strip() for x in l.split(",")]
    try:
        ts = datetime.datetime.strptime(r[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except Exception:
        continue
    b = (ts - t0) // 0.25 * 0.25
    bins[b].append(r[1:])
out = []
for b, rs in sorted(bins.items()):
    sm = sorted(float(x[0].split()[0]) for x in rs); mem = sorted(float(x[1].split()[0]) for x in rs)
    w = sorted(float(x[2].split()[0]) for x in rs)
    out.append(f"{b:.2f}s:{sm[len(sm)//2]:.0f}/{mem[len(mem)//2]:.0f}/{w[len(w)//2]:.0f}W/{collections.Counter(x[3] for x in rs).most_common(1)[0][0][-4:]}")
print("smi sm/mem/W/reasons: " + " ".join(out))
