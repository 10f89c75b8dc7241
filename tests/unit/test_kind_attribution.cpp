#include "domain/kind_attribution.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace eaglesim {
namespace {

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

TEST(KindAttribution, EqualShareOffEveryKernelOpThenScaledToTheStep) {
  // Three kernels of 10, 20, 30 µs true time, each with a 2 µs event: spans 12, 22, 32; step 60.
  const auto out = fit_spans_to_step({12, 22, 32}, {}, 60);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NEAR(out[0], 10, 1e-9);
  EXPECT_NEAR(out[1], 20, 1e-9);
  EXPECT_NEAR(out[2], 30, 1e-9);
}

TEST(KindAttribution, AbsorbedOpsGetZeroAndTheirSpansLeaveTheSum) {
  // A fused add + RMSNorm: the absorbed rmsnorm's span (1 µs) is its event alone. Had it taken an
  // equal share, the kernels would keep less than their true time.
  const auto out = fit_spans_to_step({12, 1, 22, 32}, {false, true, false, false}, 60);
  EXPECT_EQ(out[1], 0.0);
  EXPECT_NEAR(out[0], 10, 1e-9);
  EXPECT_NEAR(out[2], 20, 1e-9);
  EXPECT_NEAR(out[3], 30, 1e-9);
  EXPECT_NEAR(sum(out), 60, 1e-9);
}

TEST(KindAttribution, ShortOpsAreNotTakenBelowZeroAndTheSplitStillSumsToTheStep) {
  const auto out = fit_spans_to_step({1, 50, 50}, {}, 90);
  EXPECT_GE(out[0], 0.0);
  EXPECT_NEAR(sum(out), 90, 1e-9);
  EXPECT_GT(out[1], out[0]);
}

TEST(KindAttribution, SpansWithinTheStepAreKept) {
  const auto out = fit_spans_to_step({10, 20, 5}, {false, false, true}, 40);
  EXPECT_EQ(out[0], 10.0);
  EXPECT_EQ(out[1], 20.0);
  EXPECT_EQ(out[2], 0.0);
  EXPECT_TRUE(fit_spans_to_step({}, {}, 10).empty());
  const auto all_absorbed = fit_spans_to_step({3, 4}, {true, true}, 5);
  EXPECT_EQ(sum(all_absorbed), 0.0);
}

}  // namespace
}  // namespace eaglesim
