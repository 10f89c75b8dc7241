#pragma once
// bench-comm --backend sim: the table the GPU command measures, predicted by the strategies' cost
// models on a topology. Per size and strategy: back to back = the model without the topology's
// calibration tables; in context = the model with them (what a step is priced at; the same
// figure when the topology carries no table for the strategy). An engine strategy's cell is the
// path that engine takes for a plain allreduce of that size (no RMSNorm after it, so no fusion).
#include <cstdint>
#include <string>
#include <vector>

#include "comm/cost_model.hpp"
#include "domain/bench_comm_results.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct CommBenchPrediction {
  const Topology* topo = nullptr;       // required
  int ranks = 0;                        // 0: every GPU of the topology
  std::vector<std::string> strategies;  // names the registry prices (comm/cost_model.hpp)
  std::vector<std::int64_t> sizes;      // bytes, multiples of the element size
  DType dtype = DType::bf16;
  NcclOptions nccl;
  const ServingEngineOptions* engine = nullptr;
};

// InputError for a rank count the topology does not have.
CommBenchResult predict_comm_bench(const CommBenchPrediction& p);

// The ranks a predicted bench-comm runs over: `requested`, or every GPU of `topo` for 0. A
// SettingError naming --ranks outside 2..GPUs or for ranks that span the nodes unevenly.
int predicted_bench_ranks(const Topology& topo, int requested);

// The strategies --backend sim takes, in table order: every one with a cost model but the lower
// bound (free, so its bandwidth is infinite): the GPU command's list but its correctness baseline,
// plus the selectors and the engines. Its `all` and its default.
std::vector<std::string> predicted_bench_strategies();

}  // namespace eaglesim
