// The strategies in report order: the order `--strategy all` expands to, reports list and
// bench-comm measures. A built-in strategy is one line here plus its spec in its cost-model file;
// one from outside the library comes in through register_strategy.
#include <stdexcept>

#include <fmt/format.h>

#include "comm/strategies.hpp"
#include "comm/strategy_spec.hpp"

namespace eaglesim {

namespace {

struct SpecRegistry {
  std::vector<StrategySpec> specs;
  bool read = false;  // once read, references into the table are out: no more registrations
};

SpecRegistry& spec_registry() {
  static SpecRegistry r{{
      nccl_spec(),
      oneshot_spec(),
      oneshot_push_spec(),
      twoshot_spec(),
      fused_spec(),
      quant_spec(),
      ideal_spec(),
      auto_spec(),
      sglang_spec(),
      vllm_spec(),
      reference_spec(),
  }};
  return r;
}

}  // namespace

const std::vector<StrategySpec>& strategy_specs() {
  SpecRegistry& r = spec_registry();
  r.read = true;
  return r.specs;
}

const StrategySpec* find_strategy_spec(std::string_view name) {
  for (const StrategySpec& s : strategy_specs())
    if (s.facts.name == name) return &s;
  return nullptr;
}

void register_strategy(const StrategySpec& spec) {
  SpecRegistry& r = spec_registry();
  if (spec.facts.name.empty()) throw std::logic_error("register_strategy: a spec without a name");
  for (const StrategySpec& s : r.specs)
    if (s.facts.name == spec.facts.name)
      throw std::logic_error(fmt::format("register_strategy(\"{}\"): the name is taken", spec.facts.name));
  if (r.read)
    throw std::logic_error(fmt::format("register_strategy(\"{}\"): the strategy table has already been read",
                                       spec.facts.name));
  r.specs.push_back(spec);
}

namespace {

StrategyFacts facts_with(std::string_view name, StrategyRuntime runtime, unsigned flags) {
  StrategyFacts f;
  f.name = name;
  f.runtime = runtime;
  f.calibratable = flags & kCalibratable;
  f.fuses_residual_norm = flags & kFusesResidualNorm;
  f.exact = !(flags & kLossy);
  f.runs = !(flags & kBenchCommOnly);
  f.lower_bound = flags & kLowerBound;
  f.selector = flags & kSelector;
  f.engine = (flags & kEngineDispatch) == kEngineDispatch;
  f.correctness_baseline = flags & kCorrectnessBaseline;
  return f;
}

}  // namespace

StrategyFacts nccl_facts(std::string_view name, unsigned flags) {
  return facts_with(name, StrategyRuntime::nccl, flags);
}

StrategyFacts own_kernel_facts(std::string_view name, unsigned flags) {
  StrategyFacts f = facts_with(name, StrategyRuntime::own_kernel, flags);
  f.needs_p2p = true;
  f.max_bytes = kMaxCustomBytes;
  f.byte_multiple = kCustomByteMultiple;
  return f;
}

StrategyFacts no_kernel_facts(std::string_view name, unsigned flags) {
  return facts_with(name, StrategyRuntime::none, flags);
}

std::string describe_strategy(const StrategySpec& spec) {
  const StrategyFacts& f = spec.facts;
  std::string d(spec.description);
  if (f.lower_bound || f.selector) return d;
  if (f.fuses_residual_norm) d += ", with the residual add and RMSNorm that follow in the same kernel";
  if (!f.exact) d += "; lossy: changes the numbers";
  if (f.needs_p2p && f.max_bytes > 0) d += fmt::format("; needs P2P, messages up to {} MiB", f.max_bytes >> 20);
  return d;
}

}  // namespace eaglesim
