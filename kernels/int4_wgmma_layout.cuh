#pragma once
// Tile and shared-memory layout of the dense int4 wgmma GEMM (int4_wgmma_gemm.cuh), plain C++ so
// the host plan (src/cuda/ops/int4_wgmma_plan.cpp) sizes launches from the same numbers.
#include <cstddef>

#include "moe_gemm_layout.cuh"

namespace eaglesim::kernels::int4wg {

constexpr int kWarpGroups = 3;  // with the producer warp, 13 warps: 128 registers a thread (allocated per warpgroup)
constexpr int kTileN = 64 * kWarpGroups;          // output channels per CTA
constexpr int kBlocks = kTileN / 16;              // 16-channel blocks per CTA (one per consumer warp)
constexpr int kConsumerThreads = 128 * kWarpGroups;
constexpr int kThreads = kConsumerThreads + 32;   // + the producer warp
constexpr int kTK = 128;                          // k per stage
constexpr int kBlockStageBytes = (kTK / 64) * moe::kAtomBytes;  // one block's weights per stage
constexpr int kSmemMax = 227 * 1024;

// Shared-memory layout of a stage for NT rows and scale group G.
template <int NT, int G>
struct Layout {
  static_assert(NT == 64 || NT == 128, "rows per tile: 64 or 128");
  static_assert(G == 32 || G == 128, "int4 scale group: 32 or 128");
  static constexpr int kRows = NT, kGroup = G;
  static constexpr int kScaleBlockBytes = (kTK / G) * 32;  // [groups][16 channels] bf16
  static constexpr int kWeightOff = 0;
  static constexpr int kScaleOff = kBlocks * kBlockStageBytes;
  static constexpr int kXOff = kScaleOff + kBlocks * kScaleBlockBytes;
  static constexpr int kXBytes = NT * kTK * 2;
  static constexpr int kStageBytes = (kXOff + kXBytes + 127) / 128 * 128;
  static constexpr int kStages = (kSmemMax - 256) / kStageBytes > 6 ? 6 : (kSmemMax - 256) / kStageBytes;
  static constexpr int kBarrierOff = kStages * kStageBytes;
  static constexpr std::size_t kSmemBytes = static_cast<std::size_t>(kBarrierOff) + 16 * kStages;
  static_assert(kStages >= 3, "at least three stages");
};

// fn(Layout<NT, G>{}) for the instance of `rows_tile` (64 or 128) rows and int4 group `group`
// (32 or 128): the one place a run-time choice becomes a template instance.
template <typename Fn>
void with_layout(int rows_tile, int group, Fn&& fn) {
  if (rows_tile == 64) {
    if (group == 32) fn(Layout<64, 32>{}); else fn(Layout<64, 128>{});
  } else {
    if (group == 32) fn(Layout<128, 32>{}); else fn(Layout<128, 128>{});
  }
}

}  // namespace eaglesim::kernels::int4wg
