#!/usr/bin/env python3
"""Writes the decoder-layer-only verify trace of Llama-3.1-8B (32 layers, hidden 4096, 32/8
heads of 128, intermediate 14336; config: https://huggingface.co/meta-llama/Llama-3.1-8B,
config.json) at a given TP, 4 tokens, kv_len 2048: exactly the ops that
shared/traces/kineto's PyTorch recording ran per layer (no embedding, final norm or lm_head),
so that `eaglesim run --backend cuda` can be compared with tools/torch_reference_step.py.

Usage: tools/llama8b_decoder_trace.py --tp 2 --out /tmp/llama8b_layers_tp2.json
"""
import argparse
import json

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, INTER = 4096, 32, 32, 8, 128, 14336


def build(tp, tokens, kv_len):
    h, kvh, inter = HEADS // tp, KV_HEADS // tp, INTER // tp
    ops = []
    for l in range(LAYERS):
        ops += [
            {"kind": "rmsnorm", "name": "input_layernorm", "layer": l, "tokens": tokens, "hidden": HIDDEN},
            {"kind": "gemm", "name": "qkv_proj", "layer": l, "m": tokens, "n": (h + 2 * kvh) * HEAD_DIM, "k": HIDDEN, "dtype": "bf16"},
            {"kind": "attention", "name": "attn", "layer": l, "q_tokens": tokens, "kv_len": kv_len, "heads": h,
             "kv_heads": kvh, "head_dim": HEAD_DIM, "variant": "gqa"},
            {"kind": "gemm", "name": "o_proj", "layer": l, "m": tokens, "n": HIDDEN, "k": h * HEAD_DIM, "dtype": "bf16"},
        ]
        if tp > 1:
            ops.append({"kind": "allreduce", "name": "attn_allreduce", "layer": l, "bytes": tokens * HIDDEN * 2, "dtype": "bf16", "site": "attn_out"})
        ops += [
            {"kind": "residual_add", "name": "attn_residual", "layer": l, "tokens": tokens, "hidden": HIDDEN},
            {"kind": "rmsnorm", "name": "post_attention_layernorm", "layer": l, "tokens": tokens, "hidden": HIDDEN},
            {"kind": "gemm", "name": "gate_up_proj", "layer": l, "m": tokens, "n": 2 * inter, "k": HIDDEN, "dtype": "bf16"},
            {"kind": "act", "name": "act", "layer": l, "tokens": tokens, "hidden": inter},
            {"kind": "gemm", "name": "down_proj", "layer": l, "m": tokens, "n": HIDDEN, "k": inter, "dtype": "bf16"},
        ]
        if tp > 1:
            ops.append({"kind": "allreduce", "name": "mlp_allreduce", "layer": l, "bytes": tokens * HIDDEN * 2, "dtype": "bf16", "site": "mlp_out"})
        ops.append({"kind": "residual_add", "name": "mlp_residual", "layer": l, "tokens": tokens, "hidden": HIDDEN})
    return {
        "format": "eaglesim-trace", "version": 1,
        "meta": {"model": "llama-3.1-8b-decoder-layers", "tp": tp, "tokens": tokens, "dtype": "bf16",
                 "source": "generated", "kv_len": kv_len,
                 "notes": "decoder layers only, as in shared/traces/kineto (tools/llama8b_decoder_trace.py)"},
        "steps": [{"name": "verify", "ops": ops}],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=4)
    ap.add_argument("--kv-len", type=int, default=2048)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(a.out, "w") as f:
        json.dump(build(a.tp, a.tokens, a.kv_len), f, indent=1)


if __name__ == "__main__":
    main()
