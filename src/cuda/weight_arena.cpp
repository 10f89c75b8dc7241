#include "cuda/weight_arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim::cuda {

namespace {
constexpr std::size_t kAlign = 256;  // cudaMalloc alignment: keeps every region 16-byte-load friendly
std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool single_pool_forced() {
  const char* v = std::getenv("EAGLESIM_WEIGHT_POOL");
  return v && std::strcmp(v, "1") == 0;
}
}  // namespace

WeightArena::WeightArena(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction) {
  std::size_t largest = 0;
  for (std::size_t s : sizes) {
    requested_ += align_up(s);
    largest = std::max(largest, align_up(s));
  }
  const auto budget = static_cast<std::size_t>(static_cast<double>(free_bytes) * budget_fraction) / kAlign * kAlign;
  std::size_t pool = requested_;
  if (requested_ > budget) {
    if (largest > budget)
      throw DeviceError(fmt::format("one op needs {:.2f} GiB of weights/KV cache, more than {:.0f}% of the "
                                    "GPU's free memory ({:.2f} GiB)",
                                    largest / 1073741824.0, budget_fraction * 100, free_bytes / 1073741824.0));
    pool = budget;
    reused_ = true;
  }
  const bool own_allowed = !reused_ && !single_pool_forced();
  own_index_.assign(sizes.size(), -1);
  offsets_.assign(sizes.size(), 0);
  if (own_allowed) {
    pool = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] >= kOwnAllocationBytes) {
        own_index_[i] = static_cast<int>(own_.size());
        own_.emplace_back(align_up(sizes[i]));
      } else {
        pool += align_up(sizes[i]);
      }
    }
  }
  pool_ = ReplayBuffer(std::max<std::size_t>(pool, kAlign));
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (own_index_[i] >= 0) continue;
    const std::size_t a = align_up(sizes[i]);
    if (cursor + a > pool) cursor = 0;  // wrap: only when reused_
    offsets_[i] = cursor;
    cursor += a;
  }
}

void* WeightArena::region(std::size_t i) const {
  const int own = own_index_.at(i);
  if (own >= 0) return own_[static_cast<std::size_t>(own)].get();
  return static_cast<char*>(pool_.get()) + offsets_.at(i);
}

std::size_t WeightArena::pool_bytes() const {
  std::size_t total = pool_.bytes();
  for (const auto& b : own_) total += b.bytes();
  return total;
}

}  // namespace eaglesim::cuda
