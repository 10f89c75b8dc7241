#include "cuda/ops/elementwise_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim::cuda {

namespace {
constexpr std::int64_t kBf16PerVector = 8;
constexpr std::int64_t kMaxGridY = 65535;
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
}  // namespace

RowNormGeometry row_norm_geometry(std::int64_t rows, std::int64_t hidden, bool packed) {
  if (rows < 1) throw InputError(fmt::format("rmsnorm: expected at least one row, got {}", rows));
  if (hidden < 1 || hidden > kRowNormMaxHidden)
    throw InputError(fmt::format("rmsnorm: hidden {} is outside what the replay's RMSNorm kernels take "
                                 "(1..{} elements per row, held in registers)",
                                 hidden, kRowNormMaxHidden));
  RowNormGeometry g;
  g.packed = packed && hidden % kBf16PerVector == 0;
  const std::int64_t units = ceil_div(hidden, kBf16PerVector);
  if (units <= 32 * 4) {
    g.warp_per_row = true;
    while (32 * g.vectors_per_thread < units) g.vectors_per_thread *= 2;
    g.threads = 32 * kRowNormWarpRowsPerBlock;
    g.blocks = ceil_div(rows, kRowNormWarpRowsPerBlock);
    return g;
  }
  while (ceil_div(units, g.vectors_per_thread) > kRowNormMaxThreads) g.vectors_per_thread *= 2;
  g.threads = static_cast<int>(ceil_div(ceil_div(units, g.vectors_per_thread), 32) * 32);
  g.blocks = rows;
  return g;
}

PointwiseGeometry pointwise_geometry(std::int64_t rows, std::int64_t units_per_row, int sm_count) {
  PointwiseGeometry g;
  const std::int64_t want_blocks = 4 * static_cast<std::int64_t>(std::max(1, sm_count));
  for (int u : {4, 2, 1}) {
    g.units_per_thread = u;
    g.grid_x = std::max<std::int64_t>(1, ceil_div(units_per_row, static_cast<std::int64_t>(g.threads) * u));
    if (g.grid_x * rows >= want_blocks) break;
  }
  g.grid_y = static_cast<int>(std::clamp<std::int64_t>(rows, 1, kMaxGridY));
  return g;
}

}  // namespace eaglesim::cuda
