// The calibration's kernel-transition table: which op pairs calibrate asks the GPU for, how the
// measured pairs become a per-kind-pair table, that the topology file carries it (and rejects
// bad keys and values), and that the simulator adds it to the right ops only.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "backend/backend.hpp"
#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_tables.hpp"
#include "backend/op_pricing.hpp"
#include "calibration_table_rejects.hpp"
#include "sim_step.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

Trace llama8b_tp2() { return read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json"); }
// The preset without the kernel transitions it ships (measured on an H200): these tests add their own.
Topology h200() {
  Topology t = read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json"));
  t.calibration.transition_us.clear();
  return t;
}

Op make(OpKind kind, int layer) {
  Op op;
  op.kind = kind;
  op.layer = layer;
  op.name = to_string(kind);
  switch (kind) {
    case OpKind::gemm: op.m = 4, op.n = 3072, op.k = 4096; break;
    case OpKind::allreduce: op.bytes = 32768; break;
    default: op.tokens = 4, op.hidden = 4096; break;
  }
  return op;
}

Step verify_step(std::vector<Op> ops) {
  Step s;
  s.name = "verify";
  s.ops = std::move(ops);
  return s;
}

// nccl on 2 ranks, compute ops (the fused residual add + norm kernel too) priced by `topo`'s model.
PricingOptions nccl_pricing(const Topology& topo) {
  PricingOptions po;
  po.comm = &find_cost_model("nccl");
  po.query.topo = &topo;
  po.query.ranks = 2;
  po.compute_cost = [&topo](const Op& op) { return compute_cost(op, topo); };
  po.add_norm_cost = [&topo](const Op& norm) { return add_rmsnorm_cost(norm, topo); };
  return po;
}

}  // namespace

TEST(KernelTransitions, KeysNameTwoComputeKinds) {
  EXPECT_EQ(transition_key(OpKind::rmsnorm, OpKind::gemm), "rmsnorm>gemm");
  EXPECT_TRUE(valid_transition_key("rmsnorm>gemm"));
  EXPECT_TRUE(valid_transition_key("attention>lm_head"));
  EXPECT_TRUE(valid_transition_key("rmsnorm:4096>gemm:6144:4096:bf16"));
  EXPECT_TRUE(valid_transition_key("attention:gqa:16:4:128>gemm"));
  for (const char* bad : {"rmsnorm", "rmsnorm>", ">gemm", "rmsnorm>allreduce", "other>gemm", "norm>gemm",
                          "rmsnorm>gemm>act", "rmsnorm-gemm", "", "rmsnorm:>gemm", "rmsnorm:40 96>gemm",
                          "allreduce:32768>gemm"})
    EXPECT_FALSE(valid_transition_key(bad)) << bad;
  Op norm = make(OpKind::rmsnorm, 0), gemm = make(OpKind::gemm, 0);
  EXPECT_EQ(transition_key(norm, gemm), "rmsnorm:4096>gemm:3072:4096:bf16");
  EXPECT_TRUE(valid_transition_key(transition_key(norm, gemm)));
  gemm.m = 1;  // the token count is not part of the key
  EXPECT_EQ(transition_key(norm, gemm), "rmsnorm:4096>gemm:3072:4096:bf16");
}

TEST(KernelTransitions, PlanAsksForTheFirstLayersConsecutiveComputeOps) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  ASSERT_FALSE(q.transitions.empty());
  std::set<std::string> kinds;
  for (const auto& [a, b] : q.transitions) {
    EXPECT_NE(a.kind, OpKind::allreduce);
    EXPECT_NE(b.kind, OpKind::allreduce);
    EXPECT_NE(a.kind, OpKind::other);
    EXPECT_FALSE(a.us.has_value());
    EXPECT_EQ(a.layer, -1);
    kinds.insert(transition_key(a.kind, b.kind));
  }
  // SGLang's Llama decoder layer: norm -> qkv GEMM -> RoPE -> KV store -> attention -> o GEMM ->
  // (allreduce) -> add -> norm -> gate_up GEMM -> act -> down GEMM -> (allreduce) -> add, then the
  // next layer's norm.
  for (const char* k : {"rmsnorm>gemm", "gemm>elementwise", "elementwise>elementwise", "elementwise>attention",
                        "attention>gemm", "gemm>residual_add", "residual_add>rmsnorm", "gemm>act", "act>gemm"})
    EXPECT_TRUE(kinds.count(k)) << k;
  // Deduplicated: the same (kinds, shapes) pair once, however many steps and traces repeat it.
  const CalibrationRequest twice = plan_calibration({t, t}, CalibrationPlanOptions{});
  EXPECT_EQ(twice.transitions.size(), q.transitions.size());
}

// A fused allreduce makes its neighbours consecutive (o_proj -> gate_up, down -> next qkv): with
// fused among the strategies the plan also measures those GEMM -> GEMM pairs, which the
// simulator charges on the op after a fused allreduce.
TEST(KernelTransitions, FusedStrategyAddsThePairsItMakesConsecutive) {
  const Trace t = llama8b_tp2();
  auto gemm_pairs = [](const CalibrationRequest& q) {
    std::set<std::string> keys;
    for (const auto& [a, b] : q.transitions)
      if (a.kind == OpKind::gemm && b.kind == OpKind::gemm) keys.insert(transition_key(a, b));
    return keys;
  };
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = {"nccl", "oneshot"};
  EXPECT_TRUE(gemm_pairs(plan_calibration({t}, o)).empty());
  o.strategies.push_back("fused");
  const std::set<std::string> fused = gemm_pairs(plan_calibration({t}, o));
  // Llama-3.1-8B TP2 per rank: o_proj 4096 x 2048 -> gate_up 14336 x 4096; down 4096 x 7168 -> qkv 3072 x 4096.
  EXPECT_EQ(fused.size(), 2u);
  bool o_to_gate_up = false, down_to_qkv = false;
  for (const auto& [a, b] : plan_calibration({t}, o).transitions) {
    if (a.kind != OpKind::gemm || b.kind != OpKind::gemm) continue;
    o_to_gate_up |= a.k == 2048 && b.n == 14336;
    down_to_qkv |= a.k == 7168 && b.n == 3072;
  }
  EXPECT_TRUE(o_to_gate_up);
  EXPECT_TRUE(down_to_qkv);
  o.ranks = 1;  // nothing to fuse on one GPU
  EXPECT_TRUE(gemm_pairs(plan_calibration({t}, o)).empty());
}

TEST(KernelTransitions, MeasuredPairsAverageIntoOneValuePerKindPair) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  CalibrationMeasurements m;
  m.compute_us.assign(q.compute.size(), 5.0);
  std::map<std::string, std::vector<double>> by_key;
  for (std::size_t i = 0; i < q.transitions.size(); ++i) {
    const double us = 0.25 * static_cast<double>(i % 4) - 0.1;  // both signs
    m.transition_us.push_back(us);
    const auto& [a, b] = q.transitions[i];
    by_key[transition_key(a.kind, b.kind)].push_back(us);
    if (transition_family_key(a, b) != transition_key(a.kind, b.kind)) by_key[transition_family_key(a, b)].push_back(us);
    by_key[transition_key(a, b)].push_back(us);
  }
  const Calibration cal = build_calibration(q, m, {t});
  ASSERT_EQ(cal.transition_us.size(), by_key.size());
  for (const auto& [key, values] : by_key) {
    double mean = 0;
    for (double v : values) mean += v / static_cast<double>(values.size());
    EXPECT_NEAR(cal.transition_us.at(key), mean, 1e-12) << key;
  }
  // No transition measurements (an older measuring side): no table, no error.
  m.transition_us.clear();
  EXPECT_TRUE(build_calibration(q, m, {t}).transition_us.empty());
  // A count that does not match the request is a programming error.
  m.transition_us.assign(q.transitions.size() + 1, 0.5);
  EXPECT_THROW(build_calibration(q, m, {t}), std::invalid_argument);
}

TEST(KernelTransitions, PricingAddsThemAfterThePreviousComputeOpOnly) {
  Step step = verify_step({make(OpKind::rmsnorm, 0), make(OpKind::gemm, 0), make(OpKind::allreduce, 0),
                           make(OpKind::residual_add, 0), make(OpKind::rmsnorm, 1)});
  const Topology topo = h200();
  PricingOptions po = nccl_pricing(topo);
  po.fuse_add_norm = false;  // each op its own kernel (the fused add + norm: the next test)
  const StepPlan plain = plan_step(step, po);

  const std::map<std::string, double> transitions{{"rmsnorm>gemm", 1.5},
                                                  {"gemm>residual_add", 7.0},
                                                  {"gemm:3072:4096:bf16>residual_add:4096", 0.5},  // wins
                                                  {"gemm:1:4096:bf16>residual_add:4096", 3.0},     // not these shapes
                                                  {"residual_add>rmsnorm", -0.25},
                                                  {"gemm>rmsnorm", 9.0}};
  po.transitions = &transitions;
  const StepPlan with = plan_step(step, po);
  ASSERT_EQ(with.ops.size(), plain.ops.size());
  EXPECT_DOUBLE_EQ(with.ops[0].us, plain.ops[0].us);          // first op: nothing before it
  EXPECT_DOUBLE_EQ(with.ops[1].us, plain.ops[1].us + 1.5);    // rmsnorm > gemm
  EXPECT_DOUBLE_EQ(with.ops[2].us, plain.ops[2].us);          // the allreduce: never
  EXPECT_DOUBLE_EQ(with.ops[3].us, plain.ops[3].us + 0.5);    // the shapes' entry, across the allreduce
  EXPECT_DOUBLE_EQ(with.ops[4].us, plain.ops[4].us - 0.25);   // residual_add > rmsnorm
  bool noted = false;
  for (const auto& n : with.notes) noted |= n.find("kernel transitions") != std::string::npos;
  EXPECT_TRUE(noted);

  // Measured op times (an imported trace) already hold the transitions.
  for (Op& op : step.ops)
    if (!op.is_comm()) op.us = 2.0;
  po.op_times = OpTimes::measured;
  const StepPlan measured = plan_step(step, po);
  EXPECT_DOUBLE_EQ(measured.ops[1].us, 2.0);
}

// A residual add and the norm after it run as one kernel: the transition into it is the one into
// the add, there is none between the two, and the op after it transitions from the norm.
TEST(KernelTransitions, AFusedAddNormKernelIsEnteredAtItsAddAndLeftAtItsNorm) {
  const Step step = verify_step({make(OpKind::gemm, 0), make(OpKind::allreduce, 0), make(OpKind::residual_add, 0),
                                 make(OpKind::rmsnorm, 1), make(OpKind::gemm, 1)});
  const Topology topo = h200();
  PricingOptions po = nccl_pricing(topo);
  const StepPlan plain = plan_step(step, po);
  ASSERT_EQ(plain.ops.size(), 4u);
  EXPECT_DOUBLE_EQ(plain.ops[2].us, add_rmsnorm_cost(step.ops[3], topo).us);
  const std::map<std::string, double> transitions{{"gemm>residual_add", 0.5},
                                                  {"residual_add>rmsnorm", 9.0},  // inside the kernel: never
                                                  {"rmsnorm>gemm", 1.5},
                                                  {"residual_add>gemm", 7.0}};
  po.transitions = &transitions;
  const StepPlan with = plan_step(step, po);
  ASSERT_EQ(with.ops.size(), 4u);
  EXPECT_DOUBLE_EQ(with.ops[2].us, plain.ops[2].us + 0.5);  // gemm > the kernel's add
  EXPECT_DOUBLE_EQ(with.ops[3].us, plain.ops[3].us + 1.5);  // the kernel's norm > gemm
}

TEST(KernelTransitions, SimulatorUsesTheTopologysTable) {
  const Trace t = llama8b_tp2();
  Topology plain = h200();
  Topology with = plain;
  with.calibration.transition_us["rmsnorm>gemm"] = 2.0;
  int after_norm = 0;
  const auto& ops = t.verify().ops;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    std::size_t j = i - 1;
    while (j > 0 && ops[j].is_comm()) --j;
    if (ops[i].kind == OpKind::gemm && ops[j].kind == OpKind::rmsnorm) ++after_norm;
  }
  ASSERT_GT(after_norm, 0);
  const double a = test_support::simulate_verify(t, plain, "nccl").step_us;
  const double b = test_support::simulate_verify(t, with, "nccl").step_us;
  EXPECT_NEAR(b - a, 2.0 * after_norm, 1e-6);
}

TEST(KernelTransitions, TopologyFileCarriesThemAndRejectsBadOnes) {
  Topology topo = h200();
  topo.calibration.transition_us = {{"rmsnorm>gemm", 0.5}, {"gemm>act", -0.125}, {"act:14336>gemm:4096:7168:bf16", 0.75}};
  const std::string text = topology_to_string(topo);
  ASSERT_NE(text.find("\"transition_us\""), std::string::npos);
  const Topology back = parse_topology(nlohmann::json::parse(text), "cal.json");
  EXPECT_EQ(back.calibration.transition_us, topo.calibration.transition_us);

  auto rejects = [&](const char* key, const nlohmann::json& value, const char* says) {
    test_support::expect_calibration_table_rejects(text, "transition_us", key, value, says);
  };
  rejects("rmsnorm>allreduce", 0.5, "FROM>TO");
  rejects("rmsnorm_gemm", 0.5, "FROM>TO");
  rejects("rmsnorm>gemm", 5000, "rmsnorm>gemm");
  rejects("rmsnorm>gemm", "fast", "rmsnorm>gemm");
  nlohmann::json j = nlohmann::json::parse(text);
  j["calibration"]["transition_us"] = nlohmann::json::array();
  EXPECT_THROW(parse_topology(j, "cal.json"), InputError);
}
