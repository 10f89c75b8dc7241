#pragma once
// One allreduce strategy as a plug-in: its facts (comm/strategy_facts.hpp), what it is in words,
// and its cost model. A strategy's cost-model file defines its spec; comm/strategy_list.cpp puts
// the built-in specs in report order; register_strategy adds one from outside the library (a
// test, a plug-in) before the table is first read. The CUDA part registers the kernel that runs
// a strategy against the same name (cuda/comm/p2p_allreduce_kernel.cuh). docs/strategies.md
// shows how to add one.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"

namespace eaglesim {

struct StrategySpec {
  // The table row; `priced` is filled from make_cost_model, not by the spec's author.
  StrategyFacts facts;
  // What it is, in one phrase a user reads in the report ("one-shot over P2P: ..."). The report
  // adds what the facts say (fuses the norm, lossy, P2P and its message limit).
  std::string_view description;
  // Its cost model (the simulator's price of one allreduce); null for an entry that is measured
  // but not priced (bench-comm's correctness baseline). The model's name() is the spec's name.
  std::unique_ptr<CommCostModel> (*make_cost_model)() = nullptr;
};

// What a spec's facts say beyond the defaults (runs as a --strategy, exact, no fusion), as flags.
enum StrategyFlag : unsigned {
  kCalibratable = 1u << 0,         // `calibrate` measures it; a topology may carry its tables
  kFusesResidualNorm = 1u << 1,    // absorbs the residual add + RMSNorm after the allreduce
  kLossy = 1u << 2,                // changes the numbers (not exact)
  kBenchCommOnly = 1u << 3,        // a bench-comm variant, not a --strategy
  kLowerBound = 1u << 4,           // not deployable: what communication costs
  kSelector = 1u << 5,             // picks another strategy per message size
  kEngineDispatch = kSelector | 1u << 6,  // a serving engine's own dispatch (a selector, not in `all`)
  kCorrectnessBaseline = 1u << 7,  // bench-comm's plain kernel
};

// The facts of a strategy run by ncclAllReduce, by one of our P2P kernels (P2P, 2/4/8 ranks,
// messages in 16-byte units within the registered buffer) or by no kernel of its own.
StrategyFacts nccl_facts(std::string_view name, unsigned flags);
StrategyFacts own_kernel_facts(std::string_view name, unsigned flags);
StrategyFacts no_kernel_facts(std::string_view name, unsigned flags);

// The description of every selector (auto and the serving engines' dispatch): the report shows it
// alone (describe_strategy), the facts of the strategies picked say the rest.
inline constexpr std::string_view kSelectorDescription = "picks one of the other strategies per message size";

// A spec's cost-model factory for a model built without arguments, and the model built with some
// (inside a capture-less lambda).
template <class Model>
std::unique_ptr<CommCostModel> make_cost_model() {
  return std::make_unique<Model>();
}
template <class Model, class... Args>
std::unique_ptr<CommCostModel> make_cost_model_of(Args&&... args) {
  return std::make_unique<Model>(std::forward<Args>(args)...);
}

// Every spec, built-in ones in report order (the order `all` expands to), then registered ones.
const std::vector<StrategySpec>& strategy_specs();
// nullptr for unknown names.
const StrategySpec* find_strategy_spec(std::string_view name);

// Adds a strategy defined outside the library. Call it before anything reads the strategy table
// (from a static initialiser of the binary that links it): the table is read-only once read, so
// a late registration, a repeated name or a nameless spec is a std::logic_error.
void register_strategy(const StrategySpec& spec);

// The description the report and docs show: the spec's phrase, then what the facts add (fuses
// the residual add + RMSNorm, lossy, P2P with its message limit); a bound or a selector's phrase
// alone.
std::string describe_strategy(const StrategySpec& spec);

}  // namespace eaglesim
