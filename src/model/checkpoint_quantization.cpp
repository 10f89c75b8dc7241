#include "model/checkpoint_quantization.hpp"

#include <regex>
#include <vector>

#include <fmt/format.h>

namespace eaglesim {

namespace {

constexpr std::size_t kMaxModulePattern = 256;

// The dot-separated parts of a module name.
std::vector<std::string> components(const std::string& name) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    out.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// fnmatch's '*' (any run of characters) over the whole text.
bool glob_matches(const std::string& glob, const std::string& text) {
  std::size_t g = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (g < glob.size() && (glob[g] == text[t] || glob[g] == '?')) {
      ++g, ++t;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++;
      mark = t;
    } else if (star != std::string::npos) {
      g = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

// One representative module per class, named as Hugging Face checkpoints name them, at the first
// layer of the class's kind. A class is one format: the engines quantise its modules alike.
struct ClassModules {
  std::vector<std::string> attention, dense_mlp, shared_experts, routed_experts;
};

ClassModules class_modules(int dense_layer, int moe_layer) {
  const std::string d = fmt::format("model.layers.{}.", dense_layer), e = fmt::format("model.layers.{}.", moe_layer);
  ClassModules c;
  for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"})
    c.attention.push_back(d + "self_attn." + p);
  for (const char* p : {"gate_proj", "up_proj", "down_proj"}) {
    c.dense_mlp.push_back(d + "mlp." + p);
    c.shared_experts.push_back(e + "mlp.shared_experts." + p);
    c.routed_experts.push_back(e + "mlp.experts.0." + p);
  }
  return c;
}

bool any_matches(const std::vector<std::string>& patterns, const std::vector<std::string>& modules) {
  for (const std::string& p : patterns)
    for (const std::string& m : modules)
      if (module_pattern_matches(p, m)) return true;
  return false;
}

// A list of module patterns (absent or null: none); each must be a string, and a regex must compile.
std::vector<std::string> read_patterns(const JsonCursor& block, const char* key) {
  std::vector<std::string> out;
  auto list = block.find(key);
  if (!list) return out;
  list->expect_array();
  for (std::size_t i = 0; i < list->size(); ++i) {
    const JsonCursor item = list->at(i);
    const std::string p = item.as_string();
    // Real lists name modules in a few dozen characters; a bound keeps a regex's compile and match
    // (recursive in libstdc++) within reach.
    if (p.size() > kMaxModulePattern)
      item.fail(fmt::format("a module pattern of at most {} characters", kMaxModulePattern));
    if (p.rfind("re:", 0) == 0) {
      try {
        std::regex check(p.substr(3));
      } catch (const std::regex_error&) {
        item.fail("a module pattern whose \"re:\" part is a valid regular expression");
      }
    }
    out.push_back(p);
  }
  return out;
}

// The formats with every class `excluded` names left bf16.
LinearFormats excluding(DType format, const std::vector<std::string>& excluded, const ClassModules& c) {
  LinearFormats f = LinearFormats::all(format);
  if (any_matches(excluded, c.attention)) f.attention = DType::bf16;
  if (any_matches(excluded, c.dense_mlp)) f.dense_mlp = DType::bf16;
  if (any_matches(excluded, c.shared_experts)) f.shared_experts = DType::bf16;
  if (any_matches(excluded, c.routed_experts)) f.routed_experts = DType::bf16;
  return f;
}

// A compressed-tensors `weights` entry: 8-bit float is fp8, 4-bit int is int4 (with its group
// size, left as it is when the entry names none).
DType compressed_tensors_format(const JsonCursor& weights, int& group_size) {
  weights.expect_object();
  const std::int64_t bits = weights.at("num_bits").as_int(1, 64);
  const std::string type = weights.at("type").as_enum({"int", "float"});
  if (bits == 8 && type == "float") return DType::fp8;
  if (bits == 4 && type == "int") {
    if (auto g = weights.find("group_size")) group_size = static_cast<int>(g->as_int(-1, 1 << 20));
    return DType::int4;
  }
  weights.fail_raw(fmt::format("{}-bit {} weights are not modelled (expected 8-bit float: fp8, or 4-bit int: int4; "
                               "--weight-dtype prices the checkpoint in one of them)",
                               bits, type));
}

CheckpointQuantization read_fp8(const JsonCursor& q, const ClassModules& c) {
  CheckpointQuantization out;
  if (auto fmt_ = q.find("fmt")) {
    const std::string f = fmt_->as_string();
    if (f != "e4m3") fmt_->fail("e4m3 (the fp8 format modelled)");
  }
  if (auto block = q.find("weight_block_size")) {
    block->expect_array();
    if (block->size() != 2) block->fail("[rows, columns] of a weight block");
    out.group_size = static_cast<int>(block->at(std::size_t{0}).as_int(1, 1 << 16));
    block->at(std::size_t{1}).as_int(1, 1 << 16);
  }
  // Both schemes quantise the activations: on the fly (dynamic) or with a stored scale (static).
  if (auto a = q.find("activation_scheme")) {
    a->as_enum({"dynamic", "static"});
    out.activations_quantized = true;
  }
  std::vector<std::string> excluded = read_patterns(q, "modules_to_not_convert");
  for (std::string& p : read_patterns(q, "ignored_layers")) excluded.push_back(std::move(p));
  out.formats = excluding(DType::fp8, excluded, c);
  out.summary = fmt::format("fp8 e4m3{}{}", out.group_size ? fmt::format(", {0}x{0} blocks", out.group_size) : ", per tensor",
                            out.activations_quantized ? ", activations quantised on the fly" : "");
  return out;
}

CheckpointQuantization read_compressed_tensors(const JsonCursor& q, const ClassModules& c) {
  CheckpointQuantization out;
  const std::vector<std::string> ignore = read_patterns(q, "ignore");
  const JsonCursor groups = q.at("config_groups");
  groups.expect_object();
  if (groups.keys().empty()) groups.fail("at least one quantisation group");
  // Each class takes the first group whose targets name it (a group targeting "Linear" names all).
  std::optional<DType> attention, dense, shared, routed;
  for (const std::string& name : groups.keys()) {
    const JsonCursor g = groups.at(name.c_str());
    g.expect_object();
    const std::vector<std::string> targets = read_patterns(g, "targets");
    if (targets.empty()) g.at("targets").fail("a non-empty list of module targets");
    int group_size = 0;
    const DType format = compressed_tensors_format(g.at("weights"), group_size);
    if (format == DType::int4 && group_size > 0) out.group_size = group_size;
    if (auto in = g.find("input_activations")) {
      in->expect_object();
      out.activations_quantized = true;
    }
    auto targeted = [&](const std::vector<std::string>& modules) {
      for (const std::string& t : targets)
        if (t == "Linear" || any_matches({t}, modules)) return true;
      return false;
    };
    if (!attention && targeted(c.attention)) attention = format;
    if (!dense && targeted(c.dense_mlp)) dense = format;
    if (!shared && targeted(c.shared_experts)) shared = format;
    if (!routed && targeted(c.routed_experts)) routed = format;
  }
  auto pick = [&](const std::optional<DType>& f, const std::vector<std::string>& modules) {
    return f && !any_matches(ignore, modules) ? *f : DType::bf16;
  };
  out.formats = {pick(attention, c.attention), pick(dense, c.dense_mlp), pick(shared, c.shared_experts),
                 pick(routed, c.routed_experts)};
  if (auto kv = q.find("kv_cache_scheme")) {
    kv->expect_object();
    const bool fp8 = kv->at("num_bits").as_int(1, 64) == 8 && kv->at("type").as_enum({"int", "float"}) == "float";
    if (!fp8) kv->fail_raw("only an 8-bit float (fp8) KV cache is modelled");
    out.kv_cache = DType::fp8;
  }
  out.summary = fmt::format("compressed-tensors{}{}", out.group_size ? fmt::format(", int4 in groups of {}", out.group_size) : "",
                            out.activations_quantized ? ", activations quantised" : ", weight-only");
  return out;
}

CheckpointQuantization read_int4_groups(const JsonCursor& q, const std::string& method, const ClassModules& c) {
  CheckpointQuantization out;
  const JsonCursor bits = q.at("bits");
  if (bits.as_int(1, 64) != 4) bits.fail(fmt::format("4 ({} checkpoints of other widths are not modelled)", method));
  if (auto g = q.find("group_size")) out.group_size = static_cast<int>(std::max<std::int64_t>(0, g->as_int(-1, 1 << 20)));
  out.formats = excluding(DType::int4, method == "awq" ? read_patterns(q, "modules_to_not_convert") : std::vector<std::string>{}, c);
  out.summary = fmt::format("{} int4{}, weight-only", method,
                            out.group_size ? fmt::format(" in groups of {}", out.group_size) : " per channel");
  return out;
}

CheckpointQuantization read_modelopt(const JsonCursor& block, const ClassModules& c) {
  // The config.json form, or the hf_quant_config.json form nested under "quantization".
  const std::optional<JsonCursor> nested = block.find("quantization");
  const JsonCursor q = nested ? *nested : block;
  q.expect_object();
  const JsonCursor algo = q.at("quant_algo");
  const std::string a = algo.as_string();
  if (a != "FP8")
    algo.fail_raw(fmt::format("quant_algo {} is not modelled (expected FP8; 4-bit float formats such as NVFP4 are "
                              "not modelled: --weight-dtype prices the checkpoint in a modelled format)",
                              a));
  CheckpointQuantization out;
  out.activations_quantized = true;
  std::vector<std::string> excluded = read_patterns(q, "exclude_modules");
  for (std::string& p : read_patterns(q, "ignore")) excluded.push_back(std::move(p));
  out.formats = excluding(DType::fp8, excluded, c);
  if (auto kv = q.find("kv_cache_quant_algo")) {
    const std::string k = kv->as_string();
    if (k != "FP8") kv->fail("FP8 (the KV-cache format modelled) or null");
    out.kv_cache = DType::fp8;
  }
  out.summary = "modelopt fp8, activations quantised";
  return out;
}

// MXFP4 (OCP microscaling): 32 e2m1 values share one e8m0 scale byte.
constexpr int kMxfp4Block = 32;

// gpt-oss's block: the checkpoints' quantizer (transformers' Mxfp4HfQuantizer) converts the MoE
// experts only, and SGLang and vLLM run the rest unquantised. On Hopper the engines' MoE kernels
// read the 4-bit weights and their scales and compute in bf16, as an int4 weight-only GEMM does,
// so the experts are priced as int4 (0.5 B a weight; Blackwell's FP4 MMAs are not modelled) and
// held with their 1/32 B of scales.
CheckpointQuantization read_mxfp4(const JsonCursor& q, const ClassModules& c) {
  CheckpointQuantization out;
  out.group_size = kMxfp4Block;
  out.formats = LinearFormats::all(DType::bf16);
  if (!any_matches(read_patterns(q, "modules_to_not_convert"), c.routed_experts)) {
    out.formats.routed_experts = DType::int4;
    out.formats.routed_scale_bytes = 1.0 / kMxfp4Block;
  }
  out.summary = fmt::format("mxfp4, routed experts e2m1 with an e8m0 scale per {} weights (4.25 bits; priced as int4), "
                            "the rest bf16",
                            kMxfp4Block);
  return out;
}

}  // namespace

bool LinearFormats::uniform() const {
  return attention == dense_mlp && dense_mlp == shared_experts && shared_experts == routed_experts &&
         routed_scale_bytes == 0.0;
}

bool LinearFormats::operator==(const LinearFormats& o) const {
  return attention == o.attention && dense_mlp == o.dense_mlp && shared_experts == o.shared_experts &&
         routed_experts == o.routed_experts && routed_scale_bytes == o.routed_scale_bytes;
}

std::string LinearFormats::describe(bool moe) const {
  if (uniform() || (!moe && attention == dense_mlp)) return to_string(attention);
  std::string s = fmt::format("attention {}, dense MLP {}", to_string(attention), to_string(dense_mlp));
  if (moe) s += fmt::format(", shared experts {}, routed experts {}", to_string(shared_experts), to_string(routed_experts));
  if (moe && routed_scale_bytes > 0.0)
    s += fmt::format(" with a scale byte per {:.0f} weights", 1.0 / routed_scale_bytes);
  return s;
}

bool module_pattern_matches(const std::string& pattern, const std::string& module) {
  if (pattern.rfind("re:", 0) == 0) {
    std::smatch m;
    return std::regex_search(module, m, std::regex(pattern.substr(3)), std::regex_constants::match_continuous);
  }
  // Globs and plain names match the module or one of the modules that contain it (a pattern
  // naming "model.layers.0.self_attn" covers its projections).
  const std::vector<std::string> parts = components(module);
  if (pattern.find('*') != std::string::npos || pattern.find('?') != std::string::npos) {
    std::string prefix;
    for (const std::string& p : parts) {
      prefix += (prefix.empty() ? "" : ".") + p;
      if (glob_matches(pattern, prefix)) return true;
    }
    return false;
  }
  // A plain name: whole dot-separated parts, contiguous ("mlp.gate" is the router, not gate_proj).
  const std::vector<std::string> want = components(pattern);
  for (std::size_t i = 0; i + want.size() <= parts.size(); ++i) {
    bool all = true;
    for (std::size_t j = 0; j < want.size() && all; ++j) all = parts[i + j] == want[j];
    if (all) return true;
  }
  return false;
}

std::optional<CheckpointQuantization> read_checkpoint_quantization(const JsonCursor& root, int dense_layer,
                                                                   int moe_layer) {
  const std::optional<JsonCursor> q = root.find("quantization_config");
  if (!q) return std::nullopt;
  q->expect_object();
  const ClassModules c = class_modules(dense_layer, moe_layer);
  const std::string method =
      q->at("quant_method").as_enum({"fp8", "compressed-tensors", "awq", "gptq", "modelopt", "mxfp4"});
  CheckpointQuantization out;
  if (method == "fp8") out = read_fp8(*q, c);
  else if (method == "compressed-tensors") out = read_compressed_tensors(*q, c);
  else if (method == "awq" || method == "gptq") out = read_int4_groups(*q, method, c);
  else if (method == "modelopt") out = read_modelopt(*q, c);
  else out = read_mxfp4(*q, c);
  out.method = method;
  return out;
}

}  // namespace eaglesim
