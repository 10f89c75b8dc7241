#pragma once
// What bench-comm --a2a reports (predicted by the all-to-all models on a topology): per token
// count and strategy, the MoE dispatch's and combine's time per call and the GB/s each strategy's
// own benchmark would print for it. Printed by report/a2a_bench_printer.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace eaglesim {

struct AllToAllBenchPhase {
  double us = 0;
  double gbs = 0;  // counted bytes / us, as the strategy's own test counts them (see `counted_as`)
  std::string detail;
};

struct AllToAllBenchCell {
  std::string strategy;
  std::string runs_as;     // auto: the strategy it picked; else the strategy itself
  bool supported = true;   // else `reason` says why not
  std::string reason;
  std::string counted_as;  // what the GB/s count: "routed copies", "NVLink", "RDMA", "sent"
  AllToAllBenchPhase dispatch, combine;
};

struct AllToAllBenchRow {
  std::int64_t tokens = 0;  // a rank's
  std::vector<AllToAllBenchCell> cells;  // in request order
  std::string fastest;      // lowest dispatch + combine among the strategies run as themselves
};

struct AllToAllBenchResult {
  std::string device;    // e.g. "16 x NVIDIA H200 SXM 141GB"
  std::string topology;
  int ranks = 0;
  int nodes = 1;
  std::int64_t hidden = 0;
  int top_k = 0;
  std::int64_t experts = 0;
  int max_nodes_per_token = 0;  // 0: routing over every node
  DType dispatch_dtype = DType::fp8;
  std::vector<std::string> strategies;  // in order
  std::vector<AllToAllBenchRow> rows;
};

}  // namespace eaglesim
