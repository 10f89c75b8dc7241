// The cost-model registry: one model per spec that has one (comm/strategy_spec.hpp), in the
// specs' order (the order `all` expands to and reports list). run, sweep and fidelity find the runnable ones;
// bench-comm --backend sim also the bench-comm variants with a model (oneshot_push).
#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "comm/strategy_spec.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"

namespace eaglesim {

namespace {

const std::vector<std::unique_ptr<CommCostModel>>& registry() {
  static const std::vector<std::unique_ptr<CommCostModel>> all = [] {
    std::vector<std::unique_ptr<CommCostModel>> v;
    for (const StrategySpec& spec : strategy_specs()) {
      if (!spec.make_cost_model) continue;
      v.push_back(spec.make_cost_model());
      if (v.back()->name() != spec.facts.name)
        throw std::logic_error(fmt::format("strategy \"{}\": its cost model is named \"{}\"", spec.facts.name,
                                           v.back()->name()));
    }
    return v;
  }();
  return all;
}

std::string known_list() { return fmt::format("{}", fmt::join(cost_model_names(), ", ")); }

}  // namespace

bool CommCostModel::fuses_residual_norm() const { return eaglesim::fuses_residual_norm(name()); }

CommPlan CommCostModel::plan(const CommCall& call) const {
  CommPlan p;
  p.cost = cost(call.query);
  p.fuses = fuses_residual_norm() && call.norm_follows;
  p.model = name();
  return p;
}

std::vector<std::string> CommCostModel::setup_notes(const CommQuery&) const { return {}; }

std::vector<std::string> cost_model_names() { return runnable_strategy_names(); }

const CommCostModel& find_priced_cost_model(const std::string& name) {
  for (const auto& c : registry())
    if (c->name() == name) return *c;
  throw InputError(fmt::format("unknown strategy \"{}\" (known: {})", name, known_list()));
}

const CommCostModel& find_cost_model(const std::string& name) {
  const StrategyFacts* f = find_strategy_facts(name);
  if (!f || !f->runs) throw InputError(fmt::format("unknown strategy \"{}\" (known: {})", name, known_list()));
  return find_priced_cost_model(name);
}

std::vector<std::string> parse_strategy_list(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& item : split_comma_list(setting_name(Setting::strategy), list)) {
    if (item == "all") {
      for (const auto& n : all_strategy_names())
        if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    } else {
      find_cost_model(item);  // throws with the known names
      if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    }
  }
  return out;
}

}  // namespace eaglesim
