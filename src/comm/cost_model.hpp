#pragma once
// The allreduce strategies, one interface. Each declares what it supports and prices an
// allreduce of a given size on a topology (the simulator's cost model). The real CUDA
// implementations live in src/cuda/ and kernels/ and are looked up by the same name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/engine_options.hpp"
#include "core/dtype.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

// Forcing knobs for the NCCL model (--nccl-algo / --nccl-proto); empty = choose as NCCL would.
struct NcclOptions {
  std::string algo;   // "", ring, tree
  std::string proto;  // "", LL, LL128, Simple
  int channels = 0;   // 0 = as NCCL would
};

struct CommSupport {
  bool ok = true;
  std::string reason;  // why not, in words a user understands
};

struct CommCost {
  double us = 0;             // cost of one allreduce, from the last rank's arrival to completion
  std::string detail;        // e.g. "ring/LL 2ch", "oneshot pull", "calibrated"
  bool calibrated = false;   // from a measured table
  bool extrapolated = false; // outside the measured table: model used
};

struct CommQuery {
  const Topology* topo = nullptr;
  int ranks = 1;
  std::int64_t bytes = 0;
  DType dtype = DType::bf16;
  NcclOptions nccl;
  const ServingEngineOptions* engine = nullptr;  // the engine strategies' options (--engine-option); null: defaults
};

// One allreduce of a step as the step shows it: a strategy that decides per call (an engine's
// dispatch) may fuse it with the residual add + RMSNorm after it, or not, by size and rows.
struct CommCall {
  CommQuery query;              // bytes and dtype filled
  bool norm_follows = false;    // an RMSNorm (after an optional residual add) follows it: fusable
  std::int64_t rows = 0;        // that RMSNorm's tokens (0 when none follows)
};

// What one allreduce of a step costs and runs as.
struct CommPlan {
  CommCost cost;
  bool fuses = false;   // absorbs the residual add + RMSNorm after it
  std::string model;    // the strategy whose cost model (and CUDA kernel) runs it: the strategy
                        // itself, or the one an engine's dispatch picked
  std::string path;     // engine strategies: the path as the engine names it; empty otherwise
  std::string reason;   // engine strategies: why the engine takes that path here
};

class CommCostModel {
 public:
  virtual ~CommCostModel() = default;
  virtual std::string name() const = 0;
  virtual CommSupport supports(const Topology& topo, int ranks, std::int64_t bytes) const = 0;
  virtual CommCost cost(const CommQuery& q) const = 0;
  // The allreduce absorbs the residual_add + rmsnorm that follow it in the trace (the
  // strategy table's fact for this name; a test double may say otherwise).
  virtual bool fuses_residual_norm() const;
  // One call of a step: cost(call.query), fused when fuses_residual_norm() and a norm follows.
  // The engine strategies decide per call instead.
  virtual CommPlan plan(const CommCall& call) const;
  // What the strategy decides once for a whole step on q's topology and ranks, for the report's
  // notes (the engine strategies: their fusion, custom allreduce and symmetric-memory setup).
  virtual std::vector<std::string> setup_notes(const CommQuery& q) const;
};

// Registry keyed by name: the runnable strategies of comm/strategy_facts.hpp, in its order.
const CommCostModel& find_cost_model(const std::string& name);  // InputError listing known names
// Also the bench-comm variants with a cost model (oneshot_push), for bench-comm --backend sim.
const CommCostModel& find_priced_cost_model(const std::string& name);
std::vector<std::string> cost_model_names();
// Parses "nccl,oneshot" or "all" into names; InputError on unknown names. `all` is eaglesim's own
// strategies (all_strategy_names()); the engines' dispatch (sglang, vllm) is asked for by name.
std::vector<std::string> parse_strategy_list(const std::string& list);

}  // namespace eaglesim
