#include "calibration/fidelity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>


namespace eaglesim {

double relative_error(double predicted, double measured) {
  if (measured == 0) return predicted == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (predicted - measured) / measured;
}

namespace {

const StepResult* side(const FidelityStrategy& r, bool baseline) {
  const auto& p = baseline ? r.baseline : r.predicted;
  return p ? &*p : nullptr;
}

int sign(double v) { return (v > 0) - (v < 0); }

double half_spread(const StepResult& r) { return 0.5 * std::max(0.0, r.step_us_max - r.step_us_min); }

}  // namespace

std::vector<AbComparison> compare_ab(const std::vector<FidelityStrategy>& runs, bool baseline) {
  std::vector<AbComparison> out;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t j = i + 1; j < runs.size(); ++j) {
      const StepResult* pi = side(runs[i], baseline);
      const StepResult* pj = side(runs[j], baseline);
      if (!runs[i].measured || !runs[j].measured || !pi || !pj) continue;
      AbComparison c;
      c.a = runs[i].strategy;
      c.b = runs[j].strategy;
      c.measured_diff = runs[i].measured->step_us - runs[j].measured->step_us;
      c.predicted_diff = pi->step_us - pj->step_us;
      c.same_sign = sign(c.measured_diff) == sign(c.predicted_diff);
      c.measured_within_noise =
          std::fabs(c.measured_diff) <= std::max(half_spread(*runs[i].measured), half_spread(*runs[j].measured));
      out.push_back(c);
    }
  return out;
}

FidelitySummary summarize(const std::vector<FidelityTrace>& traces) {
  FidelitySummary s;
  for (const auto& t : traces) {
    for (const auto& r : t.runs) {
      if (!r.measured) continue;
      if (r.predicted)
        s.max_abs_error = std::max(s.max_abs_error, std::fabs(relative_error(r.predicted->step_us, r.measured->step_us)));
      if (r.baseline) {
        s.has_baseline = true;
        s.max_abs_error_baseline =
            std::max(s.max_abs_error_baseline, std::fabs(relative_error(r.baseline->step_us, r.measured->step_us)));
      }
    }
    for (const auto& c : compare_ab(t.runs, false)) {
      ++s.ab_pairs;
      if (!c.same_sign) {
        ++s.ab_mismatches;
        if (!c.measured_within_noise) ++s.ab_mismatches_outside_noise;
      }
    }
    for (const auto& c : compare_ab(t.runs, true)) {
      ++s.ab_pairs_baseline;
      if (!c.same_sign) ++s.ab_mismatches_baseline;
    }
  }
  return s;
}

}  // namespace eaglesim
