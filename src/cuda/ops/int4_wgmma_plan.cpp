#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/ops/int4_wgmma_gemm.hpp"
#include "int4_wgmma_layout.cuh"

namespace eaglesim::cuda {

namespace wg = eaglesim::kernels::int4wg;

static_assert(wg::kTileN == kInt4WgmmaTileN && wg::kThreads == kInt4WgmmaThreads, "one tile geometry");

bool int4_wgmma_requested() {
  const char* v = std::getenv(kInt4GemmEnv);
  if (v == nullptr || std::string(v).empty() || std::string(v) == "stream_k") return false;
  if (std::string(v) == "wgmma") return true;
  throw InputError(fmt::format("{}: expected stream_k or wgmma, got '{}'", kInt4GemmEnv, v));
}

std::string int4_wgmma_unsupported_reason(GemmWeightFormat format, int m, int n, int k) {
  if (format != GemmWeightFormat::int4_g32 && format != GemmWeightFormat::int4_g128) return "not int4 weights";
  if (m < kInt4WgmmaMinRows) return fmt::format("m < {}", kInt4WgmmaMinRows);
  if (n < 1) return "n < 1";
  if (k % wg::kTK != 0) return fmt::format("k % {} != 0", wg::kTK);
  return {};
}

// One wave: each (192-channel, rows) tile is split over k until the grid fills the SMs, with at
// least two stages of 128 k per split; a tile's splits wait for each other, which is safe only
// while the whole grid is resident (one CTA per SM), so a grid of more tiles than SMs is unsplit.
void plan_int4_wgmma(GroupedGemmPlan& p, int sm_count) {
  const GroupedGemmShape& s = p.shape;
  const int m = s.max_rows, group = s.format == GemmWeightFormat::int4_g32 ? 32 : 128;
  p.wgmma = true;
  p.wgmma_rows = m <= 64 ? 64 : 128;
  p.wgmma_row_tiles = (m + p.wgmma_rows - 1) / p.wgmma_rows;
  const int n_tiles = (s.n + wg::kTileN - 1) / wg::kTileN;
  const int tiles = n_tiles * p.wgmma_row_tiles;
  const int k_stages = s.k / wg::kTK;
  p.wgmma_splits = tiles >= sm_count ? 1 : std::max(1, std::min(sm_count / tiles, k_stages / 2));
  p.grid = tiles * p.wgmma_splits;
  p.ctas_per_sm = 1;
  p.threads = wg::kThreads;
  p.tile_n = wg::kTileN;
  p.k_tile = wg::kTK;
  p.row_tile = p.wgmma_rows;
  wg::with_layout(p.wgmma_rows, group, [&](auto layout) {
    p.smem_bytes = decltype(layout)::kSmemBytes;
    p.stages = decltype(layout)::kStages;
  });
  p.pdl = false;
  p.gemv = false;
  p.kernel_variant = 0;
  p.max_items = tiles;
  p.counter_bytes = align256(static_cast<std::size_t>(tiles) * 2 * sizeof(int));
  p.partial_bytes = p.wgmma_splits > 1 ? static_cast<std::size_t>(tiles) * p.wgmma_splits * p.wgmma_rows *
                                             wg::kTileN * sizeof(float)
                                       : 0;
  p.workspace_bytes = p.counter_bytes + p.partial_bytes;
  p.variant = fmt::format("{} wgmma r{} x{} split {}", to_string(s.format), p.wgmma_rows, p.wgmma_row_tiles,
                          p.wgmma_splits);
}

}  // namespace eaglesim::cuda
