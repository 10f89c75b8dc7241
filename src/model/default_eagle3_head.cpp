#include "model/default_eagle3_head.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace eaglesim {

namespace {
// The draft vocabulary of the public EAGLE-3 heads (Llama-3.1, Qwen3, Kimi-K2 heads alike).
constexpr std::int64_t kDraftVocab = 32000;
}  // namespace

ModelConfig default_eagle3_head(const ModelConfig& t) {
  const std::int64_t head_dim = t.is_mla() ? (t.v_head_dim > 0 ? t.v_head_dim : 128) : t.head_dim;
  const std::int64_t kv_heads = t.is_mla() ? t.heads : t.kv_heads;
  // A target whose config has no dense MLP width (some MoE configs): the routed experts a token uses.
  const std::int64_t intermediate =
      t.intermediate > 0 ? t.intermediate : std::max<std::int64_t>(t.moe_intermediate * t.experts_per_token, t.hidden);
  const nlohmann::json doc = {
      {"architectures", {"LlamaForCausalLMEagle3"}},
      {"model_type", "llama"},
      {"hidden_size", t.hidden},
      {"intermediate_size", intermediate},
      {"num_attention_heads", t.heads},
      {"num_key_value_heads", kv_heads},
      {"head_dim", head_dim},
      {"num_hidden_layers", 1},
      {"vocab_size", t.vocab},
      {"draft_vocab_size", kDraftVocab},
      {"tie_word_embeddings", false},
      {"torch_dtype", "bfloat16"},
      {"hidden_act", "silu"},
      {"rms_norm_eps", 1e-6},
  };
  return parse_model_config(doc, "(default EAGLE-3 head derived from " + t.file + ")", t.name + "-eagle3-default");
}

std::string describe_default_head(const ModelConfig& target, const ModelConfig& head) {
  return fmt::format(
      "{}: no EAGLE-3 head given; priced with a default head derived from its dimensions, as public heads are "
      "built (one Llama layer: hidden {}, {} heads / {} KV of {}, MLP {}, draft vocabulary {}); pass --draft for "
      "the real one",
      target.name, head.hidden, head.heads, head.kv_heads, head.head_dim, head.intermediate, head.draft_vocab);
}

}  // namespace eaglesim
