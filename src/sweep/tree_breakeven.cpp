#include "sweep/tree_breakeven.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "domain/rate_bisection.hpp"
#include "trace/speculative.hpp"

namespace eaglesim {

TreeBreakevenCurve::TreeBreakevenCurve(const SpecConfig& config) : config_(config) {
  const int K = config.eagle_topk;
  // The expanded nodes of a depth, as m values with counts: the root's K children first.
  std::map<int, long long> frontier;
  for (int d = 1; d <= config.num_steps; ++d) {
    std::map<int, long long> level;
    if (d == 1) {
      for (int r = 1; r <= K; ++r) ++level[r - 1];
    } else {
      for (const auto& [m, n] : frontier)
        for (int r = 1; r <= K; ++r) level[m + r - 1] += n;
    }
    Level l;
    for (const auto& [m, n] : level) {
      l.m.push_back(m);
      l.count.push_back(n);
      max_m_ = std::max(max_m_, m);
    }
    levels_.push_back(std::move(l));
    // The K with the smallest m (the most likely) are expanded at the next step.
    frontier.clear();
    long long left = K;
    for (const auto& [m, n] : level) {
      if (left == 0) break;
      const long long take = std::min(left, n);
      frontier[m] = take;
      left -= take;
    }
  }
}

double TreeBreakevenCurve::tokens_at(double a) const {
  // Powers by repeated multiplication: depths and most m are small integers (std::pow past them).
  constexpr int kPowers = 512;
  double pa[kMaxSpecSteps + 1], pb[kPowers + 1];
  const int S = static_cast<int>(levels_.size());
  const int mm = std::min(max_m_, kPowers);
  pa[0] = pb[0] = 1.0;
  for (int i = 1; i <= S; ++i) pa[i] = pa[i - 1] * a;
  for (int i = 1; i <= mm; ++i) pb[i] = pb[i - 1] * (1.0 - a);
  auto b_pow = [&](int m) { return m <= kPowers ? pb[m] : std::pow(1.0 - a, m); };
  // Merge the depths' lists (each descending in value) until D - 1 nodes are taken.
  int pos[kMaxSpecSteps] = {0};
  long long left = config_.num_draft_tokens - 1;
  double e = 1.0;
  while (left > 0) {
    int best = -1;
    double value = -1.0;
    for (int d = 0; d < S; ++d) {
      const Level& l = levels_[static_cast<std::size_t>(d)];
      if (pos[d] >= static_cast<int>(l.m.size())) continue;
      const double v = pa[d + 1] * b_pow(l.m[static_cast<std::size_t>(pos[d])]);
      if (v > value) value = v, best = d;
    }
    if (best < 0) break;
    const long long n = std::min(left, levels_[static_cast<std::size_t>(best)].count[static_cast<std::size_t>(pos[best])]);
    e += static_cast<double>(n) * value;
    left -= n;
    ++pos[best];
  }
  return e;
}

std::optional<double> TreeBreakevenCurve::rate_for_tokens(double tokens) const {
  return eaglesim::rate_for_tokens(tokens, max_tokens_per_cycle(config_), [&](double a) { return tokens_at(a); });
}

}  // namespace eaglesim
