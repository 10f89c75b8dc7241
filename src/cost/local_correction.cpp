#include "cost/local_correction.hpp"

#include <algorithm>
#include <cmath>

namespace eaglesim {

LocalCorrection local_correction(const std::vector<SizeCalPoint>& table, double size,
                                 const std::function<double(double)>& fit_at) {
  LocalCorrection out;
  if (table.empty() || !(size > 0)) return out;
  // log2 size and log ratio of every usable point, in size order.
  std::vector<std::pair<double, double>> pts;
  for (const SizeCalPoint& p : table) {
    const double fit = fit_at(static_cast<double>(p.size));
    if (!(fit > 0) || !(p.us > 0)) continue;
    pts.emplace_back(std::log2(static_cast<double>(p.size)), std::log(p.us / fit));
  }
  if (pts.empty()) return out;
  const double x = std::log2(size);
  double log_ratio = 0, distance = 0;
  if (x <= pts.front().first) {
    log_ratio = pts.front().second;
    distance = pts.front().first - x;
  } else if (x >= pts.back().first) {
    log_ratio = pts.back().second;
    distance = x - pts.back().first;
  } else {
    const auto hi = std::upper_bound(pts.begin(), pts.end(), x,
                                     [](double v, const std::pair<double, double>& p) { return v < p.first; });
    const auto lo = hi - 1;
    const double f = (x - lo->first) / (hi->first - lo->first);
    log_ratio = lo->second + f * (hi->second - lo->second);
    distance = std::min(x - lo->first, hi->first - x);
  }
  out.weight = std::max(0.0, 1.0 - distance / kCorrectionFadeOctaves);
  out.factor = std::exp(out.weight * log_ratio);
  return out;
}

}  // namespace eaglesim
