#pragma once
// A model's shape as the trace generator and the sweep need it, read from a Hugging Face
// config.json. Only the fields that decide GEMM, attention and allreduce shapes are read; the
// many other keys of an HF config (rope scaling, token ids, ...) and keys starting with "_"
// (our provenance notes such as "_source") are ignored.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "model/checkpoint_quantization.hpp"

namespace eaglesim {

// Decoder-layer families the generator knows how to lay out.
enum class Architecture {
  llama,         // dense GQA (model_type llama)
  qwen3,         // dense GQA with per-head q/k RMSNorm (qwen3)
  qwen3_moe,     // GQA + routed experts, no shared expert (qwen3_moe)
  glm4_moe,      // GQA + first dense layers + routed and shared experts (glm4_moe)
  deepseek_v3,   // MLA + first dense layers + routed and shared experts (deepseek_v3, kimi_k2)
  mixtral,       // GQA + routed experts in every layer, each expert intermediate_size wide (mixtral)
  eagle3_draft,  // EAGLE-3 draft head: fc(3H -> H) + one Llama decoder layer (LlamaForCausalLMEagle3)
};
const char* to_string(Architecture a);

// model_type values accepted in config.json, in the order the error message lists them.
const std::vector<std::string>& supported_model_types();

struct ModelConfig {
  std::string name;        // file name without directory and .json, e.g. "kimi-k2-instruct"
  std::string file;        // path it was read from (for messages)
  std::string model_type;  // as written in the config
  std::string hf_architecture;  // the first of "architectures" ("DeepseekV3ForCausalLM"); empty when absent
  Architecture arch = Architecture::llama;

  int layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;        // GQA key/value heads (MLA: unused, equals heads in the config)
  std::int64_t head_dim = 0;        // GQA head dimension (explicit or hidden / heads)
  std::int64_t intermediate = 0;    // dense MLP width
  std::int64_t vocab = 0;
  bool tie_embeddings = false;
  bool qk_norm = false;             // RMSNorm over each q and k head before attention
  bool qkv_bias = false;            // the q, k and v projections carry a bias (qwen2)
  // Attention over at most the last sliding_window positions (Mistral-7B v0.1; 0: full context).
  // Every layer; the KV cache is still counted in full, as engines allocate it by default.
  std::int64_t sliding_window = 0;

  // Mixture of experts (routed_experts == 0: dense model).
  std::int64_t routed_experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t shared_experts = 0;
  std::int64_t moe_intermediate = 0;
  int first_dense_layers = 0;       // first_k_dense_replace
  int moe_layer_freq = 1;           // deepseek: layer i >= first_dense is MoE when i % freq == 0
  int decoder_sparse_step = 1;      // qwen3_moe: layer i is MoE when (i + 1) % step == 0 ...
  std::vector<int> mlp_only_layers; // ... and i is not listed here

  // Multi-head latent attention (deepseek_v3 / kimi_k2).
  std::int64_t q_lora_rank = 0;     // 0: q is projected directly (no q LoRA)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;

  // EAGLE-3 draft head.
  std::int64_t draft_vocab = 0;     // draft_vocab_size (reduced vocabulary of the draft lm_head)
  // The checkpoint's quantization_config (checkpoint_quantization.hpp); absent: bf16 weights.
  std::optional<CheckpointQuantization> quantization;

  bool is_moe() const { return routed_experts > 0; }
  bool is_mla() const { return arch == Architecture::deepseek_v3; }
  bool is_draft() const { return arch == Architecture::eagle3_draft; }
  bool layer_is_moe(int layer) const;
};

ModelConfig read_model_config(const std::string& path);
// `name` is what the trace calls the model; read_model_config passes the file stem.
ModelConfig parse_model_config(const nlohmann::json& doc, const std::string& file, const std::string& name);

// Tensor-parallel sharding, as SGLang lays a model out over `tp` ranks. check_tp throws an
// InputError naming the config file and the field that `tp` does not divide.
void check_tp(const ModelConfig& m, int tp);
std::int64_t heads_per_rank(const ModelConfig& m, int tp);
// GQA: kv_heads / tp when tp divides kv_heads; 1 (each rank keeps a replica) when kv_heads divides tp.
std::int64_t kv_heads_per_rank(const ModelConfig& m, int tp);
// Vocabulary rows per rank of a vocab-parallel embedding / lm_head (padded up to a multiple of tp).
std::int64_t vocab_per_rank(std::int64_t vocab, int tp);

// Bytes of weights one rank holds: embedding, decoder layers (all experts), norms, lm_head.
// Linear layers are stored as `weight_dtype`; embedding, lm_head, router and norms stay bf16,
// as the generator assumes (docs/trace-format.md, "Generated traces").
double weight_bytes_per_rank(const ModelConfig& m, int tp, DType weight_dtype);
// The same with each class of linear layer in its own format.
double weight_bytes_per_rank(const ModelConfig& m, int tp, const LinearFormats& formats);
// KV-cache bytes one rank stores per token of context, over all layers.
// GQA: 2 (K and V) x kv heads per rank x head_dim; MLA: the compressed latent + rope key
// (kv_lora_rank + qk_rope_head_dim), which every rank stores in full under TP.
double kv_cache_bytes_per_token_per_rank(const ModelConfig& m, int tp, DType kv_dtype = DType::bf16);

}  // namespace eaglesim
