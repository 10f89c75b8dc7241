#include "cuda/weight_arena.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace eaglesim::cuda {

namespace {
constexpr std::size_t kAlign = 256;  // cudaMalloc alignment: keeps every region 16-byte-load friendly
std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
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
  pool_ = ReplayBuffer(std::max<std::size_t>(pool, kAlign));
  std::size_t cursor = 0;
  offsets_.reserve(sizes.size());
  for (std::size_t s : sizes) {
    const std::size_t a = align_up(s);
    if (cursor + a > pool) cursor = 0;  // wrap: only when reused_
    offsets_.push_back(cursor);
    cursor += a;
  }
}

}  // namespace eaglesim::cuda
