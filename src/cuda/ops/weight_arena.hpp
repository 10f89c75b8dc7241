#pragma once
// Device memory for the per-op read-only data of a replayed step (weights, KV caches, norm
// weights, embedding tables). Each op gets its own region, so consecutive layers stream
// different bytes as a real model does and nothing is served from L2 by accident.
//
// Regions of kOwnAllocationBytes or more get their own cudaMalloc, as a serving framework's
// allocator gives each weight tensor its own segment; the small ones share one pool. When the
// regions together exceed `budget_fraction` of free memory, the big ones get their own
// allocations while the budget lasts and each later one reuses the next earlier allocation large
// enough (layer k + N reads layer k's memory), and the arena says so (reused()); when even that
// does not fit, everything is laid out cyclically in one pool of the budget's size.
//
// An arena's memory outlives it, parked per device, and the next arena on that device with the
// same layout takes it over instead of allocating: the strategies of one A/B run (one program
// each, built one after the other) then stream their weights from the same memory. The same
// GEMM runs measurably slower from some allocations than from others (docs/fidelity.md, "Where
// the weights live"), so two strategies with freshly allocated weights could differ by more
// than their allreduces do. release_parked_weights() frees what is parked.
#include <cstddef>
#include <vector>

#include "cuda/runtime/device_buffer.hpp"

namespace eaglesim::cuda {

class WeightArena {
 public:
  static constexpr std::size_t kOwnAllocationBytes = std::size_t(8) << 20;

  WeightArena() = default;
  // sizes: bytes per region; free_bytes: device memory available for the arena (memory parked
  // on the current device counts as free).
  WeightArena(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction = 0.8);
  ~WeightArena();
  WeightArena(WeightArena&&) noexcept = default;
  WeightArena& operator=(WeightArena&& o) noexcept;
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;

  void* region(std::size_t i) const;
  bool reused() const { return mem_.layout.reused; }
  // Whether this arena took over the memory of the previous one on its device.
  bool adopted() const { return adopted_; }
  std::size_t requested_bytes() const { return mem_.layout.requested; }
  // Bytes allocated: the shared pool plus the regions with their own allocation.
  std::size_t pool_bytes() const { return mem_.bytes(); }

  // Where each region lives; two arenas with equal layouts can share memory.
  struct Layout {
    std::vector<std::size_t> sizes;     // aligned bytes per region
    std::vector<int> own_index;         // per region: index into the own allocations, or -1 (pool)
    std::vector<std::size_t> offsets;   // per region in the pool
    std::size_t pool = 0;
    std::size_t requested = 0;
    bool reused = false;
    bool operator==(const Layout& o) const {
      return sizes == o.sizes && own_index == o.own_index && offsets == o.offsets && pool == o.pool &&
             reused == o.reused;
    }
  };

  // The arena's memory: what is parked per device and taken over by the next arena.
  struct Memory {
    Layout layout;
    DeviceBuffer pool;
    std::vector<DeviceBuffer> own;  // regions with their own allocation
    std::size_t bytes() const;
  };

 private:
  void park();

  Memory mem_;
  int device_ = -1;
  bool adopted_ = false;
};

// Frees the memory parked on `device` (-1: every device); the next arena there allocates anew.
void release_parked_weights(int device = -1);

}  // namespace eaglesim::cuda
