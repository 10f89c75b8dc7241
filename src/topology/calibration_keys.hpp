#pragma once
// Keys of the attention calibration tables: an attention kernel's cost depends on its head
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

}  // namespace eaglesim
