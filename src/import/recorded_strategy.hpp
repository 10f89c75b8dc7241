#pragma once
// Which allreduce path the engine took, read from the kernels it ran. An engine picks per call
// between NCCL, its own P2P kernels (one-stage / two-stage) and fused allreduce + RMSNorm
// kernels (docs/engine-dispatch.md); the kernel family the classifier names says which, and
// that maps onto the eaglesim strategy that runs the same algorithm, so a replay can put the
// recorded path beside another one.
#include <string>
#include <vector>

#include "import/imported_op.hpp"

namespace eaglesim {

struct RecordedAllreducePath {
  std::string family;    // kernel family ("NCCL", "vLLM/SGLang custom allreduce 1-stage", ...)
  std::string kernel;    // short kernel name
  std::string strategy;  // eaglesim strategy running the same algorithm; empty when none does
  int count = 0;         // per step
  double us = 0;         // per step, as imported (aligned when several ranks)
};

// The eaglesim strategy for a family; empty when none runs that algorithm.
std::string strategy_for_allreduce_family(const std::string& family);

// Allreduce paths of one step, in order of first appearance. `us[i]` is the imported cost of ops[i].
std::vector<RecordedAllreducePath> recorded_allreduce_paths(const std::vector<const ImportedOp*>& ops,
                                                            const std::vector<double>& us);

std::string describe(const RecordedAllreducePath& path);

}  // namespace eaglesim
