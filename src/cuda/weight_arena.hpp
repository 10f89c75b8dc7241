#pragma once
// Device memory for the per-op read-only data of a replayed step (weights, KV caches, norm
// weights, embedding tables). Each op gets its own region, so consecutive layers stream
// different bytes as a real model does and nothing is served from L2 by accident.
//
// Regions of kOwnAllocationBytes or more get their own cudaMalloc, as a serving framework's
// allocator gives each weight tensor its own segment; the small ones share one pool. Measured on
// H200 (docs/fidelity.md, "Where the weights live"): how fast a weight-streaming GEMM runs
// depends on the allocation its weights sit in — one pool holding a whole model is either fast
// or up to 8 % slow for every layer at once, depending on the process, while one allocation per
// weight spreads that over many allocations, as the model's real allocations do.
//
// When the regions together exceed `budget_fraction` of free memory, they are laid out
// cyclically in one pool of that size (later ops reuse earlier ops' bytes) and the arena says so.
// EAGLESIM_WEIGHT_POOL=1 forces the single pool (diagnostic: the layout before per-region
// allocations).
#include <cstddef>
#include <vector>

#include "cuda/replay_buffer.hpp"

namespace eaglesim::cuda {

class WeightArena {
 public:
  static constexpr std::size_t kOwnAllocationBytes = std::size_t(8) << 20;

  WeightArena() = default;
  // sizes: bytes per region; free_bytes: device memory available for the arena.
  WeightArena(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction = 0.8);

  void* region(std::size_t i) const;
  bool reused() const { return reused_; }
  std::size_t requested_bytes() const { return requested_; }
  // Bytes allocated: the shared pool plus the regions with their own allocation.
  std::size_t pool_bytes() const;

 private:
  ReplayBuffer pool_;
  std::vector<ReplayBuffer> own_;     // regions with their own allocation
  std::vector<int> own_index_;        // per region: index into own_, or -1 (in pool_)
  std::vector<std::size_t> offsets_;  // per region in pool_
  std::size_t requested_ = 0;
  bool reused_ = false;
};

}  // namespace eaglesim::cuda
