// calibrate's host half: which points a trace asks for, how measurements become tables, that
// the written topology reads back identically, and that the simulator then prices the traced
// ops from exactly those tables (the keys and units the interpolation reads).
#include <cmath>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "core/errors.hpp"
#include "cost/compute_model.hpp"
#include "backend/backend.hpp"
#include "calibration/calibration_plan.hpp"
#include "calibration/trace_shapes.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration/base_preset.hpp"
#include "sim_step.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

Trace llama8b_tp2() { return read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json"); }
// The H200 preset without its fitted models: these tests pin the tables and the roofline.
Topology h200() {
  Topology t = read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json"));
  t.calibration.fitted.clear();
  return t;
}

// Made-up "measurements" that differ for every point, so a wrong key or unit shows up as a
// wrong number: GEMM 10 + m/8 + n/1000, attention 20 + kv/100, elementwise 3 + elements/1e5,
// allreduce by strategy 5 (+1 per strategy index) + bytes/1e6.
double fake_compute(const Op& op) {
  switch (op.kind) {
    case OpKind::gemm: return 10 + op.m / 8.0 + op.n / 1000.0;
    case OpKind::attention: return 20 + op.kv_len / 100.0;
    case OpKind::other: return *op.us + 1.5;
    default: return 3 + static_cast<double>(op.tokens * op.hidden) / 1e5;
  }
}
// The fused add + RMSNorm: 4 + elements/1e5 (another line than the single elementwise ops').
double fake_add_rmsnorm(const Op& op) { return 4 + static_cast<double>(op.tokens * op.hidden) / 1e5; }
double fake_allreduce(const AllreduceCase& c) {
  const auto names = calibratable_strategy_names();
  const double idx = static_cast<double>(std::find(names.begin(), names.end(), c.strategy) - names.begin());
  return 5 + idx + static_cast<double>(c.bytes) / 1e6;
}

CalibrationMeasurements fake_measurements(const CalibrationRequest& q) {
  CalibrationMeasurements m;
  m.device = "2 x Fake GPU";
  m.gpu_name = "Fake GPU";
  m.ranks = q.ranks;
  for (const Op& op : q.compute) m.compute_us.push_back(fake_compute(op));
  for (const Op& op : q.add_rmsnorm) m.add_rmsnorm_us.push_back(fake_add_rmsnorm(op));
  for (const auto& c : q.allreduce) m.allreduce_us.push_back(fake_allreduce(c));
  m.launch_gap_us = 1.25;
  m.seconds = 42;
  return m;
}

CalibrationPlanOptions two_ranks() {
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = {"nccl", "oneshot", "fused"};
  return o;
}

}  // namespace

TEST(CalibrationPlan, AsksForEveryTracedShapeOverTheTokenGrid) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan_calibration({t}, two_ranks());
  std::set<std::tuple<std::int64_t, std::int64_t>> shapes;
  std::map<std::tuple<std::int64_t, std::int64_t>, std::set<std::int64_t>> ms;
  std::set<std::int64_t> kvs;
  std::set<std::string> attention_keys;
  for (const Op& op : q.compute) {
    if (op.kind == OpKind::gemm) ms[{op.n, op.k}].insert(op.m);
    if (op.kind == OpKind::attention) {
      kvs.insert(op.kv_len);
      attention_keys.insert(attention_calibration_key_q(op));
    }
  }
  for (const Step& s : t.steps)
    for (const Op& op : s.ops)
      if (op.kind == OpKind::gemm || op.kind == OpKind::lm_head) shapes.insert({op.n, op.k});
  ASSERT_EQ(ms.size(), shapes.size());
  for (const auto& [shape, m] : ms) {
    EXPECT_EQ(m.size(), calibration_token_grid().size()) << "every grid m, traced m (1, 4) already in the grid";
    EXPECT_TRUE(m.count(1) && m.count(4) && m.count(256));
  }
  // Verify (q=4) and draft/decode (q=1) attention are separate tables; kv up to 2 x 2048.
  EXPECT_EQ(attention_keys, (std::set<std::string>{"gqa:16:4:128:q1", "gqa:16:4:128:q4"}));
  EXPECT_TRUE(kvs.count(64) && kvs.count(2048) && kvs.count(4096));
  EXPECT_FALSE(kvs.count(8192));
  // The context GEMM is the one most allreduces follow (o_proj and down_proj tie at 32 each in
  // the verify step; either is a GEMM that really precedes an allreduce).
  EXPECT_EQ(q.context_gemm.kind, OpKind::gemm);
  EXPECT_EQ(q.context_gemm.n, 4096);
}

TEST(CalibrationPlan, AllreduceSizesFollowEachStrategysLimits) {
  const CalibrationRequest q = plan_calibration({llama8b_tp2()}, two_ranks());
  std::map<std::string, std::set<std::int64_t>> sizes;
  for (const auto& c : q.allreduce) {
    sizes[c.strategy].insert(c.bytes);
    if (c.strategy == "fused") {
      EXPECT_EQ(c.hidden, 4096);
      EXPECT_EQ(c.tokens * c.hidden * 2, c.bytes);
    }
  }
  EXPECT_TRUE(sizes["nccl"].count(1024) && sizes["nccl"].count(64 << 20) && sizes["nccl"].count(32768));
  EXPECT_EQ(*sizes["oneshot"].rbegin(), 8 << 20) << "custom kernels stop at their 8 MiB buffer";
  EXPECT_TRUE(sizes["oneshot"].count(32768) && sizes["oneshot"].count(8192));
  EXPECT_TRUE(sizes["fused"].count(8192) && sizes["fused"].count(32768));
  for (std::int64_t b : sizes["fused"]) EXPECT_EQ(b % 8192, 0);
}

TEST(CalibrationPlan, RejectsWhatItCannotMeasure) {
  CalibrationPlanOptions o = two_ranks();
  o.strategies = {"nccl", "ideal"};
  EXPECT_THROW(plan_calibration({llama8b_tp2()}, o), InputError);
  o.strategies = {"nccl"};
  Trace empty = llama8b_tp2();
  for (auto& s : empty.steps) s.ops.clear();
  EXPECT_THROW(plan_calibration({empty}, o), InputError);
  o.ranks = 0;
  EXPECT_THROW(plan_calibration({llama8b_tp2()}, o), InputError);
}

TEST(CalibrationPlan, OneRankMeasuresNoAllreduce) {
  CalibrationPlanOptions o;
  o.ranks = 1;
  o.strategies = {"nccl"};
  const CalibrationRequest q = plan_calibration({llama8b_tp2()}, o);
  EXPECT_TRUE(q.allreduce.empty());
  const Calibration cal = build_calibration(q, fake_measurements(q), {llama8b_tp2()});
  EXPECT_EQ(cal.ranks, 0);
  EXPECT_TRUE(cal.allreduce.empty());
}

TEST(CalibrationPlan, TablesRoundTripThroughTheTopologyReader) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan_calibration({t}, two_ranks());
  const CalibrationMeasurements m = fake_measurements(q);
  const Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  EXPECT_EQ(topo.calibration.ranks, 2);
  EXPECT_EQ(topo.gpu_count, 2);
  ASSERT_TRUE(topo.calibration.launch_gap_us);
  EXPECT_DOUBLE_EQ(*topo.calibration.launch_gap_us, 1.25);
  const std::string text = topology_to_string(topo);
  const Topology back = parse_topology(nlohmann::json::parse(text), "written.json");
  EXPECT_EQ(topology_to_string(back), text);
  EXPECT_EQ(back.calibration.gemm.size(), topo.calibration.gemm.size());
  EXPECT_EQ(back.calibration.attention.size(), 2u);
  // rmsnorm, residual_add, act, embedding, add_rmsnorm, and SGLang's other kernels (RoPE, KV store)
  EXPECT_EQ(back.calibration.elementwise.size(), 6u);
  const auto& written = topo.calibration.elementwise.at(kAddRmsnormTable);
  const auto& read = back.calibration.elementwise.at(kAddRmsnormTable);
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].size, written[i].size);
    EXPECT_DOUBLE_EQ(read[i].us, written[i].us);
  }
  EXPECT_EQ(back.calibration.allreduce.size(), 3u);
}

// Every residual add followed by the RMSNorm of the same rows asks for the fused add + RMSNorm
// kernel over the token grid at its hidden size; the measurements become the add_rmsnorm table
// by tokens x hidden, and a trace without such pairs asks for none.
TEST(CalibrationPlan, ResidualAddNormPairsGetTheFusedKernelsTable) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan_calibration({t}, two_ranks());
  ASSERT_EQ(q.add_rmsnorm.size(), calibration_token_grid().size());
  ASSERT_EQ(q.add_rmsnorm_gpus.size(), q.add_rmsnorm.size());
  for (std::size_t i = 0; i < q.add_rmsnorm.size(); ++i) {
    EXPECT_EQ(q.add_rmsnorm[i].kind, OpKind::residual_add);
    EXPECT_EQ(q.add_rmsnorm[i].hidden, 4096);
    EXPECT_EQ(q.add_rmsnorm[i].tokens, calibration_token_grid()[i]);
    EXPECT_EQ(q.add_rmsnorm_gpus[i], 2) << "the TP2 trace's steps run on both GPUs";
  }
  EXPECT_TRUE(q.fuse_add_norm);
  const CalibrationMeasurements m = fake_measurements(q);
  const Calibration cal = build_calibration(q, m, {t});
  ASSERT_EQ(cal.elementwise.count(kAddRmsnormTable), 1u);
  const auto& table = cal.elementwise.at(kAddRmsnormTable);
  ASSERT_EQ(table.size(), q.add_rmsnorm.size());
  for (const SizeCalPoint& p : table) {
    EXPECT_EQ(p.size % 4096, 0);
    EXPECT_DOUBLE_EQ(p.us, 4 + static_cast<double>(p.size) / 1e5);
  }
  // Not measured (an older measurement set): no table rather than a wrong one.
  CalibrationMeasurements without = m;
  without.add_rmsnorm_us.clear();
  EXPECT_EQ(build_calibration(q, without, {t}).elementwise.count(kAddRmsnormTable), 0u);
  without.add_rmsnorm_us.assign(q.add_rmsnorm.size() + 1, 5.0);
  EXPECT_THROW(build_calibration(q, without, {t}), std::invalid_argument);

  Trace no_pairs = t;
  for (Step& s : no_pairs.steps) {
    std::vector<Op> kept;
    for (const Op& op : s.ops)
      if (op.kind != OpKind::rmsnorm) kept.push_back(op);
    s.ops = kept;
  }
  EXPECT_TRUE(plan_calibration({no_pairs}, two_ranks()).add_rmsnorm.empty());
}

TEST(CalibrationPlan, OneGpuCalibrationDescribesOneGpu) {
  const Trace t = read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp1_t4.json");
  CalibrationPlanOptions o;
  o.ranks = 1;
  const CalibrationRequest q = plan_calibration({t}, o);
  CalibrationMeasurements m = fake_measurements(q);
  m.ranks = 1;
  const Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  EXPECT_EQ(topo.gpu_count, 1);
  const Topology back = parse_topology(nlohmann::json::parse(topology_to_string(topo)), "one.json");
  EXPECT_EQ(back.gpu_count, 1);
  EXPECT_EQ(back.calibration.ranks, 0);
}

TEST(CalibrationPlan, SimulatorPricesTracedOpsFromTheWrittenTables) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan_calibration({t}, two_ranks());
  const CalibrationMeasurements m = fake_measurements(q);
  const Topology written = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  const Topology topo = parse_topology(nlohmann::json::parse(topology_to_string(written)), "written.json");

  // Every compute op of the verify step is calibrated and equals its fake measurement.
  double expected = 0;
  for (const Op& op : t.verify().ops) {
    if (op.kind == OpKind::allreduce) {
      AllreduceCase c;
      c.strategy = "nccl";
      c.bytes = op.bytes;
      expected += fake_allreduce(c);
      continue;
    }
    const OpCost cost = compute_cost(op, topo);
    EXPECT_TRUE(cost.calibrated) << op.name;
    Op as_gemm = op;
    if (op.kind == OpKind::lm_head) as_gemm.kind = OpKind::gemm;
    // An engine's small kernel is measured as one operand of all its operands' width.
    if (op.kind == OpKind::elementwise) as_gemm.hidden = elementwise_table_width(op);
    EXPECT_NEAR(cost.us, fake_compute(as_gemm), 1e-9) << op.name;
    expected += fake_compute(as_gemm);
  }
  // Each op its own kernel: these tables have no fused residual add + norm kernel (add_rmsnorm).
  const StepResult r = test_support::simulate_verify(t, topo, "nccl", 2, "model", false);
  EXPECT_NEAR(r.step_us, expected, 1e-6 * expected);
  for (const auto& n : r.notes) EXPECT_EQ(n.find("calibration"), std::string::npos) << n;

  // Between grid points: log-log interpolation of the written points (m = 5 between 4 and 6).
  Op g = t.verify().ops[3];
  ASSERT_EQ(g.kind, OpKind::gemm);
  g.m = 5;
  Op g4 = g, g6 = g;
  g4.m = 4, g6.m = 6;
  const double y4 = fake_compute(g4), y6 = fake_compute(g6);
  const double f = (std::log(5.0) - std::log(4.0)) / (std::log(6.0) - std::log(4.0));
  EXPECT_NEAR(compute_cost(g, topo).us, std::exp(std::log(y4) + f * (std::log(y6) - std::log(y4))), 1e-9);
  // Outside the tables (m = 512): the model, flagged, and the run says so.
  g.m = 512;
  EXPECT_TRUE(compute_cost(g, topo).extrapolated);
}

TEST(CalibrationPlan, SimulatorNotesOpsWithoutTables) {
  const Trace t = llama8b_tp2();
  CalibrationPlanOptions o = two_ranks();
  o.strategies = {"nccl"};
  const CalibrationRequest q = plan_calibration({t}, o);
  CalibrationMeasurements m = fake_measurements(q);
  Calibration cal = build_calibration(q, m, {t});
  cal.elementwise.erase("act");
  const Topology topo = calibrated_topology(h200(), m, cal);
  const StepResult r = test_support::simulate_verify(t, topo, "oneshot", 2, "model", false);
  bool compute_note = false, comm_note = false;
  for (const auto& n : r.notes) {
    compute_note |= n.find("32 ops have no calibration table") != std::string::npos;
    comm_note |= n.find("no calibration table for oneshot on 2 ranks") != std::string::npos;
  }
  EXPECT_TRUE(compute_note);
  EXPECT_TRUE(comm_note);
  // With the residual adds and norms fused, the 64 fused kernels have no table either in a
  // calibration without add_rmsnorm, and the note counts them with the 32 activations.
  Calibration without_fused = cal;
  without_fused.elementwise.erase(kAddRmsnormTable);
  const Topology unfused_topo = calibrated_topology(h200(), m, without_fused);
  bool fused_note = false;
  for (const auto& n : test_support::simulate_verify(t, unfused_topo, "oneshot", 2, "model").notes)
    fused_note |= n.find("96 ops have no calibration table") != std::string::npos;
  EXPECT_TRUE(fused_note);
}

TEST(CalibrationPlan, ExactTraceSizesWinOverGridPointsOfAnotherShape) {
  // 8B hidden 4096 x 8 tokens and 70B hidden 8192 x 4 tokens are both 32768 rmsnorm elements;
  // the traced one (70B, 4 tokens) wins the table point over the 8B grid point.
  Trace t70 = read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-70b_tp2_t4.json");
  Trace t8 = llama8b_tp2();
  CalibrationPlanOptions o;
  o.ranks = 1;
  const CalibrationRequest q = plan_calibration({t8, t70}, o);
  CalibrationMeasurements m = fake_measurements(q);
  for (std::size_t i = 0; i < q.compute.size(); ++i)
    if (q.compute[i].kind == OpKind::rmsnorm) m.compute_us[i] = q.compute[i].hidden == 8192 ? 7.0 : 99.0;
  const Calibration cal = build_calibration(q, m, {t8, t70});
  bool found = false;
  for (const auto& p : cal.elementwise.at("rmsnorm"))
    if (p.size == 32768) {
      EXPECT_DOUBLE_EQ(p.us, 7.0);
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(CalibrationPlan, BasePresetByGpuName) {
  EXPECT_EQ(base_preset_for("NVIDIA H200", 2), "2x-h200-nvlink");
  EXPECT_EQ(base_preset_for("NVIDIA H200", 1), "2x-h200-nvlink");
  EXPECT_EQ(base_preset_for("NVIDIA H100 80GB HBM3", 8), "8x-h100-nvswitch");
  EXPECT_EQ(base_preset_for("Some Other GPU", 2), "");
}

TEST(CalibrationKeys, AttentionKeyWithQueryTokens) {
  EXPECT_TRUE(valid_attention_key("gqa:16:4:128"));
  EXPECT_TRUE(valid_attention_key("gqa:16:4:128:q4"));
  EXPECT_TRUE(valid_attention_key("mla:64:512:64:q1"));
  EXPECT_FALSE(valid_attention_key("gqa:16:4:128:4"));
  EXPECT_FALSE(valid_attention_key("gqa:16:4:128:q0"));
  EXPECT_FALSE(valid_attention_key("gqa:16:4:128:q"));
  EXPECT_FALSE(valid_attention_key("gqa:16:4:128:q4:q5"));
  EXPECT_FALSE(valid_attention_key("gqa:16:4:128:"));
  Op a;
  a.kind = OpKind::attention;
  a.q_tokens = 4, a.heads = 16, a.kv_heads = 4, a.head_dim = 128, a.kv_len = 2048;
  EXPECT_EQ(attention_calibration_key_q(a), "gqa:16:4:128:q4");
  // The q-specific table wins over the generic one.
  Topology topo = h200();
  topo.calibration.attention["gqa:16:4:128"] = {{1024, 50.0}, {4096, 60.0}};
  topo.calibration.attention["gqa:16:4:128:q4"] = {{1024, 10.0}, {4096, 10.0}};
  EXPECT_DOUBLE_EQ(compute_cost(a, topo).us, 10.0);
  a.q_tokens = 1;
  EXPECT_NEAR(compute_cost(a, topo).us, 55.0, 0.5);
}

TEST(CalibrationKeys, OtherOpsUseTheTimedKernelTable) {
  Topology topo = h200();
  Op o;
  o.kind = OpKind::other;
  o.us = 4.0;
  EXPECT_DOUBLE_EQ(compute_cost(o, topo).us, 4.0);
  topo.calibration.elementwise["other"] = {{1000, 2.5}, {8000, 9.5}};
  EXPECT_NEAR(compute_cost(o, topo).us, std::exp(std::log(2.5) + (std::log(4.0) / std::log(8.0)) * (std::log(9.5) - std::log(2.5))), 1e-9);
  o.us = 20.0;  // outside: the op's own time
  EXPECT_DOUBLE_EQ(compute_cost(o, topo).us, 20.0);
}
