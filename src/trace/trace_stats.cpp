#include "trace/trace_stats.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trace/eagle_tree.hpp"

namespace eaglesim {

namespace {

// The rows a step's GEMMs see: its embedding's tokens, else its first GEMM's (or LM head's) m.
std::int64_t step_rows(const Step& step) {
  for (const Op& op : step.ops)
    if (op.kind == OpKind::embedding) return op.tokens;
  for (OpKind kind : {OpKind::gemm, OpKind::lm_head})
    for (const Op& op : step.ops)
      if (op.kind == kind) return op.m;
  return 0;
}

// How often a step runs per cycle; 0 for decode (the baseline, not part of the cycle).
int runs_per_cycle(const Trace& t, const Step& step) {
  if (step.name == "draft") return draft_forwards_per_cycle(t);
  if (step.name == "decode") return 0;
  return 1;
}

struct KvSummary {
  std::int64_t min = 0, max = 0;
  double mean = 0;
};

KvSummary kv_summary(const TraceMeta& m) {
  KvSummary k;
  if (!m.kv_lens.empty()) {
    k.min = *std::min_element(m.kv_lens.begin(), m.kv_lens.end());
    k.max = *std::max_element(m.kv_lens.begin(), m.kv_lens.end());
    double sum = 0;
    for (std::int64_t l : m.kv_lens) sum += static_cast<double>(l);
    k.mean = sum / static_cast<double>(m.kv_lens.size());
  } else if (m.kv_len) {
    k.min = k.max = *m.kv_len;
    k.mean = static_cast<double>(*m.kv_len);
  }
  return k;
}

int tree_depth(const SpeculativeConfig& c) {
  if (c.method == SpecMethod::none) return 0;
  if (c.mask == VerifyMask::chain) return c.num_draft_tokens - 1;
  const std::vector<int> d = tree_depths(c.parents);
  return d.empty() ? 0 : *std::max_element(d.begin(), d.end());
}

// What version 2 adds to `inspect --json`: the batch, the KV lengths and the speculative
// configuration; printed only for version-2 traces, so version-1 output stays as it was.
void add_version2_json(const Trace& t, nlohmann::ordered_json& out) {
  out["version"] = kTraceVersionLatest;
  out["batch"] = t.meta.batch_size();
  const KvSummary kv = kv_summary(t.meta);
  out["kv_lens"] = {{"min", kv.min}, {"mean", kv.mean}, {"max", kv.max}, {"ragged", !t.meta.kv_lens.empty()}};
  if (const auto& sc = t.meta.speculative) {
    nlohmann::ordered_json j;
    j["method"] = to_string(sc->method);
    if (sc->method != SpecMethod::none) {
      j["num_steps"] = sc->num_steps;
      j["eagle_topk"] = sc->eagle_topk;
      j["num_draft_tokens"] = sc->num_draft_tokens;
      j["mask"] = to_string(sc->mask);
      j["depth"] = tree_depth(*sc);
      if (sc->mask == VerifyMask::tree) j["parents"] = sc->parents;
    }
    out["speculative"] = j;
  }
}

void add_version2_step_json(const Trace& t, const Step& step, nlohmann::ordered_json& j) {
  j["rows"] = step_rows(step);
  j["runs_per_cycle"] = runs_per_cycle(t, step);
  if (const Op* a = step.first(OpKind::attention))
    j["attention"] = {{"batch", a->batch}, {"q_tokens", a->q_tokens}, {"mask", to_string(a->mask)}};
}

std::string version2_text(const Trace& t) {
  const KvSummary kv = kv_summary(t.meta);
  std::string out = fmt::format("version 2  batch {}  KV lengths min {} / mean {:.1f} / max {}{}\n", t.meta.batch_size(),
                                kv.min, kv.mean, kv.max, t.meta.kv_lens.empty() ? "" : " (ragged)");
  if (const auto& sc = t.meta.speculative) {
    if (sc->method == SpecMethod::none)
      out += "speculative none (plain decoding)\n";
    else
      out += fmt::format("speculative {}: {} steps, topk {}, {} draft tokens, {} mask (depth {})\n",
                         to_string(sc->method), sc->num_steps, sc->eagle_topk, sc->num_draft_tokens, to_string(sc->mask),
                         tree_depth(*sc));
    if (sc->mask == VerifyMask::tree) out += fmt::format("  tree parents [{}]\n", fmt::join(sc->parents, ", "));
  }
  return out;
}

std::string version2_step_text(const Trace& t, const Step& step) {
  std::string out = fmt::format("  rows {}", step_rows(step));
  const int runs = runs_per_cycle(t, step);
  out += runs > 0 ? fmt::format(", runs {} per cycle", runs) : ", the plain-decoding baseline";
  if (const Op* a = step.first(OpKind::attention))
    out += fmt::format(", attention {} request{} x {} token{} ({}{})", a->batch, a->batch == 1 ? "" : "s", a->q_tokens,
                       a->q_tokens == 1 ? "" : "s", to_string(a->mask), a->dtype == DType::fp8 ? ", fp8 KV cache" : "");
  return out + "\n";
}

}  // namespace

StepStats compute_stats(const Step& step) {
  StepStats s;
  std::set<int> layers;
  int first_layer = -1;
  for (const Op& op : step.ops)
    if (op.layer >= 0 && (first_layer < 0 || op.layer < first_layer)) first_layer = op.layer;
  for (const Op& op : step.ops) {
    if (op.layer >= 0) ++s.layer_ops_by_kind[static_cast<int>(op.kind)];
    if (op.layer == first_layer && first_layer >= 0 && op.kind == OpKind::elementwise)
      s.first_layer_elementwise.push_back(op.name);
    ++s.ops_by_kind[static_cast<int>(op.kind)];
    ++s.op_count;
    if (op.kind == OpKind::allreduce) ++s.allreduce_bytes[op.bytes];
    if (op.is_matmul()) {
      s.gemm_flops += op.flops();
      s.weight_bytes += op.weight_bytes();
      s.weight_bytes_by_dtype[to_string(op.dtype)] += op.weight_bytes();
    }
    if (op.us) { s.measured_us += *op.us; ++s.ops_with_us; }
    if (op.layer >= 0) layers.insert(op.layer);
  }
  s.layers = static_cast<int>(layers.size());
  return s;
}

nlohmann::ordered_json stats_to_json(const Trace& trace) {
  nlohmann::ordered_json out;
  out["model"] = trace.meta.model;
  out["tp"] = trace.meta.tp;
  out["tokens"] = trace.meta.tokens;
  out["source"] = trace.meta.source;
  if (trace.meta.engine) out["engine"] = to_string(*trace.meta.engine);
  const bool version2 = required_version(trace) >= kTraceVersionLatest;
  if (version2) add_version2_json(trace, out);
  nlohmann::ordered_json steps = nlohmann::ordered_json::object();
  for (const Step& step : trace.steps) {
    if (steps.contains(step.name)) continue;  // first step of each name, as the engine uses
    StepStats s = compute_stats(step);
    nlohmann::ordered_json j;
    j["op_count"] = s.op_count;
    j["layers"] = s.layers;
    nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
    for (int k = 0; k < kOpKindCount; ++k)
      if (s.ops_by_kind[k]) kinds[to_string(static_cast<OpKind>(k))] = s.ops_by_kind[k];
    j["ops_by_kind"] = kinds;
    if (s.layers > 0) {
      nlohmann::ordered_json per_layer = nlohmann::ordered_json::object();
      for (int k = 0; k < kOpKindCount; ++k)
        if (s.layer_ops_by_kind[k]) per_layer[to_string(static_cast<OpKind>(k))] = static_cast<double>(s.layer_ops_by_kind[k]) / s.layers;
      j["ops_per_layer_by_kind"] = per_layer;
    }
    nlohmann::ordered_json ar = nlohmann::ordered_json::object();
    for (auto [bytes, count] : s.allreduce_bytes) ar[std::to_string(bytes)] = count;
    j["allreduce_count"] = s.ops_by_kind[static_cast<int>(OpKind::allreduce)];
    j["allreduce_bytes"] = ar;
    j["gemm_flops"] = s.gemm_flops;
    j["weight_bytes"] = s.weight_bytes;
    if (s.ops_with_us) j["measured_op_us"] = s.measured_us;
    if (step.measured_us) j["measured_step_us"] = *step.measured_us;
    if (version2) add_version2_step_json(trace, step, j);
    steps[step.name] = j;
  }
  out["steps"] = steps;
  return out;
}

std::string stats_to_text(const Trace& trace) {
  std::string out = fmt::format("model {}  tp {}  tokens {}  source {}\n", trace.meta.model,
                                trace.meta.tp, trace.meta.tokens, trace.meta.source);
  if (trace.meta.engine) out += fmt::format("engine {}: {}\n", to_string(*trace.meta.engine), modelled_version(*trace.meta.engine));
  const bool version2 = required_version(trace) >= kTraceVersionLatest;
  if (version2) out += version2_text(trace);
  std::set<std::string> seen;
  for (const Step& step : trace.steps) {
    if (!seen.insert(step.name).second) continue;
    StepStats s = compute_stats(step);
    out += fmt::format("\nstep {}: {} ops over {} layers", step.name, s.op_count, s.layers);
    if (step.measured_us) out += fmt::format(", measured {:.1f} us", *step.measured_us);
    out += "\n";
    if (version2) out += version2_step_text(trace, step);
    out += fmt::format("  {:<14} {:>6}{}\n", "kind", "count", s.layers > 0 ? "  per layer" : "");
    for (int k = 0; k < kOpKindCount; ++k) {
      if (!s.ops_by_kind[k]) continue;
      out += fmt::format("  {:<14} {:>6}", to_string(static_cast<OpKind>(k)), s.ops_by_kind[k]);
      if (s.layers > 0 && s.layer_ops_by_kind[k] > 0)
        out += fmt::format("  {:>9.4g}", static_cast<double>(s.layer_ops_by_kind[k]) / s.layers);
      out += "\n";
    }
    if (!s.first_layer_elementwise.empty())
      out += fmt::format("  elementwise kernels of the first layer: {}\n", fmt::join(s.first_layer_elementwise, ", "));
    for (auto [bytes, count] : s.allreduce_bytes)
      out += fmt::format("  allreduce {:>10} B x {}\n", bytes, count);
    out += fmt::format("  GEMM {:.3f} GFLOP, weights read {:.3f} GB", s.gemm_flops / 1e9, s.weight_bytes / 1e9);
    if (s.weight_bytes_by_dtype.size() > 1) {  // a checkpoint with layer classes in different formats
      std::vector<std::string> parts;
      for (const auto& [dtype, bytes] : s.weight_bytes_by_dtype) parts.push_back(fmt::format("{} {:.3f}", dtype, bytes / 1e9));
      out += fmt::format(" ({})", fmt::join(parts, ", "));
    }
    out += "\n";
    if (s.ops_with_us) out += fmt::format("  measured op time {:.1f} us over {} ops\n", s.measured_us, s.ops_with_us);
  }
  return out;
}

}  // namespace eaglesim
