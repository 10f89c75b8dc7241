#pragma once
// Device memory for the per-op read-only data of a replayed step (weights, KV caches, norm
// weights, embedding tables). Each op gets its own region, so consecutive layers stream
// different bytes as a real model does and nothing is served from L2 by accident. When the
// regions together exceed `budget_fraction` of free memory, they are laid out cyclically in a
// pool of that size (later ops reuse earlier ops' bytes) and the arena says so.
#include <cstddef>
#include <vector>

#include "cuda/replay_buffer.hpp"

namespace eaglesim::cuda {

class WeightArena {
 public:
  WeightArena() = default;
  // sizes: bytes per region; free_bytes: device memory available for the arena.
  WeightArena(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction = 0.8);

  void* region(std::size_t i) const { return static_cast<char*>(pool_.get()) + offsets_.at(i); }
  bool reused() const { return reused_; }
  std::size_t requested_bytes() const { return requested_; }
  std::size_t pool_bytes() const { return pool_.bytes(); }

 private:
  ReplayBuffer pool_;
  std::vector<std::size_t> offsets_;
  std::size_t requested_ = 0;
  bool reused_ = false;
};

}  // namespace eaglesim::cuda
