#include "cuda/weight_arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

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

// The memory of the last arena destroyed on a device (one per device: ranks run in threads, one
// device each).
struct Parked {
  WeightArena::Layout layout;
  ReplayBuffer pool;
  std::vector<ReplayBuffer> own;
  std::size_t bytes() const {
    std::size_t b = pool.bytes();
    for (const auto& o : own) b += o.bytes();
    return b;
  }
};
std::mutex& parked_mutex() {
  static std::mutex m;
  return m;
}
std::map<int, Parked>& parked() {
  static std::map<int, Parked> p;
  return p;
}

WeightArena::Layout plan_layout(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction) {
  WeightArena::Layout l;
  std::size_t largest = 0;
  for (std::size_t s : sizes) {
    l.sizes.push_back(align_up(s));
    l.requested += align_up(s);
    largest = std::max(largest, align_up(s));
  }
  const auto budget = static_cast<std::size_t>(static_cast<double>(free_bytes) * budget_fraction) / kAlign * kAlign;
  l.pool = l.requested;
  if (l.requested > budget) {
    if (largest > budget)
      throw DeviceError(fmt::format("one op needs {:.2f} GiB of weights/KV cache, more than {:.0f}% of the "
                                    "GPU's free memory ({:.2f} GiB)",
                                    largest / 1073741824.0, budget_fraction * 100, free_bytes / 1073741824.0));
    l.pool = budget;
    l.reused = true;
  }
  l.own_index.assign(sizes.size(), -1);
  l.offsets.assign(sizes.size(), 0);
  if (!l.reused && !single_pool_forced()) {
    l.pool = 0;
    int own = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] >= WeightArena::kOwnAllocationBytes) l.own_index[i] = own++;
      else l.pool += l.sizes[i];
    }
  }
  l.pool = std::max<std::size_t>(l.pool, kAlign);
  std::size_t cursor = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (l.own_index[i] >= 0) continue;
    if (cursor + l.sizes[i] > l.pool) cursor = 0;  // wrap: only when reused
    l.offsets[i] = cursor;
    cursor += l.sizes[i];
  }
  return l;
}

}  // namespace

WeightArena::WeightArena(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction) {
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device_));
  std::lock_guard<std::mutex> lock(parked_mutex());
  auto p = parked().find(device_);
  const std::size_t parked_bytes = p == parked().end() ? 0 : p->second.bytes();
  layout_ = plan_layout(sizes, free_bytes + parked_bytes, budget_fraction);
  if (p != parked().end()) {
    if (p->second.layout == layout_) {
      pool_ = std::move(p->second.pool);
      own_ = std::move(p->second.own);
      adopted_ = true;
    }
    parked().erase(p);  // adopted, or freed before allocating anew
  }
  if (adopted_) return;
  pool_ = ReplayBuffer(layout_.pool);
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (layout_.own_index[i] >= 0) own_.emplace_back(layout_.sizes[i]);
}

void WeightArena::park() {
  if (device_ < 0 || (!pool_.get() && own_.empty())) return;
  std::lock_guard<std::mutex> lock(parked_mutex());
  Parked& p = parked()[device_];
  p.layout = std::move(layout_);
  p.pool = std::move(pool_);  // frees what was parked before on this device
  p.own = std::move(own_);
  device_ = -1;
}

WeightArena::~WeightArena() { park(); }

WeightArena& WeightArena::operator=(WeightArena&& o) noexcept {
  if (this != &o) {
    park();
    layout_ = std::move(o.layout_);
    pool_ = std::move(o.pool_);
    own_ = std::move(o.own_);
    device_ = std::exchange(o.device_, -1);
    adopted_ = o.adopted_;
  }
  return *this;
}

void* WeightArena::region(std::size_t i) const {
  const int own = layout_.own_index.at(i);
  if (own >= 0) return own_[static_cast<std::size_t>(own)].get();
  return static_cast<char*>(pool_.get()) + layout_.offsets.at(i);
}

std::size_t WeightArena::pool_bytes() const {
  std::size_t total = pool_.bytes();
  for (const auto& b : own_) total += b.bytes();
  return total;
}

void release_parked_weights(int device) {
  std::lock_guard<std::mutex> lock(parked_mutex());
  if (device < 0) parked().clear();
  else parked().erase(device);
}

}  // namespace eaglesim::cuda
