#include "domain/kind_attribution.hpp"

#include <algorithm>
#include <cstddef>

namespace eaglesim {

std::vector<double> fit_spans_to_step(std::vector<double> span_us, const std::vector<bool>& absorbed, double step_us) {
  const auto is_absorbed = [&](std::size_t i) { return i < absorbed.size() && absorbed[i]; };
  double sum = 0;
  std::size_t kernels = 0;
  for (std::size_t i = 0; i < span_us.size(); ++i) {
    if (is_absorbed(i)) {
      span_us[i] = 0;
      continue;
    }
    sum += span_us[i];
    ++kernels;
  }
  if (kernels == 0 || sum <= step_us || step_us <= 0) return span_us;
  const double per_op = (sum - step_us) / static_cast<double>(kernels);
  double left = 0;
  for (std::size_t i = 0; i < span_us.size(); ++i) {
    if (is_absorbed(i)) continue;
    span_us[i] = std::max(0.0, span_us[i] - per_op);
    left += span_us[i];
  }
  if (left > 0)
    for (double& v : span_us) v *= step_us / left;
  return span_us;
}

}  // namespace eaglesim
