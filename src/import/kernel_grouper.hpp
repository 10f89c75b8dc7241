#pragma once
// Turns one rank's GPU activities into semantic ops. Activities launched by the same CPU op
// (same External id, consecutive on one stream) are one op: a split-K GEMM and its
// splitKreduce kernel, cuDNN attention and its workspace memset. Two further merges follow
// the shape of a decoder layer: SiLU followed by the multiply with the up projection is one
// `act`, and a copy into the communication buffer right before an allreduce of the same size
// (what the one-shot symmetric-memory and custom allreduces need in eager mode) is folded into
// that allreduce.
#include <vector>

#include "import/imported_op.hpp"
#include "import/kineto_reader.hpp"

namespace eaglesim {

// Ops in GPU start order across streams.
std::vector<ImportedOp> group_kernels(const RankTrace& rank);

}  // namespace eaglesim
