#!/usr/bin/env python3
"""Runs `eaglesim serve` on every published serving benchmark of validation/serving.tsv and prints
predicted against published output tok/s (and mean TPOT where published), the speed-up of each
plain/EAGLE-3 pair, and the must-show criteria of docs/validation.md ("Serving"): output tok/s
within 20 % on >= 75 % of the held-out rows, and the sign of speculation's gain right wherever the
published speed-up differs from 1 by more than 5 %.

usage: tools/validate_serving.py [--eaglesim build/eaglesim] [--table validation/serving.tsv] [--markdown]"""
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_rows(path):
    header, rows = None, []
    for line in open(path):
        if line.startswith("# id\t"):
            header = line[2:].rstrip("\n").split("\t")
        elif line.strip() and not line.startswith("#"):
            cells = line.rstrip("\n").split("\t")
            if not header or len(cells) != len(header):
                sys.exit(f"{path}: malformed row {len(rows) + 1}")
            rows.append(dict(zip(header, cells)))
    return rows


def serve(exe, r, work):
    out = os.path.join(work, r["id"] + ".json")
    cmd = [exe, "serve", "--model", r["model"], "--topology", r["topology"], "--tp", r["tp"], "--engine", r["engine"],
           "--weight-dtype", r["weights"], "--random-input-len", r["input_len"], "--random-output-len", r["output_len"],
           "--random-range-ratio", r["range_ratio"], "--num-prompts", r["num_prompts"], "--request-rate",
           r["request_rate"], "--max-concurrency", r["max_concurrency"], "--json", out]
    if r["spec"] != "none":
        parts = r["spec"].split(",")
        if len(parts) == 3:
            cmd += ["--speculative-num-steps", parts[0], "--speculative-eagle-topk", parts[1],
                    "--speculative-num-draft-tokens", parts[2]]
        else:
            cmd += ["--num-speculative-tokens", parts[0]]
        cmd += ["--draft", r["draft"]]
        cmd += ["--accept-len", r["accept_len"]] if r["accept_len"] else ["--accept-rate", "0.7"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{r['id']}: {' '.join(cmd)}\n{p.stderr}")
    return json.load(open(out))["runs"][0]["cases"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eaglesim", default=os.path.join(ROOT, "build", "eaglesim"))
    ap.add_argument("--table", default=os.path.join(ROOT, "validation", "serving.tsv"))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = read_rows(a.table)
    by_id = {r["id"]: r for r in rows}
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for r in rows:
            cases = serve(a.eaglesim, r, work)
            m = cases[-1]["metrics"]
            results[r["id"]] = {"out": m["output_throughput"], "tpot": m["mean_tpot_ms"],
                                "plain": cases[0]["metrics"]["output_throughput"]}
    sep = "|" if a.markdown else " "
    head = ["id", "set", "source", "engine", "model", "TP", "conc/rate", "in/out", "spec", "E", "pub tok/s", "pred", "err",
            "pub TPOT", "pred TPOT"]
    lines = [head]
    within, count = {"fit": 0, "heldout": 0}, {"fit": 0, "heldout": 0}
    for r in rows:
        res = results[r["id"]]
        pub = float(r["pub_output_tok_s"])
        err = res["out"] / pub - 1
        count[r["set"]] += 1
        within[r["set"]] += abs(err) <= 0.20
        load = f"c{r['max_concurrency']}" if r["max_concurrency"] != "0" else f"{r['request_rate']}/s"
        tpot = r["pub_mean_tpot_ms"]
        lines.append([r["id"], r["set"], r["source"], r["engine"], r["model"], r["tp"], load, f"{r['input_len']}/{r['output_len']}",
                      r["spec"], r["accept_len"] or ("0.7*" if r["spec"] != "none" else ""), f"{pub:.0f}",
                      f"{res['out']:.0f}", f"{err * 100:+.0f}%", tpot or "", f"{res['tpot']:.1f}" if tpot else ""])
    pairs, signs, sign_right = [], 0, 0
    for r in rows:
        if not r["pair"]:
            continue
        plain = by_id[r["pair"]]
        pub = float(r["pub_output_tok_s"]) / float(plain["pub_output_tok_s"])
        pred = results[r["id"]]["out"] / results[r["id"]]["plain"]
        decisive = abs(pub - 1) > 0.05
        right = (pub > 1) == (pred > 1)
        signs += decisive
        sign_right += decisive and right
        pairs.append([r["id"], plain["id"], r["set"], r["source"], f"{pub:.2f}", f"{pred:.2f}",
                      ("right" if right else "wrong") if decisive else "within 5 %", r["accept_source"] or "published"])
    def table(rows_):
        if a.markdown:
            out = ["| " + " | ".join(rows_[0]) + " |", "|" + "---|" * len(rows_[0])]
            out += ["| " + " | ".join(x) + " |" for x in rows_[1:]]
            return "\n".join(out)
        widths = [max(len(x[i]) for x in rows_) for i in range(len(rows_[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(x, widths)) for x in rows_)
    print(table(lines))
    print()
    print(table([["spec", "plain", "set", "source", "pub speedup", "pred", "sign", "acceptance"]] + pairs))
    print()
    for s in ("heldout", "fit"):
        if count[s]:
            print(f"{s}: output tok/s within 20 % in {within[s]} of {count[s]} ({within[s] / count[s] * 100:.0f} %"
                  + ("; must-show >= 75 %)" if s == "heldout" else ")"))
    print(f"speed-up sign right in {sign_right} of {signs} pairs where the published speed-up differs from 1 by > 5 %")
    sys.exit(0)


if __name__ == "__main__":
    main()
