#!/usr/bin/env python3
"""Prices every public measurement of validation/published.tsv with eaglesim and prints the table of
docs/validation.md: predicted plain-decoding tok/s, EAGLE-3 tok/s and speedup beside the published
ones, the errors, and the must-show criteria per set (fit / heldout).

usage: tools/validate.py [--eaglesim build/eaglesim] [--table validation/published.tsv] [--work DIR] [--markdown]

Each row becomes one `eaglesim gen --engine-cycle` trace (the row's model, TP, batch, KV length,
speculative settings and draft head; plain-only rows use 3,1,4 only to have the decode step) and one
`eaglesim run --backend sim` on the row's topology preset with the engine's allreduce dispatch
(sglang or vllm; nccl for engines without one) at the published accept length. Plain decoding is the
run's decode step at the same batch."""
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE_STRATEGY = {"sglang": "sglang", "vllm": "vllm"}  # others: plain NCCL


def read_rows(path):
    header, rows = None, []
    for l in open(path):
        if l.startswith("# id\t"):
            header = l[2:].rstrip("\n").split("\t")
        elif l.strip() and not l.startswith("#"):
            if not header:
                sys.exit(f"{path}: a row before the '# id<TAB>...' header line")
            cells = l.rstrip("\n").split("\t")
            if len(cells) != len(header):
                sys.exit(f"{path}: row {len(rows) + 1}: {len(cells)} cells, expected {len(header)}")
            rows.append(dict(zip(header, cells)))
    if not header:
        sys.exit(f"{path}: no '# id<TAB>...' header line")
    return rows


def num(s):
    return float(s) if s.strip() else None


def run(cmd):
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def predict(exe, work, r, engine_option=""):
    spec = r["spec"] if r["spec"] != "none" else "3,1,4"
    steps, topk, ndt = spec.split(",")
    trace = os.path.join(work, f"{r['id']}.json")
    gen = [exe, "gen", "--model", f"models/llm/{r['model']}.json", "--tp", r["tp"], "--batch", r["batch"],
           "--kv-len", r["kv"], "--weight-dtype", r["weights"], "--speculative-num-steps", steps,
           "--speculative-eagle-topk", topk, "--speculative-num-draft-tokens", ndt, "--engine-cycle", "--engine", r["engine"], "-o", trace]
    if r["draft"]:
        gen += ["--draft", f"models/llm/{r['draft']}.json"]
    run(gen)
    report = os.path.join(work, f"{r['id']}_run.json")
    cmd = [exe, "run", trace, "--topology", r["topology"], "--strategy", ENGINE_STRATEGY.get(r["engine"], "nccl"),
           "--json", report]
    if r["accept_len"]:
        cmd += ["--accept-len", r["accept_len"]]
    if engine_option:
        cmd += ["--engine-option", engine_option]
    run(cmd)
    res = json.load(open(report))["results"][0]
    total = r["metric"] == "total"
    plain = res["decode_total_tokens_per_s"] if total else res["decode_tokens_per_s"]
    eagle = res["total_tokens_per_s"] if total else res["tokens_per_s"]
    return plain, eagle


def err(pred, pub):
    return None if pred is None or pub is None else (pred - pub) / pub


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eaglesim", default=os.path.join(ROOT, "build", "eaglesim"))
    ap.add_argument("--table", default=os.path.join(ROOT, "validation", "published.tsv"))
    ap.add_argument("--work", default=None)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--engine-option", default="", help="passed to every eaglesim run (engine profile overrides)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="eaglesim-validate-")
    os.makedirs(work, exist_ok=True)
    rows = read_rows(a.table)
    out = []
    for r in rows:
        plain, eagle = predict(a.eaglesim, work, r, a.engine_option)
        pub_plain, pub_eagle = num(r["plain_tok_s"]), num(r["eagle_tok_s"])
        pub_speedup = num(r["speedup"]) or (pub_eagle / pub_plain if pub_eagle and pub_plain else None)
        has_spec = r["spec"] != "none" and r["accept_len"] != ""
        o = dict(r, pred_plain=plain, pred_eagle=eagle if has_spec else None,
                 pred_speedup=eagle / plain if has_spec else None, pub_speedup=pub_speedup if has_spec else None)
        o["err_plain"] = err(plain, pub_plain)
        o["err_speedup"] = err(o["pred_speedup"], o["pub_speedup"])
        out.append(o)
    print_table(out, a.markdown)
    print_summary(out, a.markdown)


def fmt(x, f="{:.1f}"):
    return "" if x is None else f.format(x)


def pct(x):
    return "" if x is None else f"{x * 100:+.0f} %"


def print_table(out, md):
    cols = ["id", "set", "source", "engine", "gpu", "tp", "model", "weights", "batch", "spec", "E",
            "plain pub", "plain eaglesim", "err", "speedup pub", "speedup eaglesim", "err"]
    lines = []
    for o in out:
        lines.append([o["id"], o["set"], o["source"], o["engine"], o["gpu"], o["tp"], o["model"], o["weights"],
                      o["batch"] + ("" if o["metric"] == "req" else " (total)"), o["spec"], o["accept_len"],
                      o["plain_tok_s"], fmt(o["pred_plain"]), pct(o["err_plain"]),
                      fmt(o["pub_speedup"], "{:.2f}x"), fmt(o["pred_speedup"], "{:.2f}x"), pct(o["err_speedup"])])
    if md:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        w = [max(len(c), *(len(l[i]) for l in lines)) for i, c in enumerate(cols)]
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(cols)))
        for l in lines:
            print("  ".join(v.ljust(w[i]) for i, v in enumerate(l)))
    print()


# The engine-fidelity criteria read batches up to this; serving benchmarks above it (prefill and
# churn at high concurrency: the serving simulation's) are shown and summarised apart.
MAX_DECODE_BATCH = 4


def print_summary(out, md):
    small = [o for o in out if int(o["batch"]) <= MAX_DECODE_BATCH]
    serving = [o for o in out if int(o["batch"]) > MAX_DECODE_BATCH]
    for s, pool in (("fit", small), ("heldout", small), ("serving, concurrency > 4", serving)):
        rows = [o for o in pool if o["set"] == s] if not s.startswith("serving") else pool
        if not rows:
            continue
        # One plain case per published plain figure (several speculative rows share one baseline).
        plain = {}
        for o in rows:
            if o["err_plain"] is not None:
                plain[(o["source"], o["model"], o["weights"], o["engine"], o["batch"], o["plain_tok_s"])] = o["err_plain"]
        sp = [o for o in rows if o["err_speedup"] is not None]
        sign = [o for o in sp if abs(o["pub_speedup"] - 1) > 0.05]
        sign_ok = [o for o in sign if (o["pub_speedup"] > 1) == (o["pred_speedup"] > 1)]
        within = lambda xs: sum(1 for x in xs if abs(x) <= 0.15)
        med = lambda xs: sorted(abs(x) for x in xs)[len(xs) // 2] if xs else 0
        pe = list(plain.values())
        se = [o["err_speedup"] for o in sp]
        bullet = "- " if md else ""
        print(f"{bullet}{s}: plain tok/s within 15 % in {within(pe)} of {len(pe)} (median |error| {med(pe) * 100:.0f} %); "
              f"speedup within 15 % in {within(se)} of {len(se)} (median {med(se) * 100:.0f} %); faster/slower sign right "
              f"in {len(sign_ok)} of {len(sign)} (published speedup off 1 by > 5 %)")


if __name__ == "__main__":
    main()
