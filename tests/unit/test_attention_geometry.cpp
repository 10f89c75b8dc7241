// The attention kernels' launch geometry as the cost model reads it: the same planner as the
// CUDA launcher (known launch shapes), the decode kernel's split heuristic, and the fitted
// attention model that prices waves, the busiest CTA and the combine (the fit recovers known
// parameters from synthetic points; the topology keeps them).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibration/model_fit.hpp"
#include "cost/attention_geometry.hpp"
#include "cost/fitted_model.hpp"
#include "cost/verify_attention_plan.hpp"
#include "topology/topology.hpp"
#include "op_builders.hpp"

using namespace eaglesim;
using test_support::gqa;

namespace {

constexpr int kSms = 132;

Op batched(Op op, int batch, std::vector<std::int64_t> kv_lens = {}) {
  op.batch = batch;
  op.kv_lens = std::move(kv_lens);
  if (!op.kv_lens.empty()) op.kv_len = *std::max_element(op.kv_lens.begin(), op.kv_lens.end());
  return op;
}

}  // namespace

TEST(AttentionGeometry, GroupOfFiveAt32TokensRunsThreeRowBlocksOf64) {
  // Qwen3-14B: 40 heads over 8 KV heads, 32 draft tokens: 160 rows per KV head.
  const Op a = gqa(32, 1024, 40, 8, 128);
  const AttentionGeometry g = attention_geometry(a, kSms);
  EXPECT_TRUE(g.verify_kernel);
  EXPECT_EQ(g.rows_computed, 192);
  const VerifyAttentionPlan plan = plan_verify_attention(verify_attention_shape(a), verify_attention_kv_lens(a));
  EXPECT_EQ(plan.kernel.variant, VerifyAttentionVariant::gqa_d128_r64);
  EXPECT_EQ(plan.kernel.row_chunks, 3);
  EXPECT_EQ(g.blocks, static_cast<double>(plan.grid_blocks()));
  EXPECT_EQ(g.slots, 2.0 * kSms);  // head dim 128: two resident blocks per SM
  EXPECT_EQ(g.waves, std::ceil(g.blocks / g.slots));
  EXPECT_EQ(g.combine, !plan.combine.empty());
}

TEST(AttentionGeometry, MatchesTheLaunchersPlanOverBatchesAndRaggedKv) {
  const std::vector<Op> ops{batched(gqa(4, 2048, 32, 8, 128), 1), batched(gqa(8, 4096, 32, 8, 128), 8),
                            batched(gqa(1, 0, 32, 8, 128), 3, {512, 8192, 2048}),
                            batched(gqa(8, 512, 64, 8, 128), 64)};
  for (const Op& a : ops) {
    const VerifyAttentionPlan plan = plan_verify_attention(verify_attention_shape(a), verify_attention_kv_lens(a));
    const AttentionGeometry g = attention_geometry(a, kSms);
    SCOPED_TRACE(a.shape_string());
    EXPECT_EQ(g.blocks, static_cast<double>(plan.grid_blocks()));
    EXPECT_EQ(g.rows_computed, plan.kernel.rows_per_block * plan.kernel.row_chunks);
    double slots = 0;
    for (const auto& c : plan.combine) slots += c.splits;
    EXPECT_EQ(g.partial_bytes, slots * a.q_tokens * a.heads * (4.0 * 128 + 4.0));
    // The busiest slot streams at least an even share of all blocks' positions and at most the
    // longest split per wave.
    double positions = 0;
    for (const auto& w : plan.work) positions += (w.kv_end - w.kv_begin) * a.kv_heads * plan.kernel.row_chunks;
    EXPECT_GE(g.crit_tokens, positions / g.slots - 1e-9);
    EXPECT_LE(g.crit_tokens, g.waves * plan.chunk_tokens + 1e-9);
  }
  // 64 requests of 512 positions: no request needs a split at 8 x 64 blocks per request... and
  // no combine then.
  const AttentionGeometry many = attention_geometry(batched(gqa(8, 512, 64, 8, 128), 64), kSms);
  EXPECT_FALSE(many.combine);
  EXPECT_EQ(many.partial_bytes, 0);
}

TEST(AttentionGeometry, ShapesTheVerifyKernelRefusesUseTheDecodeKernelsSplits) {
  // 64 draft tokens (over the verify kernel's 32): the split-KV decode kernel. 4 x 64 = 256 rows
  // = 16 row blocks of 16; 8 KV heads x 16 = 128 blocks per split, two blocks per SM wanted:
  // ceil(264 / 128) = 3 splits of ceil(512 / 3) = 171 -> 192 positions (tile 64).
  const AttentionGeometry g = attention_geometry(gqa(64, 512, 32, 8, 128), kSms);
  EXPECT_FALSE(g.verify_kernel);
  EXPECT_EQ(g.blocks, 3 * 8 * 16);
  EXPECT_EQ(g.rows_computed, 256);
  EXPECT_TRUE(g.combine);
  const DecodeAttentionSplit s = decode_attention_split(512, 64, 8, 256, kSms);
  EXPECT_EQ(s.row_blocks, 16);
  EXPECT_EQ(s.splits, 3);
  EXPECT_EQ(s.split_len, 192);
  // A long KV with few rows: ceil(264 / 8) = 33 splits wanted, ceil(32768 / 33) = 993 rounds up to
  // 1024 positions (tile 64), so 32 splits.
  const DecodeAttentionSplit l = decode_attention_split(32768, 64, 8, 4, kSms);
  EXPECT_EQ(l.row_blocks, 1);
  EXPECT_EQ(l.splits, 32);
  EXPECT_EQ(l.split_len, 1024);
  EXPECT_EQ(decode_attention_tile(128, false), 64);
  EXPECT_EQ(decode_attention_tile(256, false), 32);
  EXPECT_EQ(decode_attention_tile(576, true), 32);
}

TEST(AttentionGeometry, FeaturesCarryPaddedRowsWavesAndCombine) {
  const Op five = gqa(32, 1024, 40, 8, 128);
  const FittedFeatures f = fitted_features(five, kSms);
  const AttentionGeometry g = attention_geometry(five, kSms);
  const double share = std::min(g.blocks, double(kSms)) / kSms;
  EXPECT_NEAR(f.flops, five.flops() * 192.0 / 160.0 / share, 1e-6 * f.flops);
  EXPECT_EQ(f.waves, g.waves);
  EXPECT_EQ(f.combine, g.combine ? 1.0 : 0.0);
  EXPECT_EQ(f.crit_bytes, g.crit_tokens * 2.0 * 256);
  EXPECT_EQ(f.bytes, five.io_bytes() + 2 * g.partial_bytes);
  // Without geometry parameters the formula is the plain one.
  FittedModel plain;
  plain.fixed_us = 3, plain.bw_gbs = 4000, plain.tflops = 300;
  FittedModel geo = plain;
  geo.wave_us = 1.5, geo.combine_us = 2.0;
  EXPECT_NEAR(fitted_us(geo, f) - fitted_us(plain, f), 1.5 * f.waves + 2.0 * f.combine, 1e-9);
}

namespace {

// Attention points like the designed grid's: two head layouts x query tokens x KV, and batches
// with ragged KV, priced by `truth`.
std::vector<FitSample> attention_samples(const FittedModel& truth) {
  std::vector<FitSample> s;
  for (auto [heads, kv_heads] : {std::pair<int, int>{32, 8}, {64, 8}, {40, 8}})
    for (std::int64_t q : {1, 4, 16, 32})
      for (std::int64_t kv : {512, 2048, 8192, 32768}) {
        const FittedFeatures f = fitted_features(gqa(q, kv, heads, kv_heads, 128), kSms);
        s.push_back({f, fitted_us(truth, f)});
      }
  for (int b : {4, 16, 64})
    for (std::int64_t q : {1, 8}) {
      std::vector<std::int64_t> lens;
      for (int r = 0; r < b; ++r) lens.push_back(512 + 1024 * (r % 5));
      const FittedFeatures f = fitted_features(batched(gqa(q, 0, 32, 8, 128), b, lens), kSms);
      s.push_back({f, fitted_us(truth, f)});
    }
  return s;
}

}  // namespace

TEST(AttentionGeometry, FitRecoversGeometryParametersFromSyntheticPoints) {
  FittedModel truth;
  truth.fixed_us = 4.0, truth.bw_gbs = 3600, truth.tflops = 280;
  truth.wave_us = 2.5, truth.block_bw_gbs = 40, truth.combine_us = 3.0;
  const std::vector<FitSample> s = attention_samples(truth);
  const FittedModel f = fit_model(s, true, FitBounds{}, true);
  EXPECT_LT(f.max_residual, 0.01);
  EXPECT_NEAR(f.fixed_us / truth.fixed_us, 1.0, 0.1);
  EXPECT_NEAR(f.bw_gbs / truth.bw_gbs, 1.0, 0.03);
  EXPECT_NEAR(f.tflops / truth.tflops, 1.0, 0.03);
  EXPECT_NEAR(f.wave_us / truth.wave_us, 1.0, 0.15);
  EXPECT_NEAR(f.combine_us / truth.combine_us, 1.0, 0.15);
  EXPECT_NEAR(f.block_bw_gbs / truth.block_bw_gbs, 1.0, 0.1);
  // The plain formula cannot follow these points as closely.
  const FittedModel plain = fit_model(s, true, FitBounds{}, false);
  EXPECT_GT(plain.rms_residual, 3 * f.rms_residual);
}

TEST(AttentionGeometry, TopologyKeepsTheGeometryTermsAndRejectsThemElsewhere) {
  Topology t = read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json");
  t.calibration.fitted.clear();
  FittedModel a;
  a.fixed_us = 4.5, a.bw_gbs = 3500, a.tflops = 275, a.points = 40;
  a.wave_us = 1.25, a.block_bw_gbs = 37.5, a.combine_us = 2.75;
  t.calibration.fitted["attention:gqa"] = a;
  const std::string text = topology_to_string(t);
  const Topology back = parse_topology(nlohmann::json::parse(text), "t.json");
  EXPECT_EQ(topology_to_string(back), text);
  const FittedModel& r = back.calibration.fitted.at("attention:gqa");
  EXPECT_EQ(r.wave_us, 1.25);
  EXPECT_EQ(r.block_bw_gbs, 37.5);
  EXPECT_EQ(r.combine_us, 2.75);
  nlohmann::json j = nlohmann::json::parse(text);
  j["calibration"]["fitted"]["gemm:bf16"] = {{"fixed_us", 3.0}, {"bw_gbs", 4000}, {"tflops", 700}, {"wave_us", 1.0},
                                             {"points", 20}, {"rms_residual", 0.02}, {"max_residual", 0.05}};
  EXPECT_THROW(parse_topology(j, "t.json"), std::exception);
}
