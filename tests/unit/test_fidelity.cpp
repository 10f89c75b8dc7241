// fidelity's arithmetic on made-up results: relative errors, A/B sign agreement (with the
// measurement-noise flag), and the summary over traces.
#include <cmath>

#include <gtest/gtest.h>

#include "report/fidelity_printer.hpp"

using namespace eaglesim;

namespace {

StepResult step(double us, double spread = 0) {
  StepResult r;
  r.step_us = us;
  r.step_us_min = us - spread / 2;
  r.step_us_max = us + spread / 2;
  return r;
}

FidelityStrategy run(const std::string& s, double measured, double predicted, std::optional<double> baseline = {},
                     double spread = 0) {
  FidelityStrategy r;
  r.strategy = s;
  r.measured = step(measured, spread);
  r.predicted = step(predicted);
  if (baseline) r.baseline = step(*baseline);
  return r;
}

}  // namespace

TEST(Fidelity, RelativeError) {
  EXPECT_DOUBLE_EQ(relative_error(103, 100), 0.03);
  EXPECT_DOUBLE_EQ(relative_error(97, 100), -0.03);
  EXPECT_DOUBLE_EQ(relative_error(0, 0), 0.0);
  EXPECT_TRUE(std::isinf(relative_error(1, 0)));
}

TEST(Fidelity, AbSignsPerPair) {
  // measured: nccl 1000, oneshot 900, fused 880; sim: 1010, 905, 910 (fused vs oneshot flips).
  std::vector<FidelityStrategy> runs{run("nccl", 1000, 1010), run("oneshot", 900, 905, {}, 4),
                                     run("fused", 880, 910, {}, 4)};
  const auto ab = compare_ab(runs, false);
  ASSERT_EQ(ab.size(), 3u);
  EXPECT_EQ(ab[0].a, "nccl");
  EXPECT_EQ(ab[0].b, "oneshot");
  EXPECT_DOUBLE_EQ(ab[0].measured_diff, 100);
  EXPECT_DOUBLE_EQ(ab[0].predicted_diff, 105);
  EXPECT_TRUE(ab[0].same_sign);
  EXPECT_TRUE(ab[1].same_sign);   // nccl - fused: +120 / +100
  EXPECT_FALSE(ab[2].same_sign);  // oneshot - fused: +20 / -5
  EXPECT_FALSE(ab[2].measured_within_noise);
}

TEST(Fidelity, DifferenceInsideTheReplaySpreadIsFlagged) {
  std::vector<FidelityStrategy> runs{run("oneshot", 900, 905, {}, 10), run("fused", 898, 910, {}, 10)};
  const auto ab = compare_ab(runs, false);
  ASSERT_EQ(ab.size(), 1u);
  EXPECT_FALSE(ab[0].same_sign);
  EXPECT_TRUE(ab[0].measured_within_noise);
}

TEST(Fidelity, UnsupportedOrMissingSidesAreSkipped) {
  std::vector<FidelityStrategy> runs{run("nccl", 1000, 1010), run("oneshot", 900, 905)};
  FidelityStrategy quant;
  quant.strategy = "quant";
  quant.unsupported = "cuda: not built";
  runs.push_back(quant);
  EXPECT_EQ(compare_ab(runs, false).size(), 1u);
  EXPECT_TRUE(compare_ab(runs, true).empty()) << "no baseline results";
}

TEST(Fidelity, SummaryOverTraces) {
  FidelityTrace a;
  a.trace = "a.json";
  a.runs = {run("nccl", 1000, 1020, 1300.0), run("oneshot", 900, 890, 800.0)};
  FidelityTrace b;
  b.trace = "b.json";
  b.runs = {run("nccl", 500, 505, 400.0), run("oneshot", 450, 460, 480.0)};
  const FidelitySummary s = summarize({a, b});
  EXPECT_NEAR(s.max_abs_error, 0.0222, 1e-3);          // 460 vs 450
  EXPECT_NEAR(s.max_abs_error_baseline, 0.3, 1e-9);    // 1300 vs 1000
  EXPECT_EQ(s.ab_pairs, 2);
  EXPECT_EQ(s.ab_mismatches, 0);
  EXPECT_EQ(s.ab_pairs_baseline, 2);
  EXPECT_EQ(s.ab_mismatches_baseline, 1);  // b: preset says oneshot slower
  EXPECT_TRUE(s.has_baseline);
  const std::string text = format_fidelity({a, b}, s, "cal", "2x-h200-nvlink", 3.0);
  EXPECT_NE(text.find("+2.00%"), std::string::npos) << text;
  EXPECT_NE(text.find("within the 3.0% target"), std::string::npos) << text;
  EXPECT_NE(text.find("A/B pairs with the same sign: 2/2"), std::string::npos) << text;
  const auto j = fidelity_json({a, b}, s, "cal", "2x-h200-nvlink", 3.0);
  EXPECT_TRUE(j["summary"]["within_target"].get<bool>());
  EXPECT_EQ(j["traces"][1]["ab_baseline"][0]["same_sign"].get<bool>(), false);
}

// The kinds' marginals (the step minus the step without the kind) print and go to the JSON
// beside the event split, for the kinds both sides measured; none where neither did.
TEST(Fidelity, KindMarginalsBesideTheSplit) {
  FidelityTrace t;
  t.trace = "t.json";
  t.runs = {run("nccl", 1000, 990)};
  t.runs[0].measured->kind_us[static_cast<std::size_t>(OpKind::attention)] = 300;
  t.runs[0].predicted->kind_us[static_cast<std::size_t>(OpKind::attention)] = 260;
  t.runs[0].measured->kind_marginal_us[static_cast<std::size_t>(OpKind::attention)] = 250;
  t.runs[0].predicted->kind_marginal_us[static_cast<std::size_t>(OpKind::attention)] = 240;
  t.runs[0].measured->kind_marginal_us[static_cast<std::size_t>(OpKind::gemm)] = 600;  // the sim has none
  const FidelitySummary s = summarize({t});
  const std::string text = format_fidelity({t}, s, "cal", "", 3.0);
  EXPECT_NE(text.find("attention 250.0/240.0 (-4.00%)"), std::string::npos) << text;
  EXPECT_NE(text.find("attention 300.0/260.0 (-13.33%)"), std::string::npos) << text;
  EXPECT_EQ(text.find("gemm 600.0"), std::string::npos) << "a kind only one side measured is not compared";
  const auto j = fidelity_json({t}, s, "cal", "", 3.0);
  const auto& m = j["traces"][0]["strategies"][0]["measured"]["kind_marginal_us"];
  EXPECT_DOUBLE_EQ(m["attention"].get<double>(), 250.0);
  EXPECT_DOUBLE_EQ(m["gemm"].get<double>(), 600.0);
  EXPECT_FALSE(m.contains("rmsnorm"));

  FidelityTrace plain;
  plain.trace = "p.json";
  plain.runs = {run("nccl", 1000, 990)};
  EXPECT_EQ(format_fidelity({plain}, summarize({plain}), "cal", "", 3.0).find("marginal (the step"), std::string::npos)
      << "no marginals: no marginal block";
}
