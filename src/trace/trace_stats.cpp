#include "trace/trace_stats.hpp"

#include <set>

#include <fmt/format.h>

namespace eaglesim {

StepStats compute_stats(const Step& step) {
  StepStats s;
  std::set<int> layers;
  for (const Op& op : step.ops) {
    ++s.ops_by_kind[static_cast<int>(op.kind)];
    ++s.op_count;
    if (op.kind == OpKind::allreduce) ++s.allreduce_bytes[op.bytes];
    if (op.is_matmul()) {
      s.gemm_flops += op.flops();
      s.weight_bytes += op.weight_bytes();
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
    nlohmann::ordered_json ar = nlohmann::ordered_json::object();
    for (auto [bytes, count] : s.allreduce_bytes) ar[std::to_string(bytes)] = count;
    j["allreduce_count"] = s.ops_by_kind[static_cast<int>(OpKind::allreduce)];
    j["allreduce_bytes"] = ar;
    j["gemm_flops"] = s.gemm_flops;
    j["weight_bytes"] = s.weight_bytes;
    if (s.ops_with_us) j["measured_op_us"] = s.measured_us;
    if (step.measured_us) j["measured_step_us"] = *step.measured_us;
    steps[step.name] = j;
  }
  out["steps"] = steps;
  return out;
}

std::string stats_to_text(const Trace& trace) {
  std::string out = fmt::format("model {}  tp {}  tokens {}  source {}\n", trace.meta.model,
                                trace.meta.tp, trace.meta.tokens, trace.meta.source);
  std::set<std::string> seen;
  for (const Step& step : trace.steps) {
    if (!seen.insert(step.name).second) continue;
    StepStats s = compute_stats(step);
    out += fmt::format("\nstep {}: {} ops over {} layers", step.name, s.op_count, s.layers);
    if (step.measured_us) out += fmt::format(", measured {:.1f} us", *step.measured_us);
    out += "\n";
    out += fmt::format("  {:<14} {:>6}\n", "kind", "count");
    for (int k = 0; k < kOpKindCount; ++k)
      if (s.ops_by_kind[k]) out += fmt::format("  {:<14} {:>6}\n", to_string(static_cast<OpKind>(k)), s.ops_by_kind[k]);
    for (auto [bytes, count] : s.allreduce_bytes)
      out += fmt::format("  allreduce {:>10} B x {}\n", bytes, count);
    out += fmt::format("  GEMM {:.3f} GFLOP, weights read {:.3f} GB\n", s.gemm_flops / 1e9, s.weight_bytes / 1e9);
    if (s.ops_with_us) out += fmt::format("  measured op time {:.1f} us over {} ops\n", s.measured_us, s.ops_with_us);
  }
  return out;
}

}  // namespace eaglesim
