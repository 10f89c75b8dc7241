#include "backend/engine_costs.hpp"

#include <algorithm>

#include <fmt/format.h>

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

}  // namespace eaglesim
