// The attention fits: the non-negative least squares they solve, the geometry form recovered from
// synthetic points of a known model (busiest CTA's bytes and tile FLOPs, combine traffic), degenerate
// inputs, and the one-request fit of an H200 calibration's measured tables, where the verify
// kernel and the split-KV decode kernel get a fit each.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "calibration/model_fit.hpp"
#include "core/nnls.hpp"
#include "cost/attention_geometry.hpp"
#include "cost/fitted_model.hpp"
#include "topology/topology.hpp"
#include "op_builders.hpp"

using namespace eaglesim;
using test_support::gqa;

namespace {

constexpr int kSms = 132;

double residual_of(const std::vector<std::vector<double>>& a, const std::vector<double>& b, const std::vector<double>& x) {
  double sq = 0;
  for (std::size_t r = 0; r < a.size(); ++r) {
    double v = -b[r];
    for (std::size_t j = 0; j < x.size(); ++j) v += a[r][j] * x[j];
    sq += v * v;
  }
  return sq;
}

}  // namespace

TEST(Nnls, RecoversAnExactNonNegativeSolution) {
  const std::vector<double> truth{2.0, 0.5, 3.0};
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (int i = 0; i < 12; ++i) {
    const std::vector<double> row{1.0, static_cast<double>(i), static_cast<double>(i * i % 7) * 1e3};
    b.push_back(row[0] * truth[0] + row[1] * truth[1] + row[2] * truth[2]);
    a.push_back(row);
  }
  const std::vector<double> x = nnls(a, b);
  for (std::size_t j = 0; j < truth.size(); ++j) EXPECT_NEAR(x[j], truth[j], 1e-6 * (1 + truth[j]));
}

TEST(Nnls, ClampsAtZeroWhereTheUnconstrainedOptimumIsNegative) {
  // b = 1 + i - 0.2 i²: the unconstrained fit wants a negative i² cost.
  std::vector<std::vector<double>> a;
  std::vector<double> b;
  for (int i = 0; i < 8; ++i) {
    a.push_back({1.0, static_cast<double>(i), static_cast<double>(i * i)});
    b.push_back(1.0 + i - 0.2 * i * i);
  }
  const std::vector<double> x = nnls(a, b);
  EXPECT_EQ(x[2], 0.0);
  for (double v : x) EXPECT_GE(v, 0.0);
  // Optimal among the non-negative: no small non-negative move lowers the residual.
  const double best = residual_of(a, b, x);
  for (std::size_t j = 0; j < x.size(); ++j)
    for (double d : {-1e-3, 1e-3}) {
      std::vector<double> y = x;
      y[j] = std::max(0.0, y[j] + d);
      EXPECT_GE(residual_of(a, b, y), best - 1e-9);
    }
}

TEST(Nnls, ZeroColumnGetsZeroAndRaggedRowsThrow) {
  const std::vector<double> x = nnls({{1, 0}, {2, 0}, {3, 0}}, {2, 4, 6});
  EXPECT_NEAR(x[0], 2.0, 1e-9);
  EXPECT_EQ(x[1], 0.0);
  EXPECT_THROW(nnls({{1, 0}, {2}}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(nnls({{1, 0}}, {1, 2}), std::invalid_argument);
}

namespace {

// One-request points on the verify kernel (two head layouts x query tokens x KV, small KV
// included, where the grid is one split), priced by `truth`.
std::vector<FitSample> one_request_samples(const FittedModel& truth) {
  std::vector<FitSample> s;
  for (auto [heads, kv_heads] : {std::pair<int, int>{32, 8}, {64, 8}})
    for (std::int64_t q : {1, 4, 16})
      for (std::int64_t kv : {64, 256, 1024, 4096, 8192, 32768}) {
        const FittedFeatures f = fitted_features(gqa(q, kv, heads, kv_heads, 128), kSms);
        s.push_back({f, fitted_us(truth, f)});
      }
  return s;
}

double relative_error(const FittedModel& fit, const FittedModel& truth, const Op& op) {
  const FittedFeatures f = fitted_features(op, kSms);
  return fitted_us(fit, f) / fitted_us(truth, f) - 1.0;
}

}  // namespace

TEST(AttentionFit, RecoversTheBusiestCtasRatesAndTheCombineFromSyntheticPoints) {
  FittedModel truth;
  truth.fixed_us = 3.0, truth.bw_gbs = 4000, truth.tflops = 300;
  truth.wave_us = 1.0, truth.block_bw_gbs = 20, truth.block_tflops = 2.5;
  truth.combine_us = 2.0, truth.combine_gbs = 1500;
  const FittedModel f = fit_model(one_request_samples(truth), true, FitBounds{}, true);
  EXPECT_LT(f.max_residual, 0.005);
  EXPECT_NEAR(f.block_bw_gbs / truth.block_bw_gbs, 1.0, 0.02);
  EXPECT_NEAR(f.block_tflops / truth.block_tflops, 1.0, 0.05);
  EXPECT_NEAR(f.combine_gbs / truth.combine_gbs, 1.0, 0.1);
  // One wave everywhere: the fixed and per-wave costs are one sum here.
  EXPECT_NEAR(f.fixed_us + f.wave_us, truth.fixed_us + truth.wave_us, 0.05);
  EXPECT_NEAR(f.combine_us, truth.combine_us, 0.05);
  // Shapes it was not fitted to: a group of five heads, 2 and 32 query tokens.
  for (const Op& op : {gqa(2, 16384, 40, 8, 128), gqa(32, 1024, 40, 8, 128), gqa(8, 4096, 32, 8, 128)})
    EXPECT_LT(std::fabs(relative_error(f, truth, op)), 0.01) << op.shape_string();
}

TEST(AttentionFit, DegenerateInputsGiveAFlatFitOrAClearError) {
  // Every point the same µs: the fit is that constant, not a rate run off to a bound.
  std::vector<FitSample> flat;
  for (std::int64_t kv : {512, 1024, 2048, 4096}) flat.push_back({fitted_features(gqa(1, kv, 32, 8, 128), kSms), 7.0});
  const FittedModel f = fit_model(flat, true, FitBounds{}, true);
  EXPECT_LT(f.max_residual, 0.02);
  EXPECT_GE(f.fixed_us, 0.0);
  EXPECT_GT(f.bw_gbs, 0.0);
  EXPECT_GT(f.tflops, 0.0);
  // Points that are not positive and finite do not count; fewer than three left is an error.
  std::vector<FitSample> bad = flat;
  bad.resize(2);
  bad.push_back({flat[2].features, 0.0});
  bad.push_back({flat[3].features, std::nan("")});
  EXPECT_THROW(fit_model(bad, true, FitBounds{}, true), std::invalid_argument);
}

TEST(AttentionFit, KernelsHaveTheirOwnKeysAndFallBackToTheOneRequestFit) {
  EXPECT_EQ(fitted_model_key(gqa(4, 4096, 32, 8, 128), kSms), "attention:gqa");
  EXPECT_EQ(fitted_model_key(gqa(64, 4096, 32, 8, 128), kSms), "attention:gqa:decode");  // over 32 query tokens
  EXPECT_EQ(fitted_model_key(gqa(4, 4096, 16, 4, 256), kSms), "attention:gqa:decode");   // head dim 256
  Op batch = gqa(4, 4096, 32, 8, 128);
  batch.batch = 8;
  EXPECT_EQ(fitted_model_key(batch, kSms), "attention:gqa:batch");
  Topology t;
  t.gpu.sms = kSms;
  FittedModel one;
  one.fixed_us = 5, one.bw_gbs = 3000, one.tflops = 200, one.points = 10;
  t.calibration.fitted["attention:gqa"] = one;
  ASSERT_NE(find_fitted_model(gqa(64, 4096, 32, 8, 128), t), nullptr);
  EXPECT_EQ(find_fitted_model(gqa(64, 4096, 32, 8, 128), t)->fixed_us, 5);
  FittedModel decode = one;
  decode.fixed_us = 9;
  t.calibration.fitted["attention:gqa:decode"] = decode;
  EXPECT_EQ(find_fitted_model(gqa(64, 4096, 32, 8, 128), t)->fixed_us, 9);
  EXPECT_EQ(find_fitted_model(gqa(4, 4096, 32, 8, 128), t)->fixed_us, 5);
}

namespace {

// One-request tables of `eaglesim calibrate --grid coarse --attention-fit geometry` on 1 x H200
// (Llama-3.1-8B and Qwen3-32B layouts), µs by kv_len.
Calibration h200_attention_tables() {
  const std::map<std::string, std::vector<SizeCalPoint>> t{
      {"gqa:32:8:128:q1", {{64, 4.449}, {128, 5.156}, {256, 6.442}, {512, 6.826}, {1024, 8.302}, {2048, 9.738}, {4096, 12.676}, {8192, 18.630}, {32768, 53.960}}},
      {"gqa:32:8:128:q16", {{512, 14.121}, {2048, 18.144}, {8192, 32.062}, {32768, 77.932}}},
      {"gqa:32:8:128:q4", {{64, 5.135}, {128, 5.903}, {256, 7.933}, {512, 8.329}, {1024, 10.013}, {2048, 11.536}, {4096, 14.151}, {8192, 22.638}, {32768, 49.968}}},
      {"gqa:32:8:128:q64", {{512, 66.885}, {2048, 217.218}, {8192, 807.768}, {32768, 3171.652}}},
      {"gqa:64:8:128:q1", {{64, 4.250}, {128, 5.020}, {256, 6.836}, {512, 7.305}, {1024, 9.024}, {2048, 10.516}, {4096, 13.127}, {8192, 18.164}, {32768, 50.448}}},
      {"gqa:64:8:128:q16", {{512, 14.781}, {2048, 19.617}, {8192, 45.028}, {32768, 143.196}}},
      {"gqa:64:8:128:q4", {{64, 6.596}, {128, 7.539}, {256, 9.791}, {512, 10.270}, {1024, 11.768}, {2048, 13.540}, {4096, 16.682}, {8192, 22.554}, {32768, 56.420}}},
      {"gqa:64:8:128:q64", {{512, 100.214}, {2048, 367.937}, {8192, 1436.328}, {32768, 5698.680}}},
  };
  Calibration c;
  c.attention = t;
  return c;
}

GpuSpec h200() {
  GpuSpec g;
  g.sms = kSms;
  g.mem_bw_gbs = 4800;
  g.bf16_tflops = 989;
  return g;
}

}  // namespace

TEST(AttentionFit, H200TablesFitEachKernelClosely) {
  const Calibration cal = h200_attention_tables();
  const std::map<std::string, std::vector<FitSample>> samples = attention_table_samples(cal, kSms);
  ASSERT_EQ(samples.count("attention:gqa"), 1u);
  ASSERT_EQ(samples.count("attention:gqa:decode"), 1u);
  EXPECT_EQ(samples.at("attention:gqa").size(), 44u);        // q 1, 4, 16: the verify kernel
  EXPECT_EQ(samples.at("attention:gqa:decode").size(), 8u);  // q 64: the split-KV decode kernel
  const std::map<std::string, FittedModel> fits = refit_attention_tables(cal, h200());
  const FittedModel& verify = fits.at("attention:gqa");
  const FittedModel& decode = fits.at("attention:gqa:decode");
  EXPECT_LT(verify.rms_residual, 0.12);
  EXPECT_LT(verify.max_residual, 0.30);
  EXPECT_LT(decode.rms_residual, 0.08);
  // The decode kernel computes on CUDA cores: its FLOP rate an order of magnitude under the MMA's.
  EXPECT_LT(decode.tflops, 30);
  // One model over both kernels cannot follow them.
  std::vector<FitSample> both = samples.at("attention:gqa");
  both.insert(both.end(), samples.at("attention:gqa:decode").begin(), samples.at("attention:gqa:decode").end());
  FitBounds b;
  b.max_bw_gbs = 1.5 * 4800, b.max_tflops = 1.5 * 989;
  EXPECT_GT(fit_model(both, true, b, true).rms_residual, 2 * verify.rms_residual);
}
