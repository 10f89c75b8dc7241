#!/usr/bin/env python3
"""Diagnostic (issue #7): does a weight-streaming GEMM's speed depend on where its weights sit in
GPU memory? Times y = x @ W^T (x: 4 rows, bf16) with W at every region of pools of several sizes
and in separately allocated tensors, and prints per-region microseconds.

Usage: python3 tools/placement_probe.py [--n 28672 --k 8192] [--pools 8,16,32,80]
       python3 tools/placement_probe.py --after-free 0,8,35,70   (GEMM speed right after large frees)
       python3 tools/placement_probe.py --timeline 6             (speed over time; pair it with
           nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active
           --format=csv,noheader -lms 20 > smi.csv, then tools/smi_bins.py smi.csv T0)"""
import argparse
import statistics

import torch


def time_region(w, x, reps=20):
    for _ in range(3):
        torch.nn.functional.linear(x, w)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        torch.nn.functional.linear(x, w)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / reps


def report(label, us):
    q = sorted(us)
    print(f"{label}: n={len(us)} min {q[0]:.1f} p50 {statistics.median(q):.1f} max {q[-1]:.1f} us | "
          + " ".join(f"{u:.0f}" for u in us), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=28672)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--pools", default="8,16,32,80")
    ap.add_argument("--timeline", type=float, default=0,
                    help="instead: time one region for this many seconds, continuous then bursty, with timestamps")
    ap.add_argument("--after-free", default="",
                    help="instead: for each GiB size, allocate+fill+free that much, then time one region for 3 s")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    x = torch.randn(4, a.k, device=dev, dtype=torch.bfloat16)
    elems = a.n * a.k
    nbytes = elems * 2
    print(f"W {a.n} x {a.k} bf16 = {nbytes / 2**20:.0f} MiB; free {torch.cuda.mem_get_info()[0] / 2**30:.1f} GiB", flush=True)
    if a.after_free:
        import time
        w = torch.empty(elems, device=dev, dtype=torch.bfloat16)
        w.normal_()
        view = w.view(a.n, a.k)
        for gib in [float(v) for v in a.after_free.split(",")]:
            if gib > 0:
                big = torch.empty(int(gib * 2**30), device=dev, dtype=torch.uint8)
                big.fill_(1)
                torch.cuda.synchronize()
                del big
                torch.cuda.empty_cache()
            t0 = time.time()
            samples = []
            while time.time() - t0 < 3.0:
                samples.append((time.time() - t0, time_region(view, x)))
            bins = {}
            for t, us in samples:
                bins.setdefault(t // 0.1 * 0.1, []).append(us)
            print(f"after freeing {gib:g} GiB: " + " ".join(f"{b:.1f}s:{statistics.median(v):.0f}" for b, v in sorted(bins.items())), flush=True)
        return
    if a.timeline > 0:
        import time
        w = torch.empty(2 * elems, device=dev, dtype=torch.bfloat16)
        w.normal_()
        views = [w[:elems].view(a.n, a.k), w[elems:].view(a.n, a.k)]
        t0 = time.time()
        for mode, idle in (("continuous", 0.0), ("bursty", 0.05), ("continuous", 0.0)):
            end = time.time() + a.timeline
            bins = {}
            calls = 0
            while time.time() < end:
                calls += 1
                us = time_region(views[calls % 2], x)
                b = round(time.time() - t0, 1) // 0.25 * 0.25
                bins.setdefault(b, []).append(us)
                if idle:
                    time.sleep(idle)
            print(f"{mode} (t0 {t0:.3f}): " + " ".join(f"{b:.2f}s:{statistics.median(v):.0f}" for b, v in sorted(bins.items())), flush=True)
        return
    for regions in [int(v) for v in a.pools.split(",")]:
        pool = torch.empty(regions * elems, device=dev, dtype=torch.bfloat16)
        pool.normal_()
        us = [time_region(pool[i * elems:(i + 1) * elems].view(a.n, a.k), x) for i in range(regions)]
        report(f"one pool of {regions} regions ({regions * nbytes / 2**30:.1f} GiB) addr {pool.data_ptr():#x}", us)
        del pool
        torch.cuda.empty_cache()
    sep = []
    for _ in range(16):
        t = torch.empty(elems, device=dev, dtype=torch.bfloat16)
        t.normal_()
        sep.append(t)
    report("16 separate tensors", [time_region(t.view(a.n, a.k), x) for t in sep])
    report("16 separate tensors, again", [time_region(t.view(a.n, a.k), x) for t in sep])


if __name__ == "__main__":
    main()
