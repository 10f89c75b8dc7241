#pragma once
// What bench-comm reports, measured on GPUs (the CUDA part) or predicted by the cost models
// (--backend sim): per message size and strategy, the time per allreduce back to back and in a
// step, algBW and busBW as nccl-tests define them, and for measurements the elements found
// wrong. Printed by report/comm_bench_printer.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace eaglesim {

struct CommBenchCell {
  std::string strategy;
  bool supported = true;  // predicted: the strategy can run this size on the topology (else `note` says why)
  double graph_us = 0;    // per allreduce, back-to-back in one CUDA graph (median over replays)
  double context_us = 0;  // per allreduce after a GEMM: (GEMM+allreduce) - (GEMM alone), graphs
  double algbw_gbs = 0;   // bytes / graph_us
  double busbw_gbs = 0;   // algbw * 2(n-1)/n, comparable with nccl-tests
  std::int64_t wrong = 0; // elements outside tolerance (+ elements differing across ranks); measured only
  std::string note;       // e.g. "nccl fallback", "3x7168 rows"
  std::string path;       // engine strategies: the engine's path for this size ("custom allreduce one-shot")
  std::string runs_as;    // engine strategies: the eaglesim strategy that runs that path (its model and kernel)
  std::string reason;     // engine strategies: why
};

struct CommBenchRow {
  std::int64_t bytes = 0;
  std::int64_t count = 0;
  std::vector<CommBenchCell> cells;  // in request order
  std::string fastest;               // lowest graph_us among exact, non-fused strategies with 0 wrong
};

struct CommBenchResult {
  std::string device;  // e.g. "2 x NVIDIA H200"
  int ranks = 0;
  DType dtype = DType::bf16;
  double gemm_us = 0;  // one GEMM of the context shape alone (measured only)
  int calls_per_graph = 0;
  std::vector<CommBenchRow> rows;
  // How the figures were made, for the printers.
  bool predicted = false;       // the cost models on `topology`, not GPUs
  std::string topology;         // predicted: the topology's name
  int nccl_channels = 0;        // predicted: channels NCCL was priced on (0: those NCCL's search gives)
  std::vector<std::string> strategies;  // the columns, in order
  int replays = 0;              // measured: timed graph replays per figure
  int gemm_m = 0, gemm_n = 0, gemm_k = 0;  // measured: the in-context GEMM
};

}  // namespace eaglesim
