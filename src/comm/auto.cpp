// `auto`: per message size, the cheapest supported exact strategy (nccl, oneshot, twoshot), as
// a selector like mscclpp's or vLLM's would pick. Excluded: ideal (not real), quant (changes the
// numbers, so it must be asked for by name) and fused (changes which ops run; never cheaper
// than oneshot on the allreduce alone). The detail names the one chosen.
#include <limits>
#include <string>
#include <vector>

#include "comm/modelled_cost_model.hpp"
#include "comm/strategies.hpp"
#include "comm/strategy_facts.hpp"

namespace eaglesim {

namespace {

// The candidates: every runnable, exact strategy that neither fuses other ops, bounds, nor selects
// (nccl, oneshot, twoshot), in table order. Named strings, not temporaries: find_cost_model
// takes a const std::string&, and GCC 13's -Wdangling-reference flags a reference bound from a
// temporary (a false alarm, as the registry owns the communicator).
const std::vector<std::string>& candidates() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const StrategyFacts& f : strategy_table())
      if (f.runs && f.exact && !f.fuses_residual_norm && !f.lower_bound && !f.selector) v.emplace_back(f.name);
    return v;
  }();
  return names;
}

class AutoCostModel final : public ModelledCostModel {
 public:
  std::string name() const override { return "auto"; }

 protected:
  CommSupport strategy_supports(const Topology& t, int ranks, std::int64_t bytes) const override {
    std::string reasons;
    for (const std::string& c : candidates()) {
      CommSupport s = find_cost_model(c).supports(t, ranks, bytes);
      if (s.ok) return {};
      reasons += (reasons.empty() ? "" : "; ") + c + ": " + s.reason;
    }
    return {false, "no candidate strategy supports it (" + reasons + ")"};
  }
  CommCost model(const CommQuery& q) const override {
    CommCost best;
    best.us = std::numeric_limits<double>::infinity();
    std::string chosen;
    for (const std::string& c : candidates()) {
      const CommCostModel& comm = find_cost_model(c);
      if (!comm.supports(*q.topo, q.ranks, q.bytes).ok) continue;
      CommCost cost = comm.cost(q);
      if (cost.us < best.us) { best = cost; chosen = c; }
    }
    best.detail = chosen + " (" + best.detail + ")";
    return best;
  }
};

}  // namespace

const StrategySpec& auto_spec() {
  static const StrategySpec spec{no_kernel_facts("auto", kSelector), kSelectorDescription,
                                 make_cost_model<AutoCostModel>};
  return spec;
}

}  // namespace eaglesim
