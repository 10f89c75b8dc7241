#!/usr/bin/env python3
"""Cuts a torch.profiler Chrome trace down to its last N ProfilerStep#N steps, so that a
recording can live in tests/data as a small fixture. What `eaglesim import kineto` reads is
kept: the header (deviceProperties, distributedInfo, record_shapes, ...), the chosen
ProfilerStep marks, the CPU ops and CUDA runtime/driver calls inside them, and the GPU
activities those calls launched (by correlation: a graph replay's kernels run after the
cudaGraphLaunch that returned, so their GPU time need not lie inside the step's CPU range).
Flow arrows, Python stack rows and the profiler's own overhead rows are dropped.

Usage: tools/trim_kineto.py IN.json[.gz] OUT.json[.gz] [--steps 2] [--skip-last 0]
"""
import argparse
import gzip
import json

CPU_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def save(doc, path):
    data = json.dumps(doc, separators=(",", ":"))
    if path.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(data.encode())
    else:
        with open(path, "w") as f:
            f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--steps", type=int, default=2, help="ProfilerStep#N steps to keep (the last ones)")
    ap.add_argument("--skip-last", type=int, default=0, help="steps to leave out at the end (one cut off by the profiler)")
    a = ap.parse_args()

    doc = load(a.input)
    events = doc["traceEvents"]
    marks = sorted((e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    if not marks:
        raise SystemExit(f"{a.input}: no ProfilerStep#N marks: record with torch.profiler.schedule / prof.step()")
    end = len(marks) - a.skip_last
    chosen = marks[max(0, end - a.steps):end]
    if not chosen:
        raise SystemExit(f"{a.input}: {len(marks)} ProfilerStep marks; --steps {a.steps} --skip-last {a.skip_last} keeps none")
    ranges = [(m["ts"], m["ts"] + m["dur"]) for m in chosen]

    def inside(e):
        return any(lo <= e["ts"] <= hi for lo, hi in ranges)

    kept, correlations = [], set()
    for e in events:
        cat = e.get("cat")
        if cat in CPU_CATS and inside(e):
            if cat == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#") and e not in chosen:
                continue
            kept.append(e)
            c = e.get("args", {}).get("correlation")
            if c is not None:
                correlations.add(c)
        elif e.get("ph") == "M":
            kept.append(e)  # process / thread names
    for e in events:
        if e.get("cat") in GPU_CATS and e.get("args", {}).get("correlation") in correlations:
            kept.append(e)
    doc["traceEvents"] = kept
    save(doc, a.output)
    gpu = sum(1 for e in kept if e.get("cat") in GPU_CATS)
    print(f"{a.output}: {len(chosen)} step(s) ({', '.join(m['name'] for m in chosen)}), {len(kept)} events, {gpu} GPU activities")


if __name__ == "__main__":
    main()
