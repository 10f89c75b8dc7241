#pragma once
// bench-comm --backend sim --a2a: expert parallelism's MoE dispatch and combine priced over token
// counts by the all-to-all strategies (comm/all_to_all.hpp) on a topology, the way DeepEP's tests
// sweep them. A strategy that cannot run a token count (deepep_ll above its per-rank limit) gets
// the reason in its cell rather than failing the table.
#include <cstdint>
#include <string>
#include <vector>

#include "domain/a2a_bench_results.hpp"
#include "topology/topology.hpp"

namespace eaglesim {

struct AllToAllBenchPrediction {
  const Topology* topo = nullptr;       // required
  int ranks = 0;                        // 0: every GPU of the topology
  std::vector<std::string> strategies;  // all-to-all strategy names
  std::vector<std::int64_t> tokens;     // a rank's, per row
  std::int64_t hidden = 0;
  int top_k = 0;
  std::int64_t experts = 0;
  int max_nodes_per_token = 0;          // 0: routing over every node
  DType dispatch_dtype = DType::fp8;    // fp8 or bf16; the combine is bf16
};

// SettingError (ranks) for a rank count the topology cannot place.
AllToAllBenchResult predict_all_to_all_bench(const AllToAllBenchPrediction& p);

}  // namespace eaglesim
