#pragma once
// Keys of calibration tables. Attention: an attention kernel's cost depends on its head
// layout, so measured µs-by-kv_len tables are kept per layout.
//   gqa: "gqa:HEADS:KV_HEADS:HEAD_DIM"      mla: "mla:HEADS:KV_LORA_RANK:ROPE_DIM"
// A table measured at one query-token count adds ":qQ_TOKENS" (e.g. "gqa:16:4:128:q4"); the
// simulator looks that key up first and falls back to the key without q (any q_tokens).
#include <string>

#include "trace/op.hpp"

namespace eaglesim {

std::string attention_calibration_key(const Op& op);
std::string attention_calibration_key_q(const Op& op);  // the key above + ":q" + op.q_tokens
bool valid_attention_key(const std::string& key);

// Key of the kernel-transition table: "FROM>TO" with op kind names, e.g. "rmsnorm>gemm".
std::string transition_key(OpKind from, OpKind to);
// Whether a key is "FROM>TO" with two compute op kinds (not allreduce, not other).
bool valid_transition_key(const std::string& key);

}  // namespace eaglesim
