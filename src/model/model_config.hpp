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
  gpt_oss,       // GQA with biases and sinks, sliding/full layers, routed experts with biases (gpt_oss)
  llama4,        // GQA, chunked RoPE / full NoPE layers, MoE (+ shared expert) and dense layers (llama4_text)
  eagle3_draft,  // EAGLE-3 draft head: fc(3H -> H) + one Llama decoder layer (LlamaForCausalLMEagle3)
};
const char* to_string(Architecture a);

// How far back one layer's attention reaches.
enum class AttentionReach {
  full,     // the whole context
  sliding,  // the last sliding_window positions (Mistral v0.1; gpt-oss's sliding layers)
  chunked,  // the query's own chunk of attention_chunk positions (Llama-4's RoPE layers)
};

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
  bool qk_norm_weights = true;      // false: the q/k norm has no learned scale (Llama-4's L2 norm)
  bool qkv_bias = false;            // the q, k and v projections carry a bias (qwen2, gpt_oss)
  bool o_proj_bias = false;         // the output projection carries one too (gpt_oss)
  bool attention_sinks = false;     // one learned sink logit per head (gpt_oss)
  // Attention over at most the last sliding_window positions (Mistral-7B v0.1; 0: full context):
  // every layer, unless layer_reach says which. The KV cache is still counted in full, as
  // engines allocate it by default.
  std::int64_t sliding_window = 0;
  std::int64_t attention_chunk = 0;  // Llama-4's attention_chunk_size (0: no chunked layers)
  // Per layer, where the layers differ (gpt_oss layer_types, Llama-4's RoPE/NoPE layers); empty:
  // every layer sliding when sliding_window > 0, else full.
  std::vector<AttentionReach> layer_reach;
  std::vector<bool> nope_layers;    // Llama-4: layers without RoPE (no rotary kernel, no q/k norm); empty: none

  // Mixture of experts (routed_experts == 0: dense model).
  std::int64_t routed_experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t shared_experts = 0;
  std::int64_t moe_intermediate = 0;
  bool router_bias = false;         // the router projection carries a bias (gpt_oss)
  bool expert_bias = false;         // every routed expert's gate_up and down carry biases (gpt_oss)
  std::vector<int> moe_layers;      // llama4: the MoE layers (moe_layers, or every interleave_moe_layer_step-th)
  int first_dense_layers = 0;       // first_k_dense_replace
  // num_nextn_predict_layers: the multi-token-prediction layers a checkpoint ships (DeepSeek-V3,
  // GLM-4.5), each one decoder layer of the target's kind; 0: none.
  int mtp_layers = 0;
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
  // Parameters of a multimodal checkpoint's vision tower and projector (Llama-4's vision_config):
  // reported beside the count, never priced (gen traces the text model). 0: none read.
  std::int64_t vision_params = 0;

  bool is_moe() const { return routed_experts > 0; }
  bool is_mla() const { return arch == Architecture::deepseek_v3; }
  bool is_draft() const { return arch == Architecture::eagle3_draft; }
  bool layer_is_moe(int layer) const;
  AttentionReach reach(int layer) const;
  bool layer_uses_rope(int layer) const { return nope_layers.empty() || !nope_layers[static_cast<std::size_t>(layer)]; }
  bool layer_has_qk_norm(int layer) const { return qk_norm && layer_uses_rope(layer); }
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
// Linear layers are stored as `weight_dtype`; embedding, lm_head, router, norms, biases and sinks
// stay bf16, as the generator assumes (docs/trace-format.md, "Generated traces"). The vision
// tower of a multimodal checkpoint is not counted.
double weight_bytes_per_rank(const ModelConfig& m, int tp, DType weight_dtype);
// The same with each class of linear layer in its own format (routed experts with their block
// scales, LinearFormats::routed_scale_bytes).
double weight_bytes_per_rank(const ModelConfig& m, int tp, const LinearFormats& formats);
// The routed experts' weights of the whole model (every MoE layer), in their format.
double routed_expert_bytes(const ModelConfig& m, const LinearFormats& formats);
// With data-parallel attention (GenOptions::dp_attention) a rank holds everything unsharded but
// 1/tp of the routed experts; expert parallelism with TP attention holds what TP-MoE holds (E/ep
// experts, each ep/tp wide: the same bytes).
double weight_bytes_per_rank(const ModelConfig& m, int tp, const LinearFormats& formats, bool dp_attention);
// Positions of one request's context that `layer`'s attention reads in a step of `q_tokens` new
// tokens over `kv_len` positions (the new tokens included). Full: kv_len. Sliding: each query reads
// its own window, min(kv_len, sliding_window). Chunked: from the start of the chunk holding the
// request's first new token to the end, (kv_len - q_tokens) mod chunk + q_tokens, capped at kv_len:
// at most chunk + q_tokens - 1, and ((kv_len - 1) mod chunk) + 1 for one token.
std::int64_t attended_kv(const ModelConfig& m, int layer, std::int64_t kv_len, std::int64_t q_tokens);

// KV-cache bytes one rank stores per token of context, over all layers.
// GQA: 2 (K and V) x kv heads per rank x head_dim; MLA: the compressed latent + rope key
// (kv_lora_rank + qk_rope_head_dim), which every rank stores in full under TP.
double kv_cache_bytes_per_token_per_rank(const ModelConfig& m, int tp, DType kv_dtype = DType::bf16);

}  // namespace eaglesim
