#pragma once
// An op as the importer sees it on one rank, before it becomes a trace Op: the semantic Op
// (kind, shape) plus the GPU timing it came from, which the step splitter, the collective
// aligner and the summary still need.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/op.hpp"

namespace eaglesim {

struct ImportedKernel {
  std::string name;    // short kernel name
  std::string family;  // implementation (NCCL, cuBLAS nvjet, ...), may be empty
  double us = 0;       // raw duration
};

struct ImportedOp {
  Op op;                      // kind, name, shape; us and layer filled later
  bool collective = false;    // its kernel waits for the other ranks (duration is not cost)
  bool shape_missing = false; // recognised as a typed kind but no CPU shape found -> `other`
  std::string recognised_as;  // what the kernels were recognised as (for shape_missing and the summary)
  double start = 0, end = 0;  // GPU time (this rank's clock) of the first start and last end
  double collective_start = 0, collective_end = 0;  // the collective kernel alone (not a folded copy)
  double kernel_us = 0;       // sum of its kernels' durations (collective: the collective kernel only)
  double folded_copy_us = 0;  // input copy folded into an allreduce (one-shot symmetric memory)
  double launch_ts = -1;      // CPU time its first kernel was launched, -1 if unknown
  std::int64_t graph_launch = -1;  // CUDA graph launch that replayed it (correlation), -1: stream launch
  std::vector<ImportedKernel> kernels;

  // Identity used to compare steps and ranks: kind and shape (and name for `other`).
  std::string signature() const;
};

}  // namespace eaglesim
