#include "core/nelder_mead.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace eaglesim {

namespace {

NelderMeadResult simplex_run(const std::function<double(const std::vector<double>&)>& f, const std::vector<double>& start,
                             double step, double tolerance, int max_evaluations) {
  const std::size_t n = start.size();
  std::vector<std::vector<double>> pts(n + 1, start);
  for (std::size_t i = 0; i < n; ++i) pts[i + 1][i] += step;
  std::vector<double> val(n + 1);
  int evals = 0;
  auto eval = [&](const std::vector<double>& x) {
    ++evals;
    const double v = f(x);
    return std::isfinite(v) ? v : HUGE_VAL;
  };
  for (std::size_t i = 0; i <= n; ++i) val[i] = eval(pts[i]);
  std::vector<std::size_t> order(n + 1);
  while (evals < max_evaluations) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return val[a] < val[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (std::fabs(val[worst] - val[best]) <= tolerance * (1.0 + std::fabs(val[best]))) break;
    std::vector<double> centroid(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (std::size_t d = 0; d < n; ++d) centroid[d] += pts[i][d] / static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (std::size_t d = 0; d < n; ++d) x[d] = centroid[d] + t * (pts[worst][d] - centroid[d]);
      return x;
    };
    const std::vector<double> reflected = along(-1.0);
    const double vr = eval(reflected);
    if (vr < val[best]) {
      const std::vector<double> expanded = along(-2.0);
      const double ve = eval(expanded);
      if (ve < vr) pts[worst] = expanded, val[worst] = ve;
      else pts[worst] = reflected, val[worst] = vr;
    } else if (vr < val[second]) {
      pts[worst] = reflected, val[worst] = vr;
    } else {
      const std::vector<double> contracted = along(vr < val[worst] ? -0.5 : 0.5);
      const double vc = eval(contracted);
      if (vc < std::min(vr, val[worst])) {
        pts[worst] = contracted, val[worst] = vc;
      } else {
        for (std::size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (std::size_t d = 0; d < n; ++d) pts[i][d] = pts[best][d] + 0.5 * (pts[i][d] - pts[best][d]);
          val[i] = eval(pts[i]);
        }
      }
    }
  }
  const std::size_t best = static_cast<std::size_t>(std::min_element(val.begin(), val.end()) - val.begin());
  return {pts[best], val[best], evals};
}

}  // namespace

NelderMeadResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                             double step, double tolerance, int max_evaluations) {
  NelderMeadResult r = simplex_run(f, start, step, tolerance, max_evaluations / 2);
  NelderMeadResult again = simplex_run(f, r.x, step / 4, tolerance, max_evaluations - r.evaluations);
  again.evaluations += r.evaluations;
  return again.value <= r.value ? again : r;
}

}  // namespace eaglesim
