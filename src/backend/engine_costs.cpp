#include "backend/engine_costs.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost/cuda_graph_limit.hpp"

namespace eaglesim {

namespace {

void apply(EngineProfile& p, const ServingEngineOptions& options, const std::string& key) {
  auto it = options.values.find(key);
  if (it == options.values.end()) return;
  for (const auto& [name, value] : it->second)
    if (is_engine_profile_option(name)) set_engine_profile_option(p, name, value, key + "." + name + "=" + value);
}

bool ends_in_host_sync(const Step& step) {
  return std::any_of(step.ops.begin(), step.ops.end(), [](const Op& op) { return op.kind == OpKind::host_sync; });
}

void add_host(StepResult& s, double us) {
  if (us <= 0) return;
  s.step_us += us;
  s.step_us_min += us;
  s.step_us_max += us;
  s.compute_us += us;
  s.kind_us[static_cast<std::size_t>(OpKind::host_sync)] += us;
}

}  // namespace

EngineProfile engine_profile(ServingEngine engine, const ServingEngineOptions& options) {
  EngineProfile p = default_engine_profile(engine);
  apply(p, options, kEveryEngine);
  apply(p, options, to_string(engine));
  return p;
}

std::optional<ServingEngine> generated_engine(const Trace& trace) {
  if (trace.meta.source != "generated") return std::nullopt;
  return trace.meta.engine;
}

std::optional<ServingEngine> host_cost_engine(const Trace& trace) {
  const Step* verify = trace.find_step("verify");
  if (!verify || !ends_in_host_sync(*verify)) return std::nullopt;
  return generated_engine(trace);
}

std::string add_engine_host_costs(StrategyResult& r, const EngineProfile& p, int draft_forwards) {
  if (!r.supported) return "";
  const double cycle = p.cycle_host_us + p.draft_step_host_us * std::max(0, draft_forwards);
  add_host(r.verify, cycle);
  double plain_shown = 0;
  if (r.decode) {
    plain_shown = p.plain_overlap ? std::max(0.0, p.plain_host_us - r.decode->step_us) : p.plain_host_us;
    add_host(*r.decode, plain_shown);
  }
  return fmt::format("{} host work (engine profile, docs/engine-steps.md): {:.0f} us per speculative cycle ({:.0f} + "
                     "{:.0f} per draft step), not overlapped; {:.0f} us per plain forward{}",
                     to_string(p.engine), cycle, p.cycle_host_us, p.draft_step_host_us, p.plain_host_us,
                     p.plain_overlap ? fmt::format(", overlapped with the forward ({:.0f} us shows)", plain_shown)
                                     : std::string(", not overlapped"));
}

std::string add_eager_launch_costs(StrategyResult& r, const Trace& trace, const EngineProfile& p, int tp,
                                   double gpu_mem_gb) {
  if (!r.supported) return "";
  std::vector<std::string> eager;
  std::string why;
  auto apply = [&](const char* name, StepResult* result) {
    const Step* step = trace.find_step(name);
    if (!result || !step) return;
    const std::int64_t kernels = std::count_if(step->ops.begin(), step->ops.end(),
                                               [](const Op& op) { return op.kind != OpKind::host_sync; });
    const Op* attention = step->first(OpKind::attention);
    const std::int64_t tokens_per_request = attention ? attention->q_tokens : 1;
    const GraphDecision d = cuda_graph_decision(p, trace.meta.batch_size(), tokens_per_request, tp, gpu_mem_gb);
    if (d.graph) return;
    why = d.why;
    const double extra = eager_launch_excess_us(p, kernels, result->step_us);
    add_host(*result, extra);
    eager.push_back(fmt::format("{} ({} kernels x {:.1f} us = {:.0f} us of launches{})", name, kernels, p.eager_launch_us,
                                static_cast<double>(kernels) * p.eager_launch_us,
                                extra > 0 ? fmt::format(", {:.0f} us beyond its GPU time", extra) : ", under its GPU time"));
  };
  apply("verify", &r.verify);
  apply("draft", r.draft ? &*r.draft : nullptr);
  apply("draft_extend", r.draft_extend ? &*r.draft_extend : nullptr);
  apply("decode", r.decode ? &*r.decode : nullptr);
  if (eager.empty()) return "";
  return fmt::format("{}: batch {} runs eagerly ({}): {}", to_string(p.engine), trace.meta.batch_size(), why,
                     fmt::join(eager, "; "));
}

}  // namespace eaglesim
