#!/usr/bin/env python3
"""The evidence that kernel inventories plus op models reproduce a real step: the PyTorch reference
step recorded on a GPU (tools/record-torch-steps.sh, cases in tools/torch-steps.tsv) against the
generated `gen --engine torch` trace priced by models fitted to OTHER recordings.

For every recorded case: `eaglesim gen --engine torch` for its model and shape, then
`eaglesim import kineto REC --like GEN` (the recording's kernels take the generated ops' shapes;
a recording that is not the inventory fails here). The cases of the FIT models are fitted with
`eaglesim calibrate --from-recordings` on the base preset; every case of the HELD-OUT models is
then priced (`eaglesim run --backend sim`) on the fitted topology and compared with its measured
graph-replay median (NAME_graph_times.json). The split is by model, so no held-out shape, width
or head layout was seen by the fit.

usage: tools/torch_steps_check.py REC_DIR [--base PRESET] [--fit-models a,b,c] [--markdown] [--require-within N]
(--base: default the preset of the recording's GPU, 8x-h100-nvswitch or 2x-h200-nvlink)"""
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIT_MODELS = "llama-3.1-8b,qwen3-8b,llama-3.2-1b"


def run(cmd):
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def cases():
    for line in open(os.path.join(ROOT, "tools", "torch-steps.tsv")):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        yield dict(name=f[0], model=f[1], batch=f[10], tokens=f[11], kv=f[12])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("--eaglesim", default=os.path.join(ROOT, "build", "eaglesim"))
    ap.add_argument("--base", default="")
    ap.add_argument("--fit-models", default=FIT_MODELS)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--require-within", type=int, default=0,
                    help="exit 1 when fewer held-out recordings than this are within 5 %%")
    a = ap.parse_args()
    fit_models = set(a.fit_models.split(","))
    work = tempfile.mkdtemp(prefix="eaglesim-torch-steps-")
    rows = []
    for c in cases():
        rec = os.path.join(a.rec, f"{c['name']}_graph_rank0.json.gz")
        times = os.path.join(a.rec, f"{c['name']}_graph_times.json")
        if not os.path.exists(rec) or not os.path.exists(times):
            continue
        gen = os.path.join(work, f"{c['name']}_gen.json")
        imp = os.path.join(work, f"{c['name']}_imported.json")
        run([a.eaglesim, "gen", "--model", f"models/llm/{c['model']}.json", "--tp", "1", "--engine", "torch",
             "--tokens", c["tokens"], "--batch", c["batch"], "--kv-len", c["kv"], "-o", gen])
        run([a.eaglesim, "import", "kineto", rec, "--like", gen, "-q", "-o", imp])
        t = json.load(open(times))
        rows.append(dict(c, gen=gen, imp=imp, measured=t["graph_step_us_median"], gpu=t["gpu"],
                         set="fit" if c["model"] in fit_models else "heldout"))
    if not rows:
        sys.exit(f"{a.rec}: no recordings of tools/torch-steps.tsv's cases")
    fit = [r["imp"] for r in rows if r["set"] == "fit"]
    base = a.base or ("2x-h200-nvlink" if "H200" in rows[0]["gpu"] else "8x-h100-nvswitch")
    topo = os.path.join(work, "fitted.json")
    print(run([a.eaglesim, "calibrate", "--from-recordings", ",".join(fit), "--base", base, "-o", topo]), end="")
    for r in rows:
        out = os.path.join(work, f"{r['name']}_run.json")
        run([a.eaglesim, "run", r["gen"], "--backend", "sim", "--topology", topo, "--strategy", "nccl", "--json", out])
        r["predicted"] = json.load(open(out))["results"][0]["verify_us"]
        r["err"] = r["predicted"] / r["measured"] - 1
    cols = ["case", "set", "model", "batch", "tokens", "kv", "measured us", "predicted us", "error"]
    lines = [[r["name"], r["set"], r["model"], r["batch"], r["tokens"], r["kv"], f"{r['measured']:.0f}",
              f"{r['predicted']:.0f}", f"{100 * r['err']:+.1f} %"] for r in rows]
    if a.markdown:
        print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        w = [max(len(x) for x in col) for col in zip(cols, *lines)]
        for l in [cols] + lines:
            print("  ".join(x.ljust(n) for x, n in zip(l, w)))
    held = [r for r in rows if r["set"] == "heldout"]
    within = sum(abs(r["err"]) <= 0.05 for r in held)
    worst = max((abs(r["err"]) for r in held), default=0)
    print(f"\n{rows[0]['gpu']}: held-out recordings within 5 %: {within} of {len(held)} (worst {100 * worst:.1f} %); "
          f"fit on {len(fit)} recordings of {', '.join(sorted(fit_models))}")
    if within < a.require_within:
        sys.exit(f"held-out recordings within 5 %: {within}, fewer than --require-within {a.require_within}")


if __name__ == "__main__":
    main()
