#include "import/config_shape_matcher.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim {

namespace {

// What an op is for the repetition search: its kind when typed or recognised, the kernel name
// when not. Plain and fused-add norms are one key: the first layer of vLLM/SGLang runs
// rms_norm (no residual yet), the others fused_add_rms_norm.
std::string role_key(const ImportedOp& io) {
  if (io.op.kind != OpKind::other) return to_string(io.op.kind);
  if (!io.shape_missing) return "other:" + io.op.name;
  const std::string& r = io.recognised_as;
  if (r == "norm" || r == "fused add+norm") return "rmsnorm";
  if (r == "activation") return "act";
  if (r == "add") return "residual_add";
  return r;
}

struct Run {
  std::size_t first = 0, period = 0;
  int repeats = 0;
};

bool same_window(const std::vector<std::string>& keys, std::size_t a, std::size_t b, std::size_t p) {
  for (std::size_t i = 0; i < p; ++i)
    if (keys[a + i] != keys[b + i]) return false;
  return true;
}

// The longest run of back-to-back identical windows, preferring the shortest period and then
// the earliest start (the first op of layer 0: an earlier start would rotate the layer).
Run longest_run(const std::vector<std::string>& keys, int wanted) {
  const std::size_t n = keys.size();
  Run best;
  for (std::size_t p = 1; p * 2 <= n; ++p) {
    for (std::size_t s = 0; s + 2 * p <= n; ++s) {
      int r = 1;
      while (s + (static_cast<std::size_t>(r) + 1) * p <= n && same_window(keys, s, s + static_cast<std::size_t>(r) * p, p)) ++r;
      if (r > best.repeats) best = {s, p, r};
      if (r >= wanted) return {s, p, r};
      s += static_cast<std::size_t>(r - 1) * p;  // nothing new starts inside the run just measured
    }
  }
  return best;
}

// The token-embedding gather: ATen's indexSelectLargeIndex / indexSelectSmallIndex (what
// F.embedding runs), or a kernel that says embedding.
bool is_embedding_lookup(const ImportedOp& io) {
  for (const auto& k : io.kernels)
    if (k.name.find("indexSelect") != std::string::npos || k.name.find("embedding") != std::string::npos ||
        k.name.find("Embedding") != std::string::npos)
      return true;
  return false;
}

std::int64_t bf16_bytes(std::int64_t elements) { return elements * 2; }

DType weight_dtype_of(const ImportedOp& io) {
  for (const auto& k : io.kernels) {
    if (k.family == "Marlin") return DType::int4;
    if (k.name.find("fp8") != std::string::npos || k.name.find("e4m3") != std::string::npos || k.family == "DeepGEMM")
      return DType::fp8;
  }
  return DType::bf16;
}

void set_gemm(ImportedOp& io, OpKind kind, std::int64_t m, std::int64_t n, std::int64_t k) {
  io.op.kind = kind;
  io.op.m = m;
  io.op.n = n;
  io.op.k = k;
  io.op.dtype = weight_dtype_of(io);
}

void set_rows(ImportedOp& io, OpKind kind, std::int64_t rows, std::int64_t width) {
  io.op.kind = kind;
  io.op.tokens = rows;
  io.op.hidden = width;
}

void set_allreduce(ImportedOp& io, std::int64_t rows, std::int64_t hidden, const char* site) {
  io.op.kind = OpKind::allreduce;
  io.op.bytes = bf16_bytes(rows * hidden);
  io.op.dtype = DType::bf16;
  io.op.site = site;
}

void typed(ImportedOp& io, int layer, const std::string& name) {
  io.shape_missing = false;
  io.op.layer = layer;
  io.op.name = name;
}

std::vector<std::string> role_keys(const std::vector<ImportedOp>& ops, const std::vector<std::size_t>& step) {
  std::vector<std::string> keys;
  keys.reserve(step.size());
  for (std::size_t i : step) keys.push_back(role_key(ops[i]));
  return keys;
}

void check_layer_count(const Run& r, const RankLayerShape& cfg, std::size_t step_ops, const std::string& file) {
  if (r.repeats < cfg.layers || r.repeats > cfg.layers)
    throw InputError(fmt::format(
        "{}: {} {}: num_hidden_layers is {}, but the step's {} kernels hold {} (the longest run of identical "
        "layer patterns is {} x {} ops): the config does not describe the traced model",
        file, setting_name(Setting::config), cfg.config_file, cfg.layers, step_ops,
        r.repeats < cfg.layers ? fmt::format("no run of {} repeating layers", cfg.layers)
                               : fmt::format("{} repeating layers", r.repeats),
        r.repeats, r.period));
}

// The layer template, from layer 0 (every layer is the same by construction).
void check_layer_template(const std::vector<std::string>& keys, const Run& r, const RankLayerShape& cfg,
                          const RecordedRun& run, const std::string& file) {
  int gemms = 0, attentions = 0, allreduces = 0;
  for (std::size_t j = r.first; j < r.first + r.period; ++j) {
    gemms += keys[j] == "gemm";
    attentions += keys[j] == "attention";
    allreduces += keys[j] == "allreduce";
  }
  const std::string expect = fmt::format(
      "{} {} ({}, dense) expects per layer 4 GEMMs (qkv_proj, o_proj, gate_up_proj, down_proj) and 1 attention",
      setting_name(Setting::config), cfg.config_file, cfg.model_type);
  if (gemms != 4 || attentions != 1)
    throw InputError(fmt::format("{}: each of the {} repeating layers ({} ops) has {} GEMM(s) and {} attention "
                                 "kernel group(s); {}: the config does not describe the traced model",
                                 file, cfg.layers, r.period, gemms, attentions, expect));
  if (allreduces > 0 && run.tp == 1)
    throw InputError(fmt::format("{}: each layer has {} allreduce(s), so the run was tensor-parallel, but the tp "
                                 "is 1: pass {} (the engine's tensor-parallel size)",
                                 file, allreduces, setting_name(Setting::tp)));
}

// What typing an op reads: the step's role keys (the lm_head search marks them), where the
// layers lie, the config's shapes and the recorded run.
struct TypingContext {
  std::vector<std::string>& keys;
  const Run& layer_run;  // the repeating layers
  std::size_t end;  // one past the last op of the last layer
  const RankLayerShape& cfg;
  const RecordedRun& run;
};

// Outside the layers: embedding and its allreduce before them, the final norm and lm_head
// after them. Returns whether the op was typed.
bool type_outside_layers(ImportedOp& io, std::size_t j, const TypingContext& c) {
  const std::int64_t rows = c.run.rows(), H = c.cfg.hidden;
  const std::string& key = c.keys[j];
  if (j < c.layer_run.first && key == "allreduce") { set_allreduce(io, rows, H, "embed"); typed(io, -1, "embed_allreduce"); }
  else if (key == "rmsnorm" && j >= c.end) { set_rows(io, OpKind::rmsnorm, rows, H); typed(io, -1, "final_norm"); }
  else if (key == "gemm" && j >= c.end) {
    set_gemm(io, OpKind::lm_head, rows, c.cfg.vocab, H);
    typed(io, -1, "lm_head");
    c.keys[j] = "done";
    // Only the first GEMM after the layers is the lm_head.
    for (std::size_t k = j + 1; k < c.keys.size(); ++k)
      if (c.keys[k] == "gemm") c.keys[k] = "extra gemm";
  } else return false;
  return true;
}

// Where an op sits in its layer, from the ops of the layer before it.
struct LayerPosition {
  int gemm_index = 0, allreduce_index = 0;
  bool after_qkv = false, after_attention = false;
  int qk_norm_index = 0;
};

LayerPosition position_in_layer(const std::vector<std::string>& keys, std::size_t base, std::size_t j) {
  LayerPosition p;
  for (std::size_t k = base; k < j; ++k) {
    p.gemm_index += keys[k] == "gemm";
    p.allreduce_index += keys[k] == "allreduce";
    p.after_attention |= keys[k] == "attention";
    if (keys[k] == "gemm") p.after_qkv = true;
    if (p.after_qkv && !p.after_attention && keys[k] == "rmsnorm") ++p.qk_norm_index;
  }
  return p;
}

// Position inside the layer decides the role. Returns whether the op was typed.
bool type_layer_op(ImportedOp& io, std::size_t j, const TypingContext& c) {
  const RankLayerShape& cfg = c.cfg;
  const std::int64_t rows = c.run.rows(), H = cfg.hidden, D = cfg.head_dim;
  const std::int64_t heads = cfg.heads, kv_heads = cfg.kv_heads, inter = cfg.intermediate;
  const std::string& key = c.keys[j];
  const int layer = io.op.layer;
  const std::size_t base = c.layer_run.first + static_cast<std::size_t>(layer) * c.layer_run.period;
  const LayerPosition p = position_in_layer(c.keys, base, j);
  if (key == "gemm") {
    static const char* names[] = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"};
    const std::int64_t n[] = {(heads + 2 * kv_heads) * D, H, 2 * inter, H};
    const std::int64_t k[] = {H, heads * D, H, inter};
    set_gemm(io, OpKind::gemm, rows, n[p.gemm_index], k[p.gemm_index]);
    typed(io, layer, names[p.gemm_index]);
  } else if (key == "attention") {
    io.op.kind = OpKind::attention;
    io.op.q_tokens = c.run.tokens;
    io.op.batch = static_cast<std::int32_t>(c.run.batch);
    io.op.kv_len = c.run.kv_len;
    io.op.heads = heads;
    io.op.kv_heads = kv_heads;
    io.op.head_dim = D;
    typed(io, layer, "attn");
  } else if (key == "rmsnorm") {
    if (p.after_qkv && !p.after_attention && cfg.qk_norm) {
      // Qwen3's per-head RMSNorm of q, then of k.
      set_rows(io, OpKind::rmsnorm, rows * (p.qk_norm_index == 0 ? heads : kv_heads), D);
      typed(io, layer, p.qk_norm_index == 0 ? "q_norm" : "k_norm");
    } else {
      set_rows(io, OpKind::rmsnorm, rows, H);
      typed(io, layer, p.after_attention ? "post_attn_norm" : "input_norm");
    }
  } else if (key == "act") {
    set_rows(io, OpKind::act, rows, inter);
    typed(io, layer, "silu_mul");
  } else if (key == "residual_add") {
    set_rows(io, OpKind::residual_add, rows, H);
    typed(io, layer, p.after_attention && p.gemm_index >= 3 ? "mlp_residual" : "attn_residual");
  } else if (key == "allreduce") {
    set_allreduce(io, rows, H, p.allreduce_index == 0 ? "attn_out" : "mlp_out");
    typed(io, layer, p.allreduce_index == 0 ? "attn_allreduce" : "mlp_allreduce");
  } else {
    return false;
  }
  return true;
}

// Kind, shape, name and layer of every op that fits a role; returns how many did.
int type_ops(std::vector<ImportedOp>& ops, const std::vector<std::size_t>& step, const TypingContext& c) {
  int typed_ops = 0;
  for (std::size_t j = 0; j < step.size(); ++j) {
    ImportedOp& io = ops[step[j]];
    if (j < c.layer_run.first && io.op.kind == OpKind::other && is_embedding_lookup(io)) {
      set_rows(io, OpKind::embedding, c.run.rows(), c.cfg.hidden);
      typed(io, -1, "embedding");
      ++typed_ops;
      continue;
    }
    if (!io.shape_missing && io.op.kind == OpKind::other) continue;  // not recognised: measured only
    if (io.op.layer < 0 ? type_outside_layers(io, j, c) : type_layer_op(io, j, c)) ++typed_ops;
  }
  return typed_ops;
}

}  // namespace

ConfigMatch match_config_shapes(std::vector<ImportedOp>& ops, const std::vector<std::size_t>& step,
                                const RankLayerShape& cfg, const RecordedRun& run, const std::string& file) {
  std::vector<std::string> keys = role_keys(ops, step);
  const Run r = longest_run(keys, cfg.layers);
  check_layer_count(r, cfg, step.size(), file);

  ConfigMatch m;
  m.layers = cfg.layers;
  m.first = r.first;
  m.period = r.period;
  const std::size_t end = r.first + r.period * static_cast<std::size_t>(cfg.layers);
  for (std::size_t j = 0; j < step.size(); ++j)
    ops[step[j]].op.layer = j >= r.first && j < end ? static_cast<int>((j - r.first) / r.period) : -1;

  // Only dense GQA layers have a fixed role order to read shapes from; MoE and MLA layers are
  // numbered and kept at their measured µs.
  if (!cfg.dense_gqa) return m;
  m.shapes = true;
  check_layer_template(keys, r, cfg, run, file);
  m.typed = type_ops(ops, step, TypingContext{keys, r, end, cfg, run});
  return m;
}

}  // namespace eaglesim
