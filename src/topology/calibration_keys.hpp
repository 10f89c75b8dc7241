#pragma once
// Keys of the attention calibration tables: an attention kernel's cost depends on its head
// layout, so measured µs-by-kv_len tables are kept per layout.
//   gqa: "gqa:HEADS:KV_HEADS:HEAD_DIM"      mla: "mla:HEADS:KV_LORA_RANK:ROPE_DIM"
#include <string>

#include "trace/op.hpp"

namespace eaglesim {

std::string attention_calibration_key(const Op& op);
bool valid_attention_key(const std::string& key);

}  // namespace eaglesim
