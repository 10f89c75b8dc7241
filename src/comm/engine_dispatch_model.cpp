// `sglang` and `vllm`: each allreduce of a step priced as the path that engine takes for it on
// the topology (comm/engine_dispatch.hpp), by the cost model of the eaglesim strategy that runs
// that path, with the path and the reason in the plan for the report.
#include <fmt/format.h>

#include "comm/cost_model.hpp"
#include "comm/engine_dispatch.hpp"
#include "comm/p2p_kernel_model.hpp"
#include "comm/strategies.hpp"
#include "comm/strategy_facts.hpp"

namespace eaglesim {

namespace {

class EngineDispatchCostModel final : public CommCostModel {
 public:
  explicit EngineDispatchCostModel(std::string engine) : engine_(std::move(engine)) {}
  std::string name() const override { return engine_; }
  // The engine falls back to NCCL for whatever its other paths refuse, so it runs wherever NCCL does.
  CommSupport supports(const Topology& topo, int ranks, std::int64_t bytes) const override {
    return find_cost_model(nccl_name_).supports(topo, ranks, bytes);
  }
  CommCost cost(const CommQuery& q) const override { return plan(CommCall{q, false, 0}).cost; }

  CommPlan plan(const CommCall& call) const override {
    const CommQuery& q = call.query;
    if (!q.topo) throw std::invalid_argument("CommQuery without a topology");
    const AllreduceCall c{q.ranks, q.bytes, q.dtype, call.norm_follows, call.rows};
    const DispatchChoice d = dispatch_allreduce(engine_, machine_facts(*q.topo), c, q.engine);
    const CommCostModel& runs = find_cost_model(d.strategy);
    CommPlan p;
    p.cost = runs.cost(q);
    p.cost.detail = fmt::format("{} ({})", d.path, p.cost.detail);
    if (d.copies_input && q.ranks > 1) {
      // cudaMemcpyAsync device to device: a launch, then the buffer read and written once.
      p.cost.us += q.topo->gpu.launch_gap_us + local_memory_us(*q.topo, 2.0 * static_cast<double>(q.bytes));
      p.cost.detail += " + input copy";
    }
    p.fuses = eaglesim::fuses_residual_norm(d.strategy) && call.norm_follows;
    p.model = d.strategy;
    p.path = d.path;
    p.reason = d.reason;
    return p;
  }

  std::vector<std::string> setup_notes(const CommQuery& q) const override {
    if (!q.topo) return {};
    return {engine_setup(engine_, machine_facts(*q.topo), q.ranks, q.engine)};
  }

 private:
  std::string engine_;
  std::string nccl_name_ = nccl_strategy();
};

}  // namespace

// The serving engines' own dispatch: per allreduce one of nccl, oneshot, twoshot, fused
// (comm/engine_dispatch.hpp). Exact: every path they pick is. Not part of `all`: asked for by name.
const StrategySpec& sglang_spec() {
  static const StrategySpec spec{no_kernel_facts("sglang", kEngineDispatch), kSelectorDescription,
                                 [] { return make_cost_model_of<EngineDispatchCostModel>("sglang"); }};
  return spec;
}
const StrategySpec& vllm_spec() {
  static const StrategySpec spec{no_kernel_facts("vllm", kEngineDispatch), kSelectorDescription,
                                 [] { return make_cost_model_of<EngineDispatchCostModel>("vllm"); }};
  return spec;
}

}  // namespace eaglesim
