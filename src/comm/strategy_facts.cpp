// The strategy table: the facts rows of the specs (comm/strategy_spec.hpp), in their order, which
// is the order `--strategy all` expands to, reports list and bench-comm measures.
#include "comm/strategy_facts.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/strategy_spec.hpp"
#include "core/errors.hpp"

namespace eaglesim {

namespace {

template <typename Pred>
std::vector<std::string> names_where(Pred pred) {
  std::vector<std::string> out;
  for (const StrategyFacts& f : strategy_table())
    if (pred(f)) out.emplace_back(f.name);
  return out;
}

std::string single_name_where(bool StrategyFacts::*flag) {
  for (const StrategyFacts& f : strategy_table())
    if (f.*flag) return std::string(f.name);
  throw std::logic_error("strategy table: no entry with the requested flag");
}

}  // namespace

const std::vector<StrategyFacts>& strategy_table() {
  static const std::vector<StrategyFacts> table = [] {
    std::vector<StrategyFacts> rows;
    for (const StrategySpec& spec : strategy_specs()) {
      rows.push_back(spec.facts);
      rows.back().priced = spec.make_cost_model != nullptr;
    }
    return rows;
  }();
  return table;
}

const StrategyFacts* find_strategy_facts(std::string_view name) {
  for (const StrategyFacts& f : strategy_table())
    if (f.name == name) return &f;
  return nullptr;
}

namespace {
bool fact(std::string_view name, bool StrategyFacts::*flag) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->*flag;
}
}  // namespace

const StrategyFacts& strategy_facts(std::string_view name) {
  if (const StrategyFacts* f = find_strategy_facts(name)) return *f;
  throw InputError(fmt::format("unknown strategy \"{}\" (known: {})", name, fmt::join(runnable_strategy_names(), ", ")));
}

bool is_lower_bound(std::string_view name) { return fact(name, &StrategyFacts::lower_bound); }
bool fuses_residual_norm(std::string_view name) { return fact(name, &StrategyFacts::fuses_residual_norm); }
bool is_exact(std::string_view name) { return fact(name, &StrategyFacts::exact); }
bool may_be_picked(std::string_view name, bool allow_lossy) {
  return !is_lower_bound(name) && (allow_lossy || is_exact(name));
}
bool is_calibratable(std::string_view name) { return fact(name, &StrategyFacts::calibratable); }
bool uses_p2p_kernels(std::string_view name) { return fact(name, &StrategyFacts::needs_p2p); }
bool is_nccl(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->runtime == StrategyRuntime::nccl;
}

bool fits_message_range(std::string_view name, std::int64_t bytes) {
  const StrategyFacts* f = find_strategy_facts(name);
  if (!f) return true;
  return (f->max_bytes == 0 || bytes <= f->max_bytes) && bytes % f->byte_multiple == 0;
}

bool competes_as_plain_allreduce(std::string_view name) {
  const StrategyFacts* f = find_strategy_facts(name);
  return f && f->exact && !f->fuses_residual_norm && !f->lower_bound && !f->selector &&
         !f->correctness_baseline;
}
bool is_engine_dispatch(std::string_view name) { return fact(name, &StrategyFacts::engine); }

std::vector<std::string> runnable_strategy_names() {
  return names_where([](const StrategyFacts& f) { return f.runs; });
}
std::vector<std::string> priced_strategy_names() {
  return names_where([](const StrategyFacts& f) { return f.priced; });
}
std::vector<std::string> all_strategy_names() {
  return names_where([](const StrategyFacts& f) { return f.runs && !f.engine; });
}
std::vector<std::string> engine_dispatch_names() {
  return names_where([](const StrategyFacts& f) { return f.engine; });
}
std::vector<std::string> calibratable_strategy_names() {
  return names_where([](const StrategyFacts& f) { return f.calibratable; });
}
std::vector<std::string> bench_comm_names() {
  return names_where([](const StrategyFacts& f) { return f.runtime != StrategyRuntime::none; });
}
std::string lower_bound_strategy() { return single_name_where(&StrategyFacts::lower_bound); }
std::string nccl_strategy() {
  for (const StrategyFacts& f : strategy_table())
    if (f.runtime == StrategyRuntime::nccl) return std::string(f.name);
  throw std::logic_error("strategy table: no NCCL entry");
}

}  // namespace eaglesim
