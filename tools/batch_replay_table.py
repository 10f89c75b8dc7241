#!/usr/bin/env python3
"""The table of tools/gpu-batch-replay.sh: per configuration (batch, num_steps, eagle_topk,
num_draft_tokens) the CUDA replay's and the simulator's verify, draft-extend, draft and decode
step times, the per-cycle ops of the verify step (tree building, sampling, host sync), the cycle,
tok/s and the speed-up over plain decoding at the same batch.

Reads the rows "NAME B STEPS TOPK DRAFT STATUS" on stdin and OUT/replay-NAME.json,
OUT/sim-NAME.json; writes markdown on stdout and OUT/batch-replay.json.
Usage: batch_replay_table.py OUT SIM_TOPOLOGY KV
"""
import json
import os
import sys

CYCLE_KINDS = ("tree_build", "sampling", "host_sync")


def summary(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        report = json.load(f)
    results = [r for r in report["results"] if r.get("supported", True)]
    if not results:
        return None
    r = results[0]
    kinds = r.get("verify_kind_us") or {}
    return {
        "verify_us": r["verify_us"],
        "draft_extend_step_us": r.get("draft_extend_step_us"),
        "draft_step_us": r.get("draft_step_us"),
        "draft_us": r.get("draft_us"),
        "decode_us": r.get("decode_us"),
        "cycle_us": r.get("cycle_us"),
        "tokens_per_cycle": r.get("tokens_per_cycle"),
        "tokens_per_s": r.get("tokens_per_s"),
        "total_tokens_per_s": r.get("total_tokens_per_s"),
        "speedup_vs_decode": r.get("speedup_vs_decode"),
        "verify_cycle_ops_us": {k: kinds.get(k, 0.0) for k in CYCLE_KINDS},
        "verify_kind_us": kinds,
    }


def cell(v, fmt="{:.1f}"):
    return "–" if v is None else fmt.format(v)


def main() -> int:
    out, topology, kv = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = []
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 6:
            continue
        name, b, steps, topk, draft, status = parts
        rows.append({
            "name": name, "batch": int(b), "num_steps": int(steps), "eagle_topk": int(topk),
            "num_draft_tokens": int(draft), "kv_len": int(kv), "status": status,
            "cuda": summary(os.path.join(out, f"replay-{name}.json")),
            "sim": summary(os.path.join(out, f"sim-{name}.json")),
        })
    with open(os.path.join(out, "batch-replay.json"), "w") as f:
        json.dump({"model": "llama-3.1-8b", "tp": 1, "sim_topology": topology, "rows": rows}, f, indent=1)
    print(f"Llama-3.1-8B TP1 + EAGLE-3 head, KV {kv}, gen --engine-cycle; cuda = `run --backend cuda --ranks 1`, "
          f"sim = `run --backend sim --topology {topology}` (µs; tok/s and the speed-up over plain "
          f"decoding at the same batch at the tree model's default acceptance)\n")
    print("| B | steps,topk,draft | backend | verify | draft-extend | draft fwd | decode | tree_build | sampling "
          "| host_sync | cycle | tok/s per request | tok/s in all | vs decode |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cfg = f"{r['num_steps']},{r['eagle_topk']},{r['num_draft_tokens']}"
        for backend in ("cuda", "sim"):
            s = r[backend]
            if s is None:
                status = r['status'] if r['status'] != 'ok' else 'no report'
                print(f"| {r['batch']} | {cfg} | {backend} | {status} |" + " |" * 10)
                continue
            ops = s["verify_cycle_ops_us"]
            print(f"| {r['batch']} | {cfg} | {backend} | {cell(s['verify_us'])} | {cell(s['draft_extend_step_us'])} "
                  f"| {cell(s['draft_step_us'])} | {cell(s['decode_us'])} | {cell(ops['tree_build'])} "
                  f"| {cell(ops['sampling'])} | {cell(ops['host_sync'])} | {cell(s['cycle_us'])} "
                  f"| {cell(s['tokens_per_s'])} | {cell(s['total_tokens_per_s'])} | {cell(s['speedup_vs_decode'], '{:.2f}x')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
