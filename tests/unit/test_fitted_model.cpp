// The fitted cost models: fitting recovers known parameters, the fit prices shapes no table has,
// measured points correct it locally and fade away from it, the topology keeps it exactly and
// rejects broken parameter files.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calibration/calibration_plan.hpp"
#include "calibration/designed_grid.hpp"
#include "calibration/model_fit.hpp"
#include "calibration/plan_estimate.hpp"
#include "core/errors.hpp"
#include "cost/compute_model.hpp"
#include "cost/fitted_model.hpp"
#include "cost/local_correction.hpp"
#include "cost/low_bit_gemm_kernel.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "topology/topology.hpp"
#include "op_builders.hpp"

using namespace eaglesim;

namespace {

// Without the fitted models a preset may ship, so each test sets exactly the ones it checks.
Topology preset(const std::string& name) {
  Topology t = read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
  t.calibration.fitted.clear();
  return t;
}

Op gemm(std::int64_t m, std::int64_t n, std::int64_t k) { return test_support::gemm(m, n, k); }
Op gqa(std::int64_t q, std::int64_t kv) { return test_support::gqa(q, kv, 32, 8, 128); }
using test_support::rowwise;

FittedModel model(double fixed, double bw, double tflops) {
  FittedModel f;
  f.fixed_us = fixed, f.bw_gbs = bw, f.tflops = tflops, f.points = 10;
  return f;
}

constexpr int kSms = 132;

// GEMM samples over the designed rows and three widths, made by `truth`, each scaled by noise(i).
std::vector<FitSample> gemm_samples(const FittedModel& truth, double (*noise)(std::size_t)) {
  std::vector<FitSample> s;
  for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{4096, 4096}, {14336, 4096}, {4096, 14336}})
    for (std::int64_t m : grid_rows(GridDensity::coarse)) {
      const FittedFeatures f = fitted_features(gemm(m, n, k), kSms);
      s.push_back({f, fitted_us(truth, f) * noise(s.size())});
    }
  return s;
}

double exact(std::size_t) { return 1.0; }
// +-3 % alternating, one point in 17 three times slower (an outlier the robust loss must ignore).
double noisy(std::size_t i) { return (i % 17 == 5 ? 3.0 : 1.0) * (i % 2 ? 1.03 : 0.97); }

}  // namespace

TEST(FittedModel, FitRecoversKnownGemmParameters) {
  const FittedModel truth = model(4.0, 3800, 650);
  const FittedModel f = fit_model(gemm_samples(truth, exact), true, FitBounds{});
  EXPECT_NEAR(f.fixed_us, 4.0, 0.04);
  EXPECT_NEAR(f.bw_gbs, 3800, 20);
  EXPECT_NEAR(f.tflops, 650, 4);
  EXPECT_LT(f.max_residual, 0.005);
  EXPECT_EQ(f.points, 39);
}

TEST(FittedModel, RobustFitIgnoresAnOutlierAndReportsItsResidual) {
  const FittedModel truth = model(4.0, 3800, 650);
  const FittedModel f = fit_model(gemm_samples(truth, noisy), true, FitBounds{});
  EXPECT_NEAR(f.fixed_us / 4.0, 1.0, 0.08);
  EXPECT_NEAR(f.bw_gbs / 3800, 1.0, 0.04);
  EXPECT_NEAR(f.tflops / 650, 1.0, 0.04);
  EXPECT_GT(f.max_residual, 0.6);  // the outlier: fit / measured = 1/3
  EXPECT_GT(f.rms_residual, 0.03);
}

TEST(FittedModel, FitRecoversElementwiseParameters) {
  const FittedModel truth = model(2.6, 2900, 0);
  std::vector<FitSample> s;
  for (std::int64_t t : grid_rows(GridDensity::coarse))
    for (std::int64_t h : {4096, 8192}) {
      const FittedFeatures f = fitted_features(rowwise(OpKind::rmsnorm, t, h), kSms);
      EXPECT_EQ(f.flops, 0);
      s.push_back({f, fitted_us(truth, f)});
    }
  const FittedModel f = fit_model(s, false, FitBounds{});
  EXPECT_NEAR(f.fixed_us, 2.6, 0.03);
  EXPECT_NEAR(f.bw_gbs, 2900, 15);
  EXPECT_EQ(f.tflops, 0);
}

TEST(FittedModel, FitNeedsThreePoints) {
  std::vector<FitSample> s{{{1e6, 1e9}, 3.0}, {{2e6, 2e9}, 3.5}};
  EXPECT_THROW(fit_model(s, true, FitBounds{}), std::invalid_argument);
}

TEST(FittedModel, TileWavesRaiseTheComputeOfAPartialWave) {
  // 1024 x 4224 output: 8 x 33 = 264 tiles of 128 x 128 = 2 full waves on 132 SMs. One more tile
  // column (4352) needs a third wave of 128-row tiles (272 / 396 busy); 64-row tiles do better,
  // 16 x 34 = 544 tiles in 5 waves (544 / 660), and that is the tile the formula takes.
  const double full = fitted_features(gemm(1024, 4224, 4096), kSms).flops;
  const double partial = fitted_features(gemm(1024, 4352, 4096), kSms).flops;
  EXPECT_NEAR(full, 2.0 * 1024 * 4224 * 4096, 1e-3 * full);
  EXPECT_NEAR(partial / full, (4352.0 / 4224.0) * (660.0 / 544.0), 1e-9);
  // Small m pads to the 64-row tile: m = 1 costs the FLOPs of 64.
  EXPECT_DOUBLE_EQ(fitted_features(gemm(1, 4096, 4096), kSms).flops, fitted_features(gemm(64, 4096, 4096), kSms).flops);
}

TEST(FittedModel, SplitKFillsTheSmsAFewTilesLeaveIdle) {
  // 64 x 4096: 32 tiles of 64 x 128. With k = 4096 they split 4 ways (128 CTAs of 1024 k each);
  // with k = 256 a slice would be under 256 k, so 32 CTAs run and 100 SMs idle.
  const double split = fitted_features(gemm(64, 4096, 4096), kSms).flops / (2.0 * 64 * 4096 * 4096);
  const double whole = fitted_features(gemm(64, 4096, 256), kSms).flops / (2.0 * 64 * 4096 * 256);
  EXPECT_NEAR(split, 132.0 / 128.0, 1e-9);
  EXPECT_NEAR(whole, 132.0 / 32.0, 1e-9);
}

// A batch of requests has its own attention fit; without one it takes the one-request fit.
TEST(FittedModel, BatchAttentionHasItsOwnFitAndFallsBack) {
  Topology t = preset("2x-h200-nvlink");
  t.calibration.fitted["attention:gqa"] = model(5.0, 3500, 300);
  Op b = gqa(4, 4096);
  b.batch = 8;
  b.kv_len = 4096;
  EXPECT_EQ(fitted_model_key(b, kSms, false), "attention:gqa:batch");
  EXPECT_EQ(fitted_model_key(gqa(4, 4096), kSms, false), "attention:gqa");
  ASSERT_TRUE(fitted_cost(b, t, false).has_value());
  EXPECT_DOUBLE_EQ(*fitted_cost(b, t, false), fitted_us(t.calibration.fitted["attention:gqa"], fitted_features(b, t.gpu.sms)));
  t.calibration.fitted["attention:gqa:batch"] = model(9.0, 4000, 300);
  EXPECT_DOUBLE_EQ(*fitted_cost(b, t, false),
                   fitted_us(t.calibration.fitted["attention:gqa:batch"], fitted_features(b, t.gpu.sms)));
  EXPECT_NE(*fitted_cost(b, t, false), *fitted_cost(gqa(4, 4096 * 8), t, false));
}

TEST(FittedModel, UsedForShapesNoTableHas) {
  Topology t = preset("2x-h200-nvlink");
  t.calibration.fitted["gemm:bf16"] = model(3.0, 4000, 700);
  t.calibration.fitted["attention:gqa"] = model(5.0, 3500, 300);
  t.calibration.fitted["elementwise:rmsnorm"] = model(2.5, 3000, 0);
  t.calibration.gemm.push_back({4, 4096, 4096, DType::bf16, 50.0});  // another width: no effect
  const Op g = gemm(8, 8192, 8192);
  const OpCost c = chain_cost(g, t);
  EXPECT_DOUBLE_EQ(c.us, fitted_us(t.calibration.fitted["gemm:bf16"], fitted_features(g, t.gpu.sms)));
  EXPECT_TRUE(c.calibrated);
  EXPECT_FALSE(c.extrapolated);
  const Op a = gqa(4, 16384);
  EXPECT_DOUBLE_EQ(chain_cost(a, t).us, fitted_us(t.calibration.fitted["attention:gqa"], fitted_features(a, t.gpu.sms)));
  const Op n = rowwise(OpKind::rmsnorm, 16, 5120);
  EXPECT_DOUBLE_EQ(chain_cost(n, t).us, fitted_us(t.calibration.fitted["elementwise:rmsnorm"], fitted_features(n, t.gpu.sms)));
  // A kind without a fitted model keeps the uncalibrated model.
  const Op act = rowwise(OpKind::act, 16, 14336);
  EXPECT_DOUBLE_EQ(chain_cost(act, t).us, chain_cost(act, preset("2x-h200-nvlink")).us);
}

TEST(FittedModel, MeasuredPointsCorrectLocallyAndFade) {
  Topology t = preset("2x-h200-nvlink");
  const FittedModel f = model(3.0, 4000, 700);
  t.calibration.fitted["gemm:bf16"] = f;
  auto fit = [&](std::int64_t m) { return fitted_us(f, fitted_features(gemm(m, 4096, 4096), t.gpu.sms)); };
  t.calibration.gemm.push_back({64, 4096, 4096, DType::bf16, 1.2 * fit(64)});
  EXPECT_NEAR(chain_cost(gemm(64, 4096, 4096), t).us, 1.2 * fit(64), 1e-9);                       // at the point
  EXPECT_NEAR(chain_cost(gemm(128, 4096, 4096), t).us, std::pow(1.2, 0.5) * fit(128), 1e-9);      // an octave away
  EXPECT_NEAR(chain_cost(gemm(256, 4096, 4096), t).us, fit(256), 1e-9);                           // two: faded
  EXPECT_NEAR(chain_cost(gemm(8, 4096, 4096), t).us, fit(8), 1e-9);
  // Between two points the log ratios interpolate (their fade by the nearer one).
  t.calibration.gemm.push_back({256, 4096, 4096, DType::bf16, 0.9 * fit(256)});
  const double mid = std::exp(0.5 * (std::log(1.2) + std::log(0.9)));
  EXPECT_NEAR(chain_cost(gemm(128, 4096, 4096), t).us, std::pow(mid, 0.5) * fit(128), 1e-9);
}

TEST(FittedModel, LocalCorrectionOfAnEmptyTableIsNone) {
  const LocalCorrection c = local_correction({}, 100, [](double) { return 1.0; });
  EXPECT_EQ(c.factor, 1.0);
  EXPECT_EQ(c.weight, 0.0);
}

TEST(FittedModel, AttentionCorrectionFollowsKvPositions) {
  Topology t = preset("2x-h200-nvlink");
  const FittedModel f = model(5.0, 3500, 300);
  t.calibration.fitted["attention:gqa"] = f;
  const Op a = gqa(4, 8192);
  const double fit = fitted_us(f, fitted_features(a, t.gpu.sms));
  t.calibration.attention["gqa:32:8:128:q4"] = {{8192, 1.1 * fit}};
  EXPECT_NEAR(chain_cost(a, t).us, 1.1 * fit, 1e-9);
  const Op far = gqa(4, 32768);
  EXPECT_NEAR(chain_cost(far, t).us, fitted_us(f, fitted_features(far, t.gpu.sms)), 1e-9);
}

TEST(FittedModel, TopologyKeepsFittedModelsExactly) {
  Topology t = preset("2x-h200-nvlink");
  FittedModel g = model(3.25, 4012.5, 701.75);
  g.rms_residual = 0.0125, g.max_residual = 0.0625, g.source = "measured on 1 x NVIDIA H200 by eaglesim calibrate";
  t.calibration.fitted["gemm:bf16"] = g;
  t.calibration.fitted["elementwise:add_rmsnorm"] = model(2.5, 3100, 0);
  const std::string text = topology_to_string(t);
  const Topology back = parse_topology(nlohmann::json::parse(text), "t.json");
  EXPECT_EQ(topology_to_string(back), text);
  ASSERT_EQ(back.calibration.fitted.size(), 2u);
  const FittedModel& r = back.calibration.fitted.at("gemm:bf16");
  EXPECT_EQ(r.fixed_us, 3.25);
  EXPECT_EQ(r.bw_gbs, 4012.5);
  EXPECT_EQ(r.tflops, 701.75);
  EXPECT_EQ(r.max_residual, 0.0625);
  EXPECT_EQ(r.source, g.source);
  EXPECT_EQ(back.calibration.fitted.at("elementwise:add_rmsnorm").tflops, 0);
  EXPECT_EQ(text.find("\"tflops\": 0"), std::string::npos);
}

TEST(FittedModel, BadParameterFilesAreRejected) {
  const std::string base = topology_to_string(preset("2x-h200-nvlink"));
  const nlohmann::json good{{"fixed_us", 3.0}, {"bw_gbs", 4000}, {"tflops", 700}, {"points", 20},
                            {"rms_residual", 0.02}, {"max_residual", 0.05}};
  struct Case {
    std::string key;
    nlohmann::json value;
    std::string says;
  };
  nlohmann::json no_bw = good, negative = good, flops_on_norm = good, low_max = good, no_tflops = good, zero_pts = good;
  no_bw.erase("bw_gbs");
  negative["fixed_us"] = -1;
  low_max["max_residual"] = 0.01;
  no_tflops.erase("tflops");
  zero_pts["points"] = 0;
  const std::vector<Case> cases{
      {"gemm:fp16", good, "calibration.fitted.gemm:fp16: unknown field (allowed here: gemm:bf16"},
      {"gemm:bf16", no_bw, "calibration.fitted.gemm:bf16.bw_gbs: missing required field"},
      {"gemm:bf16", negative, "calibration.fitted.gemm:bf16.fixed_us: expected a finite number in [0, 10000], got -1"},
      {"elementwise:rmsnorm", flops_on_norm, "calibration.fitted.elementwise:rmsnorm.tflops: unknown field"},
      {"attention:gqa", no_tflops, "calibration.fitted.attention:gqa.tflops: missing required field"},
      {"gemm:bf16", low_max, "calibration.fitted.gemm:bf16.max_residual: expected a finite number in [0.02, 100]"},
      {"gemm:bf16", zero_pts, "calibration.fitted.gemm:bf16.points: expected"},
  };
  for (const Case& c : cases) {
    nlohmann::json j = nlohmann::json::parse(base);
    j["calibration"]["fitted"][c.key] = c.value;
    try {
      parse_topology(j, "cal.json");
      ADD_FAILURE() << "accepted " << c.key << " " << c.value.dump();
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("cal.json"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.says), std::string::npos) << msg;
    }
  }
}

TEST(FittedModel, SamplesAndFitsFromMeasurements) {
  // A request of grid points "measured" by known models: the fits come back with them.
  const FittedModel g = model(4.0, 3800, 650), n = model(2.4, 2800, 0), an = model(2.8, 3000, 0);
  CalibrationRequest q;
  CalibrationMeasurements m;
  for (std::int64_t rows : grid_rows(GridDensity::coarse)) {
    for (std::int64_t w : {4096, 14336}) {
      q.compute.push_back(gemm(rows, w, 4096));
      m.compute_us.push_back(fitted_us(g, fitted_features(q.compute.back(), kSms)));
    }
    q.compute.push_back(rowwise(OpKind::rmsnorm, rows, 4096));
    m.compute_us.push_back(fitted_us(n, fitted_features(q.compute.back(), kSms)));
    q.add_rmsnorm.push_back(rowwise(OpKind::residual_add, rows, 4096));
    Op norm = q.add_rmsnorm.back();
    norm.kind = OpKind::rmsnorm;
    m.add_rmsnorm_us.push_back(fitted_us(an, fitted_features(norm, kSms, true)));
  }
  GpuSpec gpu;
  gpu.sms = kSms, gpu.mem_bw_gbs = 4800, gpu.bf16_tflops = 989;
  const auto fits = fit_compute_models(q, m, gpu);
  ASSERT_EQ(fits.size(), 3u);
  EXPECT_NEAR(fits.at("gemm:bf16").bw_gbs / 3800, 1, 0.01);
  EXPECT_NEAR(fits.at("elementwise:rmsnorm").fixed_us / 2.4, 1, 0.01);
  EXPECT_NEAR(fits.at("elementwise:add_rmsnorm").bw_gbs / 3000, 1, 0.01);
}

TEST(DesignedGrid, CoversTheModelsWidthsRowsAndLayouts) {
  GenOptions opt;
  opt.tp = 1;
  const Trace t = generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-8b.json"), opt);
  const DesignedGrid g = designed_grid({t}, GridDensity::coarse);
  std::size_t gemms = 0, attention = 0, batches = 0, trees = 0;
  bool has_4096_rows = false;
  for (const Op& op : g.compute) {
    if (op.kind == OpKind::gemm) {
      ++gemms;
      EXPECT_LE(2.0 * op.m * op.n * op.k, kGridMaxGemmFlops);
      has_4096_rows = has_4096_rows || (op.m == 4096 && op.n == 4096 && op.k == 4096);
    }
    if (op.kind == OpKind::attention && op.batch == 1) {
      ++attention;
      EXPECT_EQ(op.mask, AttentionMask::causal);
    } else if (op.kind == OpKind::attention) {
      ++batches;
      EXPECT_EQ(op.name, kGridBatchAttentionName);
      ASSERT_EQ(op.kv_lens.size(), static_cast<std::size_t>(op.batch));  // ragged
      EXPECT_NE(op.kv_lens.front(), op.kv_lens.back() + 1);
      EXPECT_LE(op.kv_len_total(), kGridMaxBatchPositions * 1.5);
      if (op.mask == AttentionMask::tree) {
        ++trees;
        bool has_tree = false;
        for (const auto& tree : g.verify_trees) has_tree = has_tree || static_cast<std::int64_t>(tree.size()) == op.q_tokens;
        EXPECT_TRUE(has_tree) << op.q_tokens;
      }
    }
  }
  EXPECT_TRUE(has_4096_rows);
  EXPECT_GT(gemms, 40u);
  EXPECT_EQ(attention, 16u);  // one layout x 4 query-token counts x 4 KV lengths
  EXPECT_EQ(batches, 16u);    // x 4 (steps, topk, draft tokens) x batches {8, 64} x KV {512, 4096}
  EXPECT_EQ(trees, 8u);       // the (5,4,8) and (6,8,32) trees
  EXPECT_EQ(g.verify_trees.size(), 2u);
  EXPECT_EQ(g.add_rmsnorm.size(), grid_rows(GridDensity::coarse).size());
  EXPECT_TRUE(designed_grid({t}, GridDensity::traces).compute.empty());
  EXPECT_GT(designed_grid({t}, GridDensity::full).compute.size(), g.compute.size());
}

TEST(DesignedGrid, PlanAddsGridPointsOnceAndEstimatesItsTime) {
  GenOptions opt;
  opt.tp = 1;
  opt.tokens = 4;
  const Trace t = generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-8b.json"), opt);
  CalibrationPlanOptions po;
  const CalibrationRequest without = plan_calibration({t}, po);
  po.grid = designed_grid({t}, GridDensity::coarse);
  const CalibrationRequest with = plan_calibration({t}, po);
  EXPECT_GT(with.compute.size(), without.compute.size());
  EXPECT_LT(with.compute.size(), without.compute.size() + po.grid.compute.size());  // shared points once
  EXPECT_EQ(with.compute.size(), with.compute_gpus.size());
  const PlanEstimate e = estimate_plan(with, preset("2x-h200-nvlink"));
  EXPECT_GT(e.total_s(), estimate_plan(without, preset("2x-h200-nvlink")).total_s());
  EXPECT_LT(e.total_s(), 300.0);  // the budget: five minutes on one GPU
}

TEST(DesignedGrid, CoarseGridOverEveryShippedModelStaysWithinFiveMinutes) {
  // calibrate's default (--grid coarse --grid-models shipped) on one GPU, batch x tree points
  // included, for the training traces of tools/heldout-fidelity.sh.
  std::vector<Trace> family;
  GenOptions one;
  one.tp = 1;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(EAGLESIM_REPO) + "/models/llm")) {
    if (entry.path().extension() != ".json") continue;
    const ModelConfig m = read_model_config(entry.path().string());
    if (m.is_draft()) continue;
    try {
      family.push_back(generate_trace(m, one));
    } catch (const InputError&) {
    }
  }
  ASSERT_GT(family.size(), 3u);
  GenOptions opt;
  opt.tp = 1, opt.tokens = 4, opt.kv_len = 2048;
  const Trace t = generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-8b.json"), opt);
  CalibrationPlanOptions po;
  po.grid = designed_grid(family, GridDensity::coarse);
  const CalibrationRequest q = plan_calibration({t}, po);
  const PlanEstimate e = estimate_plan(q, preset("2x-h200-nvlink"));
  EXPECT_LT(e.total_s(), 300.0) << e.compute_s << " s single ops, " << e.cases_s << " s cases";
}

// The H200 presets ship the fits an H200 calibration made (tools/paste-fitted.py), each citing
// where it was measured, and an uncalibrated run prices with them.
TEST(FittedModel, H200PresetsShipMeasuredFits) {
  for (const char* name : {"2x-h200-nvlink", "8x-h200-nvswitch"}) {
    const Topology t = read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/" + name + ".json");
    for (const char* key : {"gemm:bf16", "attention:gqa", "attention:gqa:batch", "elementwise:rmsnorm"}) {
      auto it = t.calibration.fitted.find(key);
      ASSERT_NE(it, t.calibration.fitted.end()) << name << " " << key;
      EXPECT_NE(it->second.source.find("measured on 1 x NVIDIA H200"), std::string::npos) << name << " " << key;
      EXPECT_GT(it->second.points, 0) << name << " " << key;
    }
    EXPECT_FALSE(t.calibration.transition_us.empty()) << name;
    ASSERT_TRUE(t.calibration.launch_gap_us.has_value()) << name;
    const Op op = gemm(37, 5000, 4096);  // no table has this shape
    ASSERT_TRUE(fitted_cost(op, t, true).has_value()) << name;
    EXPECT_DOUBLE_EQ(compute_cost(op, t).us, *fitted_cost(op, t, true)) << name;
  }
}

// MoE models: the grid routes tokens over the experts as the generator does, a calibration fits
// the grouped GEMMs per weight dtype, and the simulator prices them by that fit.
TEST(DesignedGrid, CoversGroupedGemmsOfMoeModels) {
  GenOptions opt;
  opt.tp = 1;
  const Trace t = generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/qwen3-30b-a3b.json"), opt);
  const DesignedGrid g = designed_grid({t}, GridDensity::coarse);
  std::size_t grouped = 0;
  bool has_t64_gate_up = false;
  for (const Op& op : g.compute) {
    if (op.kind != OpKind::grouped_gemm) continue;
    ++grouped;
    ASSERT_EQ(op.tokens % 8, 0);  // 8 experts per token
    EXPECT_EQ(op.experts, experts_touched(128, 8, op.tokens / 8));
    EXPECT_LE(op.weight_bytes(), kGridMaxGroupedWeightBytes);
    has_t64_gate_up = has_t64_gate_up || (op.tokens == 64 * 8 && op.n == 1536 && op.k == 2048);
  }
  EXPECT_TRUE(has_t64_gate_up);
  EXPECT_EQ(grouped, 2 * grid_rows(GridDensity::coarse).size());  // gate_up and down, every row count
}

TEST(FittedModel, GroupedGemmsHaveTheirOwnFit) {
  Op op;
  op.kind = OpKind::grouped_gemm;
  op.tokens = 24;  // 3 rows per expert: one 8-row block each
  op.experts = 8;
  op.n = 1536, op.k = 2048, op.dtype = DType::bf16;
  EXPECT_EQ(fitted_model_key(op, kSms, false), "grouped_gemm:bf16");
  const FittedFeatures f = fitted_features(op, kSms);
  EXPECT_DOUBLE_EQ(f.flops, 2.0 * 8 * 8 * 1536 * 2048);
  EXPECT_DOUBLE_EQ(f.bytes, op.weight_bytes() + op.io_bytes());
  Topology t = preset("2x-h200-nvlink");
  t.calibration = Calibration{};
  const double roofline = compute_cost(op, t).us;
  t.calibration.fitted["grouped_gemm:bf16"] = model(6.0, 3000, 500);
  EXPECT_DOUBLE_EQ(compute_cost(op, t).us, fitted_us(t.calibration.fitted["grouped_gemm:bf16"], f));
  EXPECT_NE(compute_cost(op, t).us, roofline);
}

// A low-bit calibration fits its own GEMM models: the grid's models are generated in each weight
// format the calibration traces use, bf16 only where none says otherwise.
TEST(DesignedGrid, GridModelsInTheTracesWeightFormats) {
  Trace bf16, int4, unset;
  bf16.meta.weight_dtype = DType::bf16;
  int4.meta.weight_dtype = DType::int4;
  EXPECT_EQ(grid_weight_dtypes({}), std::vector<DType>{DType::bf16});
  EXPECT_EQ(grid_weight_dtypes({unset}), std::vector<DType>{DType::bf16});
  EXPECT_EQ(grid_weight_dtypes({int4, int4}), std::vector<DType>{DType::int4});
  EXPECT_EQ(grid_weight_dtypes({int4, unset, int4}), (std::vector<DType>{DType::bf16, DType::int4}));

  GenOptions opt;
  opt.tp = 8;
  opt.weight_dtype = DType::int4;
  const Trace kimi = generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/kimi-k2-instruct.json"), opt);
  const DesignedGrid g = designed_grid({kimi}, GridDensity::coarse);
  std::size_t int4_gemms = 0, int4_grouped = 0, mla = 0, mla_batches = 0;
  for (const Op& op : g.compute) {
    int4_gemms += op.kind == OpKind::gemm && op.dtype == DType::int4;
    int4_grouped += op.kind == OpKind::grouped_gemm && op.dtype == DType::int4;
    if (op.kind == OpKind::attention && op.variant == AttentionVariant::mla) (op.batch > 1 ? mla_batches : mla)++;
  }
  EXPECT_GT(int4_gemms, 40u);
  EXPECT_EQ(int4_grouped, 2 * grid_rows(GridDensity::coarse).size());
  EXPECT_EQ(mla, 16u);          // one MLA layout (8 heads per rank) x 4 query-token counts x 4 KV lengths
  EXPECT_EQ(mla_batches, 16u);  // and the batch x tree points, as for GQA layouts
}

// Dense int4 / fp8 GEMMs run on the GEMV kernel, the stream-K kernel or cuBLASLt by shape (the
// replay's plan picks by the same rule); each kernel has its own fit, the stream-K one the
// fallback.
TEST(FittedModel, LowBitGemmsHaveAFitPerKernel) {
  auto low_bit = [](std::int64_t m, std::int64_t n, std::int64_t k, DType dt) {
    Op op = gemm(m, n, k);
    op.dtype = dt;
    return op;
  };
  // Kimi-K2 TP8 q_b_proj: 1536 x 1536 int4, 1.3 MB packed.
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(4, 1536, 1536, DType::int4)), LowBitGemmKernel::gemv);
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(16, 1536, 1536, DType::int4)), LowBitGemmKernel::gemv);
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(32, 1536, 1536, DType::int4)), LowBitGemmKernel::stream_k);
  // Kimi-K2 TP8 dense MLP gate_up: 4608 x 7168 int4, 18.6 MB: over the GEMV kernel's 16 MB.
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(4, 4608, 7168, DType::int4)), LowBitGemmKernel::stream_k);
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(4, 4608, 7168, DType::fp8)), LowBitGemmKernel::gemv);  // 33 MB of fp8
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(12, 2048, 1024, DType::fp8)), LowBitGemmKernel::gemv);
  // fp8 the GEMV kernel does not take: cuBLASLt's fp8 GEMM (W8A8), as engines run it, never the
  // stream-K kernel.
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(12, 4096, 1024, DType::fp8)), LowBitGemmKernel::cublas);  // > 2048 wide
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(17, 1536, 1536, DType::fp8)), LowBitGemmKernel::cublas);
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(256, 1536, 1536, DType::fp8)), LowBitGemmKernel::cublas);
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(256, 1536, 1536, DType::int4)), LowBitGemmKernel::stream_k);
  EXPECT_EQ(low_bit_gemm_kernel(low_bit(257, 1536, 1536, DType::int4)), LowBitGemmKernel::cublas);
  EXPECT_TRUE(gemv_picked(true, 1, 4096, 16e6));
  EXPECT_FALSE(gemv_picked(true, 1, 4096, 16.1e6));
  EXPECT_FALSE(gemv_picked(true, 9, 1024, 8.1e6));
  EXPECT_FALSE(gemv_picked(false, 17, 1024, 1e6));

  EXPECT_EQ(fitted_model_key(low_bit(4, 1536, 1536, DType::int4), kSms, true), "gemm:int4:gemv");
  EXPECT_EQ(fitted_model_key(low_bit(64, 1536, 1536, DType::int4), kSms, true), "gemm:int4");
  EXPECT_EQ(fitted_model_key(low_bit(1024, 1536, 1536, DType::fp8), kSms, true), "gemm:fp8:cublas");
  EXPECT_EQ(fitted_model_key(low_bit(128, 1536, 1536, DType::fp8), kSms, true), "gemm:fp8:cublas");
  EXPECT_EQ(fitted_model_key(gemm(4, 1536, 1536), kSms, true), "gemm:bf16");

  Topology t = preset("2x-h200-nvlink");
  t.calibration = Calibration{};
  const Op small = low_bit(4, 1536, 1536, DType::int4);
  t.calibration.fitted["gemm:int4"] = model(7.0, 2500, 300);
  EXPECT_DOUBLE_EQ(compute_cost(small, t).us, fitted_us(t.calibration.fitted["gemm:int4"], fitted_features(small, kSms)));
  t.calibration.fitted["gemm:int4:gemv"] = model(2.5, 3000, 300);
  EXPECT_DOUBLE_EQ(compute_cost(small, t).us, fitted_us(t.calibration.fitted["gemm:int4:gemv"], fitted_features(small, kSms)));
  EXPECT_LT(compute_cost(small, t).us, 7.0);
}

// The weight-only kernels' FLOPs are the rows padded to their row tile, not cuBLAS's tile waves.
TEST(FittedModel, LowBitGemmFlopsFollowTheWeightOnlyRowTile) {
  Op op = gemm(4, 1536, 7168);
  op.dtype = DType::int4;
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, 2.0 * 8 * 1536 * 7168);
  // Above 16 rows a dense int4 GEMM runs 16-row items (dense_weight_only_row_tile); a dense fp8
  // GEMM the GEMV kernel does not take runs on cuBLASLt, priced by its tiles.
  op.m = 40;
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, 2.0 * 48 * 1536 * 7168);
  op.m = 200;
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, 2.0 * 208 * 1536 * 7168);
  op.dtype = DType::fp8;
  op.m = 12;
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, 2.0 * 16 * 1536 * 7168);
  op.m = 40;
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, fitted_features(gemm(40, 1536, 7168), kSms).flops);
  op.m = 200;
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, fitted_features(gemm(200, 1536, 7168), kSms).flops);
  EXPECT_EQ(dense_weight_only_row_tile(false, 48), 16);
  EXPECT_EQ(dense_weight_only_row_tile(false, 49), 32);
  EXPECT_EQ(dense_weight_only_row_tile(true, 256), 16);
  EXPECT_EQ(dense_weight_only_row_tile(true, 4), 8);
  op.m = 1024;  // cuBLASLt: its tiles
  EXPECT_DOUBLE_EQ(fitted_features(op, kSms).flops, fitted_features(gemm(1024, 1536, 7168), kSms).flops);
}
