#include "comm/fused_split_plan.hpp"

#include <algorithm>

namespace eaglesim {

FusedSplitPlan plan_fused_split(std::size_t tokens, std::size_t row_units, int block_limit, std::size_t target,
                                int threads_per_block) {
  FusedSplitPlan sp;
  if (target == 0 || row_units <= target || tokens == 0) return sp;
  const std::size_t max_grid = std::min<std::size_t>(static_cast<std::size_t>(block_limit), kFusedSplitMaxBlocks);
  const std::size_t max_chunks = max_grid / tokens;
  const std::size_t chunks = std::min((row_units + target - 1) / target, max_chunks);
  if (chunks < 2) return sp;
  const std::size_t chunk_units = (row_units + chunks - 1) / chunks;
  if (chunk_units > kFusedMaxUnitsPerThread * static_cast<std::size_t>(threads_per_block)) return sp;
  sp.chunks = static_cast<int>(chunks);
  sp.chunk_units = chunk_units;
  return sp;
}

}  // namespace eaglesim
