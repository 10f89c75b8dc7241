#include "cuda/ops/weight_arena.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

namespace eaglesim::cuda {

namespace {
constexpr std::size_t kAlign = 256;  // cudaMalloc alignment: keeps every region 16-byte-load friendly
std::size_t align_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The memory of the last arena destroyed on each device (one per device: ranks run in threads,
// one device each).
std::mutex& parked_mutex() {
  static std::mutex m;
  return m;
}
std::map<int, WeightArena::Memory>& parked() {
  static std::map<int, WeightArena::Memory> p;
  return p;
}

// More than the budget: the big regions still get their own allocations, in order, while the
// budget lasts; each later one reads the next earlier allocation (cyclically) that is large
// enough, so layer k + N streams layer k's tensors from the same kind of allocation as a step
// that fits (and as calibrate's chains). The small regions share the pool. False (layout
// untouched) when the small regions alone exceed the budget or a big region finds no allocation
// large enough: the single cyclic pool then.
bool plan_reused_own(WeightArena::Layout& l, const std::vector<std::size_t>& sizes, std::size_t budget) {
  std::size_t small = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < WeightArena::kOwnAllocationBytes) small += l.sizes[i];
  if (small > budget) return false;
  std::size_t left = budget - small;
  std::vector<int> own_index(sizes.size(), -1);
  std::vector<std::size_t> own_bytes;
  std::size_t next = 0;  // the allocation the next reusing region tries first
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < WeightArena::kOwnAllocationBytes) continue;
    if (l.sizes[i] <= left) {
      own_index[i] = static_cast<int>(own_bytes.size());
      own_bytes.push_back(l.sizes[i]);
      left -= l.sizes[i];
      continue;
    }
    bool found = false;
    for (std::size_t k = 0; k < own_bytes.size() && !found; ++k) {
      const std::size_t j = (next + k) % own_bytes.size();
      if (own_bytes[j] >= l.sizes[i]) {
        own_index[i] = static_cast<int>(j);
        next = j + 1;
        found = true;
      }
    }
    if (!found) return false;
  }
  l.own_index = std::move(own_index);
  return true;
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
  // Own allocations per big region unless the regions exceed the budget and plan_reused_own
  // finds no reuse that fits.
  const bool per_region = !l.reused || plan_reused_own(l, sizes, budget);
  if (per_region) {
    l.pool = 0;
    int own = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < WeightArena::kOwnAllocationBytes) l.pool += l.sizes[i];
      else if (!l.reused) l.own_index[i] = own++;
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

std::size_t WeightArena::Memory::bytes() const {
  std::size_t total = pool.bytes();
  for (const auto& b : own) total += b.bytes();
  return total;
}

WeightArena::WeightArena(const std::vector<std::size_t>& sizes, std::size_t free_bytes, double budget_fraction) {
  EAGLESIM_CUDA_CHECK(cudaGetDevice(&device_));
  std::lock_guard<std::mutex> lock(parked_mutex());
  auto p = parked().find(device_);
  const std::size_t parked_bytes = p == parked().end() ? 0 : p->second.bytes();
  Layout layout = plan_layout(sizes, free_bytes + parked_bytes, budget_fraction);
  if (p != parked().end()) {
    if (p->second.layout == layout) {
      mem_ = std::move(p->second);
      adopted_ = true;
    }
    parked().erase(p);  // adopted, or freed before allocating anew
  }
  if (adopted_) return;
  mem_.layout = std::move(layout);
  mem_.pool = DeviceBuffer(mem_.layout.pool);
  // Own allocations are numbered in order of first use; a reused layout points later regions at
  // earlier ones.
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (mem_.layout.own_index[i] == static_cast<int>(mem_.own.size())) mem_.own.emplace_back(mem_.layout.sizes[i]);
}

void WeightArena::park() {
  if (device_ < 0 || (!mem_.pool.get() && mem_.own.empty())) return;
  std::lock_guard<std::mutex> lock(parked_mutex());
  parked()[device_] = std::move(mem_);  // frees what was parked before on this device
  device_ = -1;
}

WeightArena::~WeightArena() { park(); }

WeightArena& WeightArena::operator=(WeightArena&& o) noexcept {
  if (this != &o) {
    park();
    mem_ = std::move(o.mem_);
    device_ = std::exchange(o.device_, -1);
    adopted_ = o.adopted_;
  }
  return *this;
}

void* WeightArena::region(std::size_t i) const {
  const int own = mem_.layout.own_index.at(i);
  if (own >= 0) return mem_.own[static_cast<std::size_t>(own)].get();
  return static_cast<char*>(mem_.pool.get()) + mem_.layout.offsets.at(i);
}

void release_parked_weights(int device) {
  std::lock_guard<std::mutex> lock(parked_mutex());
  if (device < 0) parked().clear();
  else parked().erase(device);
}

}  // namespace eaglesim::cuda
