#include "core/nnls.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace eaglesim {

namespace {

// Least squares over the columns in `cols` only (normal equations with partial pivoting; the
// fits have a handful of columns, scaled to unit norm first so that they are well conditioned).
std::vector<double> solve_subset(const std::vector<std::vector<double>>& a, const std::vector<double>& b,
                                 const std::vector<std::size_t>& cols) {
  const std::size_t k = cols.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (std::size_t r = 0; r < a.size(); ++r)
    for (std::size_t i = 0; i < k; ++i) {
      const double ai = a[r][cols[i]];
      for (std::size_t j = 0; j < k; ++j) m[i][j] += ai * a[r][cols[j]];
      m[i][k] += ai * b[r];
    }
  for (std::size_t i = 0; i < k; ++i) m[i][i] *= 1.0 + 1e-12;  // a ridge far below the data's scale
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < k; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[p][c])) p = r;
    std::swap(m[c], m[p]);
    if (std::fabs(m[c][c]) < 1e-300) continue;
    for (std::size_t r = 0; r < k; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (std::size_t j = c; j <= k; ++j) m[r][j] -= f * m[c][j];
    }
  }
  std::vector<double> z(k, 0.0);
  for (std::size_t i = 0; i < k; ++i) z[i] = std::fabs(m[i][i]) < 1e-300 ? 0.0 : m[i][k] / m[i][i];
  return z;
}

}  // namespace

std::vector<double> nnls(const std::vector<std::vector<double>>& a_in, const std::vector<double>& b) {
  if (a_in.size() != b.size()) throw std::invalid_argument("nnls: the rows do not match the values");
  const std::size_t n = a_in.empty() ? 0 : a_in[0].size();
  for (const auto& row : a_in)
    if (row.size() != n) throw std::invalid_argument("nnls: ragged rows");
  // Unit-norm columns; x is scaled back at the end.
  std::vector<double> scale(n, 0.0);
  for (const auto& row : a_in)
    for (std::size_t j = 0; j < n; ++j) scale[j] += row[j] * row[j];
  for (double& s : scale) s = std::sqrt(s);
  std::vector<std::vector<double>> a = a_in;
  for (auto& row : a)
    for (std::size_t j = 0; j < n; ++j) row[j] = scale[j] > 0 ? row[j] / scale[j] : 0.0;

  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  auto gradient = [&](std::vector<double>& w) {  // w = Aᵀ (b − A x)
    w.assign(n, 0.0);
    for (std::size_t r = 0; r < a.size(); ++r) {
      double res = b[r];
      for (std::size_t j = 0; j < n; ++j) res -= a[r][j] * x[j];
      for (std::size_t j = 0; j < n; ++j) w[j] += a[r][j] * res;
    }
  };
  constexpr double kTolerance = 1e-12;
  std::vector<double> w;
  for (std::size_t outer = 0; outer < 3 * n + 3; ++outer) {
    gradient(w);
    std::size_t best = n;
    double best_w = kTolerance;
    for (std::size_t j = 0; j < n; ++j)
      if (!passive[j] && scale[j] > 0 && w[j] > best_w) best_w = w[j], best = j;
    if (best == n) break;
    passive[best] = true;
    for (std::size_t inner = 0; inner < 3 * n + 3; ++inner) {
      std::vector<std::size_t> cols;
      for (std::size_t j = 0; j < n; ++j)
        if (passive[j]) cols.push_back(j);
      const std::vector<double> z = solve_subset(a, b, cols);
      bool feasible = true;
      for (double v : z) feasible = feasible && v > 0;
      if (feasible) {
        std::fill(x.begin(), x.end(), 0.0);
        for (std::size_t i = 0; i < cols.size(); ++i) x[cols[i]] = z[i];
        break;
      }
      // Step from x towards z until the first passive variable reaches 0; it leaves the set.
      double alpha = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < cols.size(); ++i)
        if (z[i] <= 0) alpha = std::min(alpha, x[cols[i]] / (x[cols[i]] - z[i]));
      for (std::size_t i = 0; i < cols.size(); ++i) {
        x[cols[i]] += alpha * (z[i] - x[cols[i]]);
        if (x[cols[i]] <= kTolerance) x[cols[i]] = 0, passive[cols[i]] = false;
      }
    }
  }
  for (std::size_t j = 0; j < n; ++j) x[j] = scale[j] > 0 ? std::max(0.0, x[j]) / scale[j] : 0.0;
  return x;
}

}  // namespace eaglesim
