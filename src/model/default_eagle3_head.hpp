#pragma once
// The EAGLE-3 head eaglesim prices when a target has no published one: built as the public heads
// are (SpecForge's draft configs, the EAGLE-3 authors' and AngelSlim's heads): one Llama decoder
// layer at the target's hidden size, attention heads, KV heads and head size (an MLA target's
// value head size, as SpecForge's Kimi-K2 head), the target's dense MLP width, the fc layer from
// three hidden states, the target's vocabulary for the embedding and a 32,000-token draft
// vocabulary for its lm_head.
#include "model/model_config.hpp"

namespace eaglesim {

// Named "<target>-eagle3-default"; its file says where it came from.
ModelConfig default_eagle3_head(const ModelConfig& target);

// One line for outputs: "qwen3-4b: no EAGLE-3 head given; priced with a default head derived from
// its dimensions (one Llama layer: hidden 2560, 32 heads / 8 KV of 128, MLP 9728, draft vocabulary
// 32000)".
std::string describe_default_head(const ModelConfig& target, const ModelConfig& head);

}  // namespace eaglesim
