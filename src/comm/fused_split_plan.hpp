#pragma once
// How the fused allreduce + residual + RMSNorm kernel (kernels/fused_allreduce_rmsnorm.cuh)
// spreads a few long token rows over several blocks each. Host logic only, so it is unit-tested
// without a GPU (tests/unit/test_fused_split_plan.cpp); src/cuda/comm/custom_comm.cu launches the
// kernels it chooses.
//
// A row longer than the target is cut into ceil(units / target) chunks, one block each, as long
// as the whole grid stays within kFusedSplitMaxBlocks. Splitting needs the whole grid resident
// (the blocks of a row meet to combine their sums of squares), hence tokens * chunks <= the
// block limit as well (<= the SM count; kFusedSplitMaxBlocks is far below it anyway), and a
// chunk must fit in registers: at most kFusedMaxUnitsPerThread units per thread of a block.
#include <cstddef>

namespace eaglesim {

// 16-byte units per chunk: the fastest target measured for the rows of a verify step (smaller
// targets spread a row over more blocks than its sum of squares is worth, larger ones leave
// too few blocks pulling); docs/results.md, "Allreduce kernels".
constexpr std::size_t kFusedChunkUnits = 256;
// Grids of up to this many blocks gain from splitting; a grid that is already larger (many
// rows) loses more to the row sync than the shorter rows save (docs/results.md, same section).
constexpr std::size_t kFusedSplitMaxBlocks = 16;
// The register-resident split kernels hold 1, 2 or 4 units per thread.
constexpr std::size_t kFusedMaxUnitsPerThread = 4;

struct FusedSplitPlan {
  int chunks = 1;               // blocks per row; 1: no split, one block per row
  std::size_t chunk_units = 0;  // 16-byte units per chunk (split rows only)
  bool operator==(const FusedSplitPlan& o) const { return chunks == o.chunks && chunk_units == o.chunk_units; }
};

// `tokens` rows of `row_units` 16-byte units; at most `block_limit` blocks in the grid (the
// SM count of the group's smallest GPU, capped); `target` units per chunk (0: never split);
// `threads_per_block` of the kernel.
FusedSplitPlan plan_fused_split(std::size_t tokens, std::size_t row_units, int block_limit, std::size_t target,
                                int threads_per_block);

}  // namespace eaglesim
