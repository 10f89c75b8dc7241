#include "model/model_config.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "io/json_cursor.hpp"

namespace eaglesim {

namespace {

// Upper bounds for config fields: far beyond any published model, low enough that products of
// them (weights per rank, trace op sizes) cannot overflow 64-bit integers.
constexpr std::int64_t kMaxLayers = 1000;
constexpr std::int64_t kMaxModelDim = std::int64_t{1} << 20;    // hidden, intermediate, ranks
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxModelHeads = 4096;
constexpr std::int64_t kMaxModelExperts = 65536;
constexpr std::int64_t kMaxModelPositions = std::int64_t{1} << 24;  // sliding windows, attention chunks
constexpr std::int64_t kLlama4DefaultChunk = 8192;                   // Llama4TextConfig's attention_chunk_size
constexpr std::int64_t kMaxVisionPatch = 4096;                       // vision_config patch_size (pixels)
constexpr std::int64_t kMaxVisionImage = std::int64_t{1} << 16;      // vision_config image_size (pixels)

std::string stem_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) base.resize(base.size() - 5);
  return base;
}

// Whether config.json's "architectures" names an EAGLE-3 draft head (LlamaForCausalLMEagle3 and
// similar): EAGLE-3 checkpoints keep model_type "llama", so only this list tells them apart.
bool names_eagle3(const JsonCursor& root) {
  auto archs = root.find("architectures");
  if (!archs) return false;
  archs->expect_array();
  for (std::size_t i = 0; i < archs->size(); ++i) {
    std::string a = archs->at(i).as_string();
    std::string lower = a;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("eagle3") != std::string::npos) return true;
  }
  return false;
}

std::int64_t read_int(const JsonCursor& root, const char* key, std::int64_t max) {
  return root.at(key).as_positive_int(max);
}

std::int64_t read_int_or(const JsonCursor& root, const char* key, std::int64_t fallback,
                         std::int64_t min, std::int64_t max) {
  if (auto c = root.find(key)) return c->as_int(min, max);
  return fallback;
}

bool read_bool_or(const JsonCursor& root, const char* key, bool fallback) {
  if (auto c = root.find(key)) return c->as_bool();
  return fallback;
}

void read_gqa(ModelConfig& m, const JsonCursor& root) {
  m.kv_heads = read_int_or(root, "num_key_value_heads", m.heads, 1, kMaxModelHeads);
  if (m.heads % m.kv_heads != 0)
    root.at("num_key_value_heads").fail(fmt::format("a divisor of num_attention_heads ({})", m.heads));
  if (auto hd = root.find("head_dim")) {
    m.head_dim = hd->as_positive_int(kMaxModelHeads * 4);
  } else {
    if (m.hidden % m.heads != 0)
      root.fail_raw(fmt::format("head_dim is missing and hidden_size ({}) is not a multiple of "
                                "num_attention_heads ({}); give head_dim explicitly",
                                m.hidden, m.heads));
    m.head_dim = m.hidden / m.heads;
  }
}

void read_moe(ModelConfig& m, const JsonCursor& root, const char* experts_key,
              const char* width_key = "moe_intermediate_size") {
  m.routed_experts = read_int(root, experts_key, kMaxModelExperts);
  m.experts_per_token = read_int(root, "num_experts_per_tok", kMaxModelExperts);
  if (m.experts_per_token > m.routed_experts)
    root.at("num_experts_per_tok").fail(fmt::format("at most {} ({})", experts_key, m.routed_experts));
  m.moe_intermediate = read_int(root, width_key, kMaxModelDim);
}

// gpt-oss (transformers' GptOssConfig): GQA whose q, k, v and o projections carry biases
// (attention_bias), a learned sink per head, routed experts in every layer (num_local_experts of
// intermediate_size width, router and experts with biases, no shared expert), and per layer
// sliding-window or full attention (layer_types; absent: transformers' default, sliding first,
// alternating).
void read_gpt_oss(ModelConfig& m, const JsonCursor& root) {
  read_gqa(m, root);
  m.routed_experts = read_int(root, "num_local_experts", kMaxModelExperts);
  // Top-k as transformers names it; the original checkpoint format's experts_per_token, which the
  // HF configs carry too, must agree.
  const std::optional<JsonCursor> hf = root.find("num_experts_per_tok"), own = root.find("experts_per_token");
  const JsonCursor k = hf ? *hf : own ? *own : root.at("num_experts_per_tok");
  m.experts_per_token = k.as_positive_int(kMaxModelExperts);
  if (m.experts_per_token > m.routed_experts)
    k.fail(fmt::format("at most num_local_experts ({})", m.routed_experts));
  if (hf && own && own->as_positive_int(kMaxModelExperts) != m.experts_per_token)
    own->fail(fmt::format("num_experts_per_tok's value ({})", m.experts_per_token));
  m.moe_intermediate = m.intermediate;
  m.qkv_bias = m.o_proj_bias = read_bool_or(root, "attention_bias", true);
  m.attention_sinks = m.router_bias = m.expert_bias = true;

  m.layer_reach.assign(static_cast<std::size_t>(m.layers), AttentionReach::full);
  if (auto types = root.find("layer_types")) {
    types->expect_array();
    if (types->size() != static_cast<std::size_t>(m.layers))
      types->fail(fmt::format("one entry per layer ({} = num_hidden_layers)", m.layers));
    for (std::size_t i = 0; i < types->size(); ++i)
      if (types->at(i).as_enum({"sliding_attention", "full_attention"}) == "sliding_attention")
        m.layer_reach[i] = AttentionReach::sliding;
  } else {
    for (std::size_t i = 0; i < m.layer_reach.size(); i += 2) m.layer_reach[i] = AttentionReach::sliding;
  }
  // The window is gpt-oss's own (there is no use_sliding_window switch): needed by any sliding layer.
  if (std::find(m.layer_reach.begin(), m.layer_reach.end(), AttentionReach::sliding) != m.layer_reach.end())
    m.sliding_window = root.at("sliding_window").as_positive_int(kMaxModelPositions);
}

// Llama-4's text model (transformers' Llama4TextConfig): GQA without biases (attention_bias),
// RoPE layers with a weightless L2 q/k norm (use_qk_norm) attending within their chunk
// (attention_chunk_size) and NoPE layers attending over the whole context (no_rope_layers: 1 RoPE,
// 0 NoPE; absent or empty: a NoPE layer every no_rope_layer_interval-th), MoE layers (moe_layers,
// else every interleave_moe_layer_step-th) of num_local_experts routed experts plus one shared
// expert, all intermediate_size wide, and dense layers intermediate_size_mlp wide. Absent fields
// take transformers' defaults.
void read_llama4(ModelConfig& m, const JsonCursor& root) {
  read_gqa(m, root);
  m.qk_norm = read_bool_or(root, "use_qk_norm", true);
  m.qk_norm_weights = false;
  m.qkv_bias = m.o_proj_bias = read_bool_or(root, "attention_bias", false);
  read_moe(m, root, "num_local_experts", "intermediate_size");
  m.shared_experts = 1;
  if (auto list = root.find("moe_layers")) {
    list->expect_array();
    for (std::size_t i = 0; i < list->size(); ++i)
      m.moe_layers.push_back(static_cast<int>(list->at(i).as_int(0, m.layers - 1)));
  } else {
    const int step = static_cast<int>(read_int_or(root, "interleave_moe_layer_step", 1, 1, m.layers));
    for (int layer = step - 1; layer < m.layers; layer += step) m.moe_layers.push_back(layer);
  }
  bool dense = false;
  for (int layer = 0; layer < m.layers && !dense; ++layer) dense = !m.layer_is_moe(layer);
  if (dense) m.intermediate = read_int(root, "intermediate_size_mlp", kMaxModelDim);
  else if (auto w = root.find("intermediate_size_mlp")) m.intermediate = w->as_positive_int(kMaxModelDim);

  m.nope_layers.assign(static_cast<std::size_t>(m.layers), false);
  const std::optional<JsonCursor> rope = root.find("no_rope_layers");
  if (rope) rope->expect_array();
  if (rope && rope->size() > 0) {
    if (rope->size() < static_cast<std::size_t>(m.layers))
      rope->fail(fmt::format("at least one entry per layer ({} = num_hidden_layers)", m.layers));
    for (std::size_t i = 0; i < m.nope_layers.size(); ++i) m.nope_layers[i] = rope->at(i).as_int(0, 1) == 0;
  } else {
    const std::int64_t interval = read_int_or(root, "no_rope_layer_interval", 4, 1, kMaxLayers);
    for (std::size_t i = 0; i < m.nope_layers.size(); ++i) m.nope_layers[i] = (i + 1) % interval == 0;
  }
  // null turns chunking off; absent is transformers' default chunk.
  if (auto chunk = root.find("attention_chunk_size")) m.attention_chunk = chunk->as_positive_int(kMaxModelPositions);
  else if (!root.json().contains("attention_chunk_size")) m.attention_chunk = kLlama4DefaultChunk;
  m.layer_reach.assign(static_cast<std::size_t>(m.layers), AttentionReach::full);
  if (m.attention_chunk > 0)
    for (std::size_t i = 0; i < m.layer_reach.size(); ++i)
      if (!m.nope_layers[i]) m.layer_reach[i] = AttentionReach::chunked;
}

// Parameters of Llama-4's vision tower and projector (transformers' Llama4VisionModel and
// Llama4MultiModalProjector): class and position embeddings, the unfold patch projection, pre and
// post layer norms, `num_hidden_layers` encoder layers (q, k, v, o and the two MLP linears with
// biases, two layer norms with biases), the pixel-shuffle MLP and the projection to the text model.
std::int64_t llama4_vision_params(const JsonCursor& v, std::int64_t text_hidden) {
  v.expect_object();
  const std::int64_t h = read_int(v, "hidden_size", kMaxModelDim);
  const std::int64_t inter = read_int(v, "intermediate_size", kMaxModelDim);
  const std::int64_t layers = read_int(v, "num_hidden_layers", kMaxLayers);
  const std::int64_t patch = read_int(v, "patch_size", kMaxVisionPatch);
  const std::int64_t image = read_int(v, "image_size", kMaxVisionImage);
  const std::int64_t channels = read_int_or(v, "num_channels", 3, 1, 64);
  const std::int64_t out = read_int(v, "vision_output_dim", kMaxModelDim);
  const std::int64_t proj_in = read_int(v, "projector_input_dim", kMaxModelDim);
  const std::int64_t proj_out = read_int(v, "projector_output_dim", kMaxModelDim);
  const bool proj_bias = read_bool_or(v, "multi_modal_projector_bias", false);
  const std::int64_t side = image / patch;
  std::int64_t n = h + (side * side + 1) * h + channels * patch * patch * h + 4 * h;
  n += layers * (4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 4 * h);
  n += inter * proj_in + proj_out * proj_out;
  n += out * text_hidden + (proj_bias ? text_hidden : 0);
  return n;
}

void read_mla(ModelConfig& m, const JsonCursor& root) {
  // DeepSeek-V2-Lite style configs have "q_lora_rank": null: q is then projected directly.
  m.q_lora_rank = root.has("q_lora_rank") ? root.at("q_lora_rank").as_positive_int(kMaxModelDim) : 0;
  m.kv_lora_rank = read_int(root, "kv_lora_rank", kMaxModelDim);
  m.qk_nope_head_dim = read_int(root, "qk_nope_head_dim", kMaxModelDim);
  m.qk_rope_head_dim = read_int(root, "qk_rope_head_dim", kMaxModelDim);
  m.v_head_dim = read_int(root, "v_head_dim", kMaxModelDim);
  // MLA has no grouped KV heads; keep kv_heads/head_dim meaningful for callers that print them.
  m.kv_heads = m.heads;
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
}

}  // namespace

const char* to_string(Architecture a) {
  switch (a) {
    case Architecture::llama: return "llama";
    case Architecture::qwen3: return "qwen3";
    case Architecture::qwen3_moe: return "qwen3_moe";
    case Architecture::glm4_moe: return "glm4_moe";
    case Architecture::deepseek_v3: return "deepseek_v3";
    case Architecture::mixtral: return "mixtral";
    case Architecture::gpt_oss: return "gpt_oss";
    case Architecture::llama4: return "llama4";
    case Architecture::eagle3_draft: return "eagle3";
  }
  return "?";
}


const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types{"llama",   "qwen2",       "qwen3",   "qwen3_moe", "mistral",
                                              "mixtral", "glm4_moe",    "deepseek_v3", "kimi_k2", "gpt_oss",
                                              "llama4_text"};
  return types;
}

bool ModelConfig::layer_is_moe(int layer) const {
  if (!is_moe()) return false;
  switch (arch) {
    case Architecture::qwen3_moe:
      if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
        return false;
      return (layer + 1) % decoder_sparse_step == 0;
    case Architecture::glm4_moe:
      return layer >= first_dense_layers;
    case Architecture::deepseek_v3:
      return layer >= first_dense_layers && layer % moe_layer_freq == 0;
    case Architecture::mixtral:
    case Architecture::gpt_oss:
      return true;
    case Architecture::llama4:
      return std::find(moe_layers.begin(), moe_layers.end(), layer) != moe_layers.end();
    default: return false;
  }
}

AttentionReach ModelConfig::reach(int layer) const {
  if (!layer_reach.empty()) return layer_reach[static_cast<std::size_t>(layer)];
  return sliding_window > 0 ? AttentionReach::sliding : AttentionReach::full;
}

// Multimodal checkpoints (Llama-4, Qwen2.5-VL, Mistral-3, Gemma-3 ...) nest the language model's
// fields under "text_config"; its model_type names the text architecture.
JsonCursor text_part(const JsonCursor& top) {
  if (top.has("num_hidden_layers")) return top;
  if (auto text = top.find("text_config")) {
    text->expect_object();
    return *text;
  }
  if (top.has("vision_config"))
    top.fail_raw("a multimodal config without text_config: expected the language model's fields under "
                 "\"text_config\" (num_hidden_layers, hidden_size, ...)");
  return top;
}

ModelConfig parse_model_config(const nlohmann::json& doc, const std::string& file, const std::string& name) {
  JsonCursor top(doc, file);
  top.expect_object();
  const JsonCursor root = text_part(top);
  ModelConfig m;
  m.name = name;
  m.file = file;
  m.model_type = root.at("model_type").as_enum(supported_model_types());
  if (m.model_type == "llama") m.arch = names_eagle3(top) ? Architecture::eagle3_draft : Architecture::llama;
  else if (m.model_type == "qwen2" || m.model_type == "mistral") m.arch = Architecture::llama;
  else if (m.model_type == "mixtral") m.arch = Architecture::mixtral;
  else if (m.model_type == "gpt_oss") m.arch = Architecture::gpt_oss;
  else if (m.model_type == "llama4_text") m.arch = Architecture::llama4;
  else if (m.model_type == "qwen3") m.arch = Architecture::qwen3;
  else if (m.model_type == "qwen3_moe") m.arch = Architecture::qwen3_moe;
  else if (m.model_type == "glm4_moe") m.arch = Architecture::glm4_moe;
  else m.arch = Architecture::deepseek_v3;  // deepseek_v3, kimi_k2 (same layer layout)
  if (auto archs = top.find("architectures")) {
    archs->expect_array();
    if (archs->size() > 0) m.hf_architecture = archs->at(std::size_t{0}).as_string();
  }

  m.layers = static_cast<int>(read_int(root, "num_hidden_layers", kMaxLayers));
  m.hidden = read_int(root, "hidden_size", kMaxModelDim);
  m.heads = read_int(root, "num_attention_heads", kMaxModelHeads);
  m.intermediate = read_int(root, "intermediate_size", kMaxModelDim);
  m.vocab = read_int(root, "vocab_size", kMaxVocab);
  if (auto t = root.find("tie_word_embeddings")) m.tie_embeddings = t->as_bool();

  // Qwen2 projects q, k and v with a bias; sliding windows where the config turns them on
  // (Qwen's use_sliding_window; Mistral's sliding_window when not null).
  m.qkv_bias = m.model_type == "qwen2";
  if (auto w = root.find("sliding_window")) {  // null counts as absent
    const auto use = root.find("use_sliding_window");  // Qwen's switch; Mistral's window is on when set
    if (!use || use->as_bool()) m.sliding_window = w->as_positive_int(kMaxModelPositions);
  }
  switch (m.arch) {
    case Architecture::llama:
      read_gqa(m, root);
      break;
    case Architecture::mixtral:
      read_gqa(m, root);
      read_moe(m, root, "num_local_experts", "intermediate_size");
      break;
    case Architecture::gpt_oss:
      read_gpt_oss(m, root);
      break;
    case Architecture::llama4:
      read_llama4(m, root);
      if (auto vision = top.find("vision_config")) m.vision_params = llama4_vision_params(*vision, m.hidden);
      break;
    case Architecture::eagle3_draft:
      read_gqa(m, root);
      if (m.layers != 1)
        root.at("num_hidden_layers").fail("1 (an EAGLE-3 draft head has one decoder layer)");
      m.draft_vocab = read_int_or(root, "draft_vocab_size", m.vocab, 1, m.vocab);
      break;
    case Architecture::qwen3:
      read_gqa(m, root);
      m.qk_norm = true;
      break;
    case Architecture::qwen3_moe: {
      read_gqa(m, root);
      m.qk_norm = true;
      read_moe(m, root, "num_experts");
      m.decoder_sparse_step = static_cast<int>(read_int_or(root, "decoder_sparse_step", 1, 1, m.layers));
      if (auto only = root.find("mlp_only_layers")) {
        only->expect_array();
        for (std::size_t i = 0; i < only->size(); ++i)
          m.mlp_only_layers.push_back(static_cast<int>(only->at(i).as_int(0, m.layers - 1)));
      }
      break;
    }
    case Architecture::glm4_moe:
      read_gqa(m, root);
      if (auto q = root.find("use_qk_norm")) m.qk_norm = q->as_bool();
      read_moe(m, root, "n_routed_experts");
      m.shared_experts = read_int_or(root, "n_shared_experts", 0, 0, 64);
      m.first_dense_layers = static_cast<int>(read_int_or(root, "first_k_dense_replace", 0, 0, m.layers));
      break;
    case Architecture::deepseek_v3:
      read_mla(m, root);
      read_moe(m, root, "n_routed_experts");
      m.shared_experts = read_int_or(root, "n_shared_experts", 0, 0, 64);
      m.first_dense_layers = static_cast<int>(read_int_or(root, "first_k_dense_replace", 0, 0, m.layers));
      m.moe_layer_freq = static_cast<int>(read_int_or(root, "moe_layer_freq", 1, 1, m.layers));
      break;
  }
  m.mtp_layers = static_cast<int>(read_int_or(root, "num_nextn_predict_layers", 0, 0, 16));
  int dense_layer = 0, moe_layer = 0;
  while (dense_layer + 1 < m.layers && m.layer_is_moe(dense_layer)) ++dense_layer;
  while (moe_layer + 1 < m.layers && !m.layer_is_moe(moe_layer)) ++moe_layer;
  m.quantization = read_checkpoint_quantization(root, dense_layer, moe_layer);
  if (m.quantization && m.quantization->method == "mxfp4" && !m.is_moe())
    root.at("quantization_config")
        .at("quant_method")
        .fail_raw("mxfp4 quantises routed experts (as the checkpoints' quantizer does) and this model has none");
  return m;
}

ModelConfig read_model_config(const std::string& path) {
  return parse_model_config(JsonCursor::parse_file(path), path, stem_of(path));
}

std::int64_t heads_per_rank(const ModelConfig& m, int tp) { return m.heads / tp; }

std::int64_t kv_heads_per_rank(const ModelConfig& m, int tp) {
  return m.kv_heads >= tp ? m.kv_heads / tp : 1;
}

std::int64_t vocab_per_rank(std::int64_t vocab, int tp) { return (vocab + tp - 1) / tp; }

void check_tp(const ModelConfig& m, int tp) {
  auto bad = [&](const std::string& what) {
    throw InputError::at(m.file, "", fmt::format("cannot shard over {} {}: {}", setting_name(Setting::tp), tp, what));
  };
  if (tp < 1) bad("tp must be at least 1");
  if (m.heads % tp != 0)
    bad(fmt::format("num_attention_heads ({}) is not a multiple of {}", m.heads, tp));
  if (!m.is_mla()) {
    bool split = m.kv_heads >= tp && m.kv_heads % tp == 0;
    bool replicate = m.kv_heads < tp && tp % m.kv_heads == 0;
    if (!split && !replicate)
      bad(fmt::format("num_key_value_heads ({}) neither divides nor is a multiple of {}", m.kv_heads, tp));
  }
  bool any_dense = false;
  for (int i = 0; i < m.layers && !any_dense; ++i) any_dense = !m.layer_is_moe(i);
  if (any_dense && m.intermediate % tp != 0)
    bad(fmt::format("intermediate_size ({}) is not a multiple of {}", m.intermediate, tp));
  if (m.is_moe()) {
    if (m.moe_intermediate % tp != 0)
      bad(fmt::format("moe_intermediate_size ({}) is not a multiple of {}", m.moe_intermediate, tp));
    if ((m.shared_experts * m.moe_intermediate) % tp != 0)
      bad(fmt::format("shared-expert width ({} x {}) is not a multiple of {}", m.shared_experts,
                      m.moe_intermediate, tp));
  }
}

double weight_bytes_per_rank(const ModelConfig& m, int tp, DType weight_dtype) {
  return weight_bytes_per_rank(m, tp, LinearFormats::all(weight_dtype));
}

double weight_bytes_per_rank(const ModelConfig& m, int tp, const LinearFormats& formats) {
  const double w = bytes_per_element(formats.attention);
  const double w_mlp = bytes_per_element(formats.dense_mlp);
  const double w_shared = bytes_per_element(formats.shared_experts);
  const double w_routed = bytes_per_element(formats.routed_experts) + formats.routed_scale_bytes;
  const double b16 = 2.0;
  const double H = static_cast<double>(m.hidden);
  double total = 0.0;

  // Embedding (vocab-parallel). An EAGLE-3 head reuses the target's embedding.
  const double lm_rows = static_cast<double>(vocab_per_rank(m.is_draft() ? m.draft_vocab : m.vocab, tp));
  if (!m.is_draft()) total += static_cast<double>(vocab_per_rank(m.vocab, tp)) * H * b16;
  if (!m.tie_embeddings || m.is_draft()) total += lm_rows * H * b16;
  total += H * b16;  // final norm
  if (m.is_draft()) total += 3.0 * H * H * b16 + H * b16;  // fc over the fused features, hidden_norm

  const double hq = static_cast<double>(heads_per_rank(m, tp));
  for (int layer = 0; layer < m.layers; ++layer) {
    total += 2.0 * H * b16;  // input and post-attention norms
    if (m.is_mla()) {
      const double qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
      if (m.q_lora_rank > 0)
        total += m.q_lora_rank * H * w + m.q_lora_rank * b16 + hq * qk * m.q_lora_rank * w;
      else
        total += hq * qk * H * w;
      total += (m.kv_lora_rank + m.qk_rope_head_dim) * H * w + m.kv_lora_rank * b16;
      total += hq * (m.qk_nope_head_dim + m.v_head_dim) * m.kv_lora_rank * w;
      total += H * hq * m.v_head_dim * w;
    } else {
      const double hkv = static_cast<double>(kv_heads_per_rank(m, tp));
      const double d = static_cast<double>(m.head_dim);
      const double in = m.is_draft() ? 2.0 * H : H;  // EAGLE-3: qkv reads [embedding, hidden]
      total += (hq + 2.0 * hkv) * d * in * w + H * hq * d * w;
      if (m.qkv_bias) total += (hq + 2.0 * hkv) * d * b16;
      if (m.o_proj_bias) total += H * b16;  // replicated: added once, after the row-parallel sum
      if (m.attention_sinks) total += hq * b16;
      if (m.layer_has_qk_norm(layer) && m.qk_norm_weights) total += 2.0 * d * b16;
    }
    if (m.layer_is_moe(layer)) {
      const double im = static_cast<double>(m.moe_intermediate) / tp;
      const double E = static_cast<double>(m.routed_experts);
      total += E * H * b16;                                                       // router
      if (m.router_bias) total += E * b16;
      total += 3.0 * H * im * static_cast<double>(m.shared_experts) * w_shared;  // shared experts
      total += E * 3.0 * H * im * w_routed;                                       // routed experts
      if (m.expert_bias) total += E * (2.0 * im + H) * b16;  // gate_up split like its weights, down's replicated
    } else {
      total += 3.0 * H * (static_cast<double>(m.intermediate) / tp) * w_mlp;
    }
  }
  return total;
}

double routed_expert_bytes(const ModelConfig& m, const LinearFormats& formats) {
  const double w_routed = bytes_per_element(formats.routed_experts) + formats.routed_scale_bytes;
  const double H = static_cast<double>(m.hidden), im = static_cast<double>(m.moe_intermediate);
  const double E = static_cast<double>(m.routed_experts);
  double total = 0.0;
  for (int layer = 0; layer < m.layers; ++layer)
    if (m.layer_is_moe(layer)) {
      total += E * 3.0 * H * im * w_routed;
      if (m.expert_bias) total += E * (2.0 * im + H) * 2.0;
    }
  return total;
}

double weight_bytes_per_rank(const ModelConfig& m, int tp, const LinearFormats& formats, bool dp_attention) {
  if (!dp_attention) return weight_bytes_per_rank(m, tp, formats);
  // Everything unsharded but the routed experts, of which each rank holds 1/tp.
  return weight_bytes_per_rank(m, 1, formats) - routed_expert_bytes(m, formats) * (1.0 - 1.0 / tp);
}

std::int64_t attended_kv(const ModelConfig& m, int layer, std::int64_t kv_len, std::int64_t q_tokens) {
  switch (m.reach(layer)) {
    case AttentionReach::full: return kv_len;
    case AttentionReach::sliding: return std::min(kv_len, m.sliding_window);
    case AttentionReach::chunked: {
      if (m.attention_chunk <= 0) return kv_len;
      const std::int64_t first = std::max<std::int64_t>(0, kv_len - q_tokens);  // the first new token's position
      return std::min(kv_len, first % m.attention_chunk + q_tokens);
    }
  }
  return kv_len;
}

double kv_cache_bytes_per_token_per_rank(const ModelConfig& m, int tp, DType kv_dtype) {
  const double e = bytes_per_element(kv_dtype);
  double per_layer = m.is_mla() ? static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim) * e
                                : 2.0 * static_cast<double>(kv_heads_per_rank(m, tp) * m.head_dim) * e;
  return per_layer * m.layers;
}

}  // namespace eaglesim
