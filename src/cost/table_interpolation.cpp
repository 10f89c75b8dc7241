#include "cost/table_interpolation.hpp"

#include <algorithm>
#include <cmath>

namespace eaglesim {

TableLookup interpolate_table(const std::vector<SizeCalPoint>& table, double size) {
  TableLookup r;
  if (table.empty()) return r;
  r.has_table = true;
  if (size < static_cast<double>(table.front().size) || size > static_cast<double>(table.back().size)) return r;
  r.inside = true;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (static_cast<double>(table[i].size) == size) { r.us = table[i].us; return r; }
    if (i + 1 < table.size() && size < static_cast<double>(table[i + 1].size)) {
      double x0 = std::log(static_cast<double>(table[i].size)), x1 = std::log(static_cast<double>(table[i + 1].size));
      double y0 = std::log(table[i].us), y1 = std::log(table[i + 1].us);
      double f = (std::log(size) - x0) / (x1 - x0);
      r.us = std::exp(y0 + f * (y1 - y0));
      return r;
    }
  }
  r.us = table.back().us;
  return r;
}

TableLookup lookup_gemm(const Calibration& cal, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  std::vector<SizeCalPoint> pts;
  for (const auto& p : cal.gemm)
    if (p.n == n && p.k == k && p.dtype == dtype) pts.push_back({p.m, p.us});
  std::sort(pts.begin(), pts.end(), [](const SizeCalPoint& a, const SizeCalPoint& b) { return a.size < b.size; });
  return interpolate_table(pts, static_cast<double>(m));
}

}  // namespace eaglesim
