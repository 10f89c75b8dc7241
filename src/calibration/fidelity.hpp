#pragma once
// The arithmetic of `eaglesim fidelity` (report/fidelity_printer.hpp prints it): how far the simulator's verify-step time is from the
// CUDA replay's, per strategy and per op kind, and whether every A/B difference between two
// strategies has the same sign in both (the question an A/B run answers). Kept apart from the
// command so it can be tested on made-up results without a GPU.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "domain/step_result.hpp"

namespace eaglesim {

// (predicted - measured) / measured; 0 when both are 0; infinite when only measured is 0.
double relative_error(double predicted, double measured);

// One strategy's verify step on the three sides; nullopt where the side could not run it.
struct FidelityStrategy {
  std::string strategy;
  std::optional<StepResult> measured;    // cuda replay
  std::optional<StepResult> predicted;   // sim, calibrated topology
  std::optional<StepResult> baseline;    // sim, uncalibrated preset (optional)
  std::string unsupported;               // why a side did not run it
};

struct AbComparison {
  std::string a, b;
  double measured_diff = 0;   // measured a - b (µs)
  double predicted_diff = 0;  // sim a - b
  bool same_sign = false;
  // |measured_diff| within the replays' spread (half of max - min of either strategy): the
  // measured order is not established, so a sign mismatch there is not evidence either way.
  bool measured_within_noise = false;
};

// Every pair (i < j) of strategies that both sides ran. `baseline`: compare with the preset's
// prediction instead of the calibrated one (pairs without a baseline result are skipped).
std::vector<AbComparison> compare_ab(const std::vector<FidelityStrategy>& runs, bool baseline);

struct FidelityTrace {
  std::string trace;
  int ranks = 1;
  std::vector<FidelityStrategy> runs;
  std::vector<std::string> notes;
};

struct FidelitySummary {
  double max_abs_error = 0;           // calibrated, over strategies with both results
  double max_abs_error_baseline = 0;  // preset (0 when none)
  int ab_pairs = 0, ab_mismatches = 0, ab_mismatches_outside_noise = 0;
  int ab_pairs_baseline = 0, ab_mismatches_baseline = 0;
  bool has_baseline = false;
};
FidelitySummary summarize(const std::vector<FidelityTrace>& traces);

}  // namespace eaglesim
