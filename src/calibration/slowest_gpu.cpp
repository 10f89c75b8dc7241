#include "calibration/slowest_gpu.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace eaglesim {

std::vector<double> slowest_of_first_gpus(const std::vector<std::vector<double>>& per_gpu, const std::vector<int>& gpus) {
  if (per_gpu.empty()) return {};
  const std::size_t n = per_gpu.front().size();
  for (const auto& g : per_gpu)
    if (g.size() != n) throw std::invalid_argument("slowest_of_first_gpus: the GPUs measured different entry counts");
  const int all = static_cast<int>(per_gpu.size());
  std::vector<double> out(n, std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < n; ++i) {
    const int span = i < gpus.size() ? std::clamp(gpus[i], 1, all) : all;
    for (int g = 0; g < span; ++g) {
      const double us = per_gpu[static_cast<std::size_t>(g)][i];
      if (!(us > 0) || !std::isfinite(us)) continue;
      if (!(out[i] >= us)) out[i] = us;  // also replaces the NaN start
    }
  }
  return out;
}

}  // namespace eaglesim
