#!/usr/bin/env python3
"""The simulated batch x tree tables of docs/results.md ("Batch x tree, simulated").

Runs the section's documented commands (gen, then run --json) with the given binary and prints
the three markdown tables in the docs' column layout: Llama-3.1-8B TP1 on one GPU of the
8 x H200 preset, Kimi-K2 TP8 int4 on 8 x H200 (per row the run's best strategy: the highest tok/s
among the exact ones), and Qwen3-30B-A3B TP1 with the draft for free ("Where EAGLE-3 loses").
Speed-ups and plain tok/s are against the fastest plain decoding each run can deploy.

Usage: tools/batch-tree-tables.py EAGLESIM_EXE   (run from anywhere; paths are the repository's)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = [(3, 1, 4), (5, 4, 8), (6, 8, 32)]
BATCHES = [1, 8, 32, 64]
QWEN_BATCHES = [1, 4, 8, 32]
TOPOLOGY = "8x-h200-nvswitch"
KIMI_STRATEGIES = "nccl,oneshot,twoshot,fused,quant"
EXPERTS_NOTE = re.compile(r"touch up to (\d+) experts each against (\d+)")


def call(exe, args):
    done = subprocess.run([exe] + args, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{exe} {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")


def simulate(exe, tmp, gen_args, run_args):
    trace, report = os.path.join(tmp, "t.json"), os.path.join(tmp, "r.json")
    call(exe, ["gen"] + gen_args + ["--kv-len", "4096", "--engine-cycle", "-o", trace])
    call(exe, ["run", trace, "--topology", TOPOLOGY] + run_args + ["--json", report])
    with open(report) as f:
        return json.load(f)


def tree_flags(steps, topk, draft):
    return ["--speculative-num-steps", str(steps), "--speculative-eagle-topk", str(topk),
            "--speculative-num-draft-tokens", str(draft)]


def best_row(doc):
    # The run's own pick (exact strategies, not the free-allreduce reference; docs/report-format.md).
    return next(r for r in doc["results"] if r["strategy"] == doc["best"])


def plain_total(doc, r):
    # Speed-ups are against the fastest plain decoding the run can deploy (scenario.plain_baseline).
    base = doc["scenario"].get("plain_baseline_tokens_per_s")
    return base * r["batch"] if base else r["decode_total_tokens_per_s"]


def us(x):
    return f"{round(x):,}".replace(",", " ")


def tok(x):
    return us(x)


def tree_row(first, cfg, batch, doc, r, with_best):
    e = doc["scenario"]["acceptance"]["tokens_per_cycle"]
    cells = [f"({cfg[0]}, {cfg[1]}, {cfg[2]})" if first else "", str(batch)]
    if with_best:
        cells.append(r["strategy"])
    cells += [f"{e:.2f}", us(r["cycle_us"]), us(r["verify_us"]), us(r["decode_us"]),
              f"{r['tokens_per_s']:.1f}", tok(r["total_tokens_per_s"])]
    if with_best:
        cells.append(tok(r["tokens_per_s_per_gpu"]))
    cells += [tok(plain_total(doc, r)), f"**{r['speedup_vs_decode']:.2f}×**",
              f"{r['breakeven_accept_len']:.2f}"]
    return ("| " + " | ".join(cells) + " |").replace("|  |", "| |")


def tree_table(exe, tmp, model, draft, tp, extra_gen, strategies, with_best):
    head = ["(steps, topk, draft tokens)", "B"] + (["best"] if with_best else []) + \
        ["E", "cycle µs", "verify µs", "decode µs", "tok/s/req", "total tok/s"] + \
        (["tok/s/GPU"] if with_best else []) + \
        ["plain total tok/s", "vs plain decoding", "break-even E"]
    lines = ["| " + " | ".join(head) + " |",
             "|---|---:|" + ("---|" if with_best else "") + "---:|" * (len(head) - 2 - with_best)]
    for cfg in TREES:
        for i, batch in enumerate(BATCHES):
            doc = simulate(exe, tmp, ["--model", model, "--draft", draft, "--tp", str(tp),
                                      "--batch", str(batch)] + extra_gen + tree_flags(*cfg),
                           ["--strategy", strategies])
            lines.append(tree_row(i == 0, cfg, batch, doc, best_row(doc), with_best))
    return "\n".join(lines)


def qwen_table(exe, tmp):
    lines = ["| B | experts touched, verify | experts touched, decode | verify µs | decode µs "
             "| verify / decode | vs plain decoding | break-even E | break-even a |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for batch in QWEN_BATCHES:
        doc = simulate(exe, tmp, ["--model", "models/llm/qwen3-30b-a3b.json", "--tp", "1",
                                  "--batch", str(batch)] + tree_flags(3, 1, 4),
                       ["--strategy", "nccl", "--accept-rate", "0.7"])
        r = best_row(doc)
        notes = " ".join(doc["scenario"].get("notes", []) + r.get("notes", []))
        m = EXPERTS_NOTE.search(notes)
        verify_experts, decode_experts = (m.group(1), m.group(2)) if m else ("?", "?")
        lines.append("| " + " | ".join([
            str(batch), verify_experts, decode_experts, us(r["verify_us"]), us(r["decode_us"]),
            f"{r['verify_us'] / r['decode_us']:.2f}", f"{r['speedup_vs_decode']:.2f}×",
            f"{r['breakeven_accept_len']:.2f}", f"{r['breakeven_accept_rate']:.2f}"]) + " |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} EAGLESIM_EXE")
    exe = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        print("**Llama-3.1-8B, TP1, 1 × H200**\n")
        print(tree_table(exe, tmp, "models/llm/llama-3.1-8b.json",
                         "models/llm/llama-3.1-8b-eagle3.json", 1, [], "nccl", False))
        print("\n**Kimi-K2, TP8, 8 × H200**\n")
        print(tree_table(exe, tmp, "models/llm/kimi-k2-instruct.json",
                         "models/llm/kimi-k2-eagle3.json", 8, ["--weight-dtype", "int4"],
                         KIMI_STRATEGIES, True))
        print("\n**Qwen3-30B-A3B, TP1, 1 × H200, (3, 1, 4), a = 0.7**\n")
        print(qwen_table(exe, tmp))


if __name__ == "__main__":
    main()
