// Kernel transitions fitted to whole decoder layers: which compute layers calibrate asks the GPUs
// for, and how a layer's measured chain shifts the transition entries of its op pairs so that its
// ops and transitions add up to it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cost/compute_model.hpp"
#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration/transition_fit.hpp"
#include "calibration/base_preset.hpp"
#include "calibration/layer_chain.hpp"
#include "backend/op_pricing.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

Trace trace(const char* name) { return read_trace(std::string(EAGLESIM_REPO) + "/traces/" + name); }
// The trace's layers with the GEMMs, attention, norms, adds and activation only (the engine's
// small kernels left out): the plain Llama layer the kind-reduced layers below are about.
Trace core_kernels(Trace t) {
  for (Step& s : t.steps)
    s.ops.erase(std::remove_if(s.ops.begin(), s.ops.end(), [](const Op& op) { return op.kind == OpKind::elementwise; }),
                s.ops.end());
  return t;
}
Topology h200() {
  return read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json"));
}

// Every compute point 5 us, every transition pair 1 us; compute layers not measured.
CalibrationMeasurements flat(const CalibrationRequest& q) {
  CalibrationMeasurements m;
  m.ranks = q.ranks;
  m.compute_us.assign(q.compute.size(), 5.0);
  m.allreduce_us.assign(q.allreduce.size(), 7.0);
  m.transition_us.assign(q.transitions.size(), 1.0);
  m.compute_layer_us.assign(q.compute_layers.size(), std::numeric_limits<double>::quiet_NaN());
  return m;
}

// The pairs a step charges per copy of the layer: consecutive ops, the last into the first.
std::vector<std::string> pair_keys(const ComputeLayerCase& layer) {
  std::vector<std::string> keys;
  const std::size_t n = layer.ops.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Op& a = layer.ops[(i + n - 1) % n];
    const Op& b = layer.ops[i];
    if (a.kind != OpKind::other && b.kind != OpKind::other) keys.push_back(transition_key(a, b));
  }
  return keys;
}

double ops_us(const ComputeLayerCase& layer, const Topology& topo) {
  double sum = 0;
  for (const Op& op : layer.ops) sum += compute_cost(op, topo).us;
  return sum;
}

}  // namespace

TEST(ComputeLayer, PlanAsksForTheFirstLayerOfEveryStepWithoutItsAllreduces) {
  const Trace t = trace("llama-3.1-8b_tp2_t4.json");
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = {"nccl"};
  const CalibrationRequest q = plan_calibration({t}, o);
  ASSERT_FALSE(q.compute_layers.empty());
  for (const ComputeLayerCase& c : q.compute_layers) {
    EXPECT_NE(c.where.find("layer"), std::string::npos) << c.where;
    ASSERT_FALSE(c.ops.empty());
    for (const Op& op : c.ops) EXPECT_FALSE(op.is_comm());
  }
  // The verify step's layer: SGLang's Llama layer, 12 compute ops (norm, qkv, RoPE, KV store,
  // attention, o, add, norm, gate_up, act, down, add).
  EXPECT_EQ(q.compute_layers.front().ops.size(), 12u);
  // One case per distinct layer: the same trace twice adds none.
  EXPECT_EQ(plan_calibration({t, t}, o).compute_layers.size(), q.compute_layers.size());
  // A one-GPU trace has compute layers too (no allreduce to measure, but transitions to fit).
  EXPECT_FALSE(plan_calibration({trace("llama-3.1-8b_tp1_t4.json")}, CalibrationPlanOptions{}).compute_layers.empty());
}

// A DeepSeek-style model (Kimi-K2: one dense-MLP layer, then MoE layers) has two layer
// structures: calibrate measures the chain and the transitions of the first layer of each, so the
// transitions into and out of the expert GEMMs are measured too.
TEST(ComputeLayer, PlanAsksForTheFirstLayerOfEachStructure) {
  const Trace t = trace("kimi-k2_tp8_t4.json");
  CalibrationPlanOptions o;
  o.ranks = 1;
  const CalibrationRequest q = plan_calibration({t}, o);
  std::size_t with_experts = 0, dense = 0;
  for (const ComputeLayerCase& c : q.compute_layers) {
    const bool moe = std::any_of(c.ops.begin(), c.ops.end(), [](const Op& op) { return op.kind == OpKind::grouped_gemm; });
    (moe ? with_experts : dense)++;
  }
  EXPECT_EQ(dense, 1u);
  // The MoE layers with and without the EAGLE-3 target's captured hidden state (layers 2, L/2 and
  // L-3 add one kernel).
  EXPECT_EQ(with_experts, 2u);
  bool into_experts = false, out_of_experts = false;
  for (const auto& [a, b] : q.transitions) {
    into_experts = into_experts || (b.kind == OpKind::grouped_gemm && a.kind != OpKind::grouped_gemm);
    out_of_experts = out_of_experts || (a.kind == OpKind::grouped_gemm && b.kind != OpKind::grouped_gemm);
  }
  EXPECT_TRUE(into_experts);
  EXPECT_TRUE(out_of_experts);
  // A model whose layers all look alike has one, and one more for the layers whose hidden state
  // the EAGLE-3 target captures.
  EXPECT_EQ(plan_calibration({trace("llama-3.1-8b_tp1_t4.json")}, o).compute_layers.size(), 2u);
}

TEST(ComputeLayer, LayerChainCopiesRotateTheWeightsPastL2Twice) {
  EXPECT_EQ(layer_chain_copies(100e6, 60e6), 8);    // floor
  EXPECT_EQ(layer_chain_copies(10e6, 60e6), 12);    // 2 x 60 MB over 10 MB
  EXPECT_EQ(layer_chain_copies(1e6, 60e6), 32);     // cap
  EXPECT_EQ(layer_chain_copies(0.0, 60e6), 8);      // no weights
}

TEST(ComputeLayer, ComputeLayerChainsStreamAtLeastFourGibibytes) {
  const double gib = 1ull << 30;
  EXPECT_EQ(compute_layer_chain_copies(109e6, 60e6), 40);     // a Llama-3.1-8B TP2 layer: ceil(4 GiB / 109 MB)
  EXPECT_EQ(compute_layer_chain_copies(0.86e9, 60e6), 8);     // a 70B TP1 layer: the floor already streams 6.9 GB
  EXPECT_EQ(compute_layer_chain_copies(0.5 * gib, 60e6), 8);  // exactly 4 GiB at the floor
  EXPECT_EQ(compute_layer_chain_copies(1e6, 60e6), 64);       // cap
  EXPECT_EQ(compute_layer_chain_copies(0.0, 60e6), 8);        // no weights: layer_chain_copies' floor
  EXPECT_GE(compute_layer_chain_copies(5e6, 1e9), layer_chain_copies(5e6, 1e9));  // never fewer than the L2 rule
}

TEST(ComputeLayer, LayerWeightBytesSumsTheFirstOpsOrAll) {
  const Trace t = trace("llama-3.1-8b_tp1_t4.json");
  const CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  ASSERT_FALSE(q.compute_layers.empty());
  const std::vector<Op>& ops = q.compute_layers[0].ops;
  ASSERT_GE(ops.size(), 2u);
  double all = 0;
  for (const Op& op : ops) all += op.weight_bytes();
  EXPECT_GT(all, 1e8);  // a Llama-3.1-8B layer: hundreds of MB
  EXPECT_DOUBLE_EQ(layer_weight_bytes(ops), all);
  EXPECT_DOUBLE_EQ(layer_weight_bytes(ops, 1), ops[0].weight_bytes());
  EXPECT_DOUBLE_EQ(layer_weight_bytes(ops, ops.size() + 5), all);  // n past the end: all of them
  EXPECT_DOUBLE_EQ(layer_weight_bytes(ops, 0), 0.0);
}

TEST(ComputeLayer, ChainsAreTimedOverThreePlacementsWhereMemoryAllows) {
  const double gib = 1ull << 30;
  EXPECT_EQ(compute_layer_placements(4.3 * gib, 130 * gib), 3);  // an 8B TP1 chain on an H200
  EXPECT_EQ(compute_layer_placements(4.3 * gib, 12 * gib), 1);   // 5.4 GiB each, 6 GiB to spend
  EXPECT_EQ(compute_layer_placements(4.3 * gib, 22 * gib), 2);
  EXPECT_EQ(compute_layer_placements(4.3 * gib, 1 * gib), 1);    // never none: the chain itself decides
  EXPECT_EQ(compute_layer_placements(0.0, 0.0), 1);
}

TEST(ComputeLayer, TransitionsAreShiftedSoTheLayerAddsUpToItsChain) {
  const Trace t = trace("llama-3.1-8b_tp1_t4.json");
  CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  q.fuse_add_norm = false;  // every op its own kernel (fused: TheFusedAddNormKernelIsOneOpOfTheLayer)
  ASSERT_FALSE(q.compute_layers.empty());
  CalibrationMeasurements m = flat(q);
  const Topology before = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  // Every layer measures its ops plus a quarter of a µs per transition (the pair chains said 1).
  for (std::size_t l = 0; l < q.compute_layers.size(); ++l)
    m.compute_layer_us[l] = ops_us(q.compute_layers[l], before) + 0.25 * static_cast<double>(pair_keys(q.compute_layers[l]).size());
  Topology after = before;
  const std::vector<LayerTransitionFit> fits = fit_transitions_to_layers(q, m, after);
  ASSERT_EQ(fits.size(), q.compute_layers.size());
  for (std::size_t l = 0; l < fits.size(); ++l) {
    const double pairs = static_cast<double>(pair_keys(q.compute_layers[l]).size());
    EXPECT_TRUE(fits[l].fitted);
    EXPECT_EQ(fits[l].pairs, static_cast<int>(pairs));
    EXPECT_NEAR(fits[l].pairs_us, 1.0 * pairs, 1e-9);
    EXPECT_NEAR(fits[l].fitted_us, 0.25 * pairs, 1e-9);
    EXPECT_NEAR(fits[l].ops_us + fits[l].fitted_us, fits[l].measured_us, 1e-9);
    for (const std::string& key : pair_keys(q.compute_layers[l]))
      EXPECT_DOUBLE_EQ(after.calibration.transition_us.at(key), 0.25) << key;
  }
  // The kind-pair entries (the fallback for shapes no layer measured) keep the pair chains' value.
  EXPECT_DOUBLE_EQ(after.calibration.transition_us.at("rmsnorm>gemm"), 1.0);

  // A layer not measured leaves the table as the pair chains made it.
  CalibrationMeasurements none = flat(q);
  Topology untouched = before;
  fit_transitions_to_layers(q, none, untouched);
  EXPECT_EQ(untouched.calibration.transition_us, before.calibration.transition_us);

  // Measurements that do not match the request are a programming error.
  m.compute_layer_us.push_back(1.0);
  EXPECT_THROW(fit_transitions_to_layers(q, m, after), std::invalid_argument);
  EXPECT_THROW(build_calibration(q, m, {t}), std::invalid_argument);
}

TEST(ComputeLayer, AnEntryInSeveralLayersTakesTheMeanOfWhatTheyWant) {
  const Trace t = trace("llama-3.1-8b_tp1_t4.json");
  CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  q.fuse_add_norm = false;
  ASSERT_FALSE(q.compute_layers.empty());
  q.compute_layers.resize(1);
  q.compute_layers.push_back(q.compute_layers[0]);  // the same shapes measured twice
  CalibrationMeasurements m = flat(q);
  Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  const double ops = ops_us(q.compute_layers[0], topo);
  const std::vector<std::string> keys = pair_keys(q.compute_layers[0]);
  const double pairs = static_cast<double>(keys.size());
  m.compute_layer_us = {ops + 0.5 * pairs, ops + 1.5 * pairs};  // want 0.5 and 1.5 per pair
  fit_transitions_to_layers(q, m, topo);
  for (const std::string& key : keys) EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(key), 1.0) << key;
  // A layer that runs faster than its ops' tables gets negative transitions (the ops overlap).
  m.compute_layer_us = {ops - 0.5 * pairs, ops - 0.5 * pairs};
  fit_transitions_to_layers(q, m, topo);
  for (const std::string& key : keys) EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(key), -0.5) << key;
}

// With fuse_add_norm SGLang's Llama layer runs 10 kernels per copy: the attention's residual add
// with the post-attention norm, and the MLP's residual add with the next copy's input norm, are
// one each.
// They are priced by the add_rmsnorm table, and no transition is charged between add and norm.
TEST(ComputeLayer, TheFusedAddNormKernelIsOneOpOfTheLayer) {
  const Trace t = trace("llama-3.1-8b_tp1_t4.json");
  CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  ASSERT_TRUE(q.fuse_add_norm) << "the default, as SGLang and vLLM run it";
  q.compute_layers.resize(1);
  const std::vector<Op>& ops = q.compute_layers[0].ops;
  ASSERT_EQ(ops.size(), 12u);
  ASSERT_EQ(ops.front().kind, OpKind::rmsnorm);
  ASSERT_EQ(ops.back().kind, OpKind::residual_add);  // fuses with the next copy's input norm
  CalibrationMeasurements m = flat(q);
  Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  // Without the fused kernel's table the layer has an op the tables do not price: not fitted.
  const auto before = topo.calibration.transition_us;
  m.compute_layer_us = {100.0};
  std::vector<LayerTransitionFit> fits = fit_transitions_to_layers(q, m, topo);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_FALSE(fits[0].fitted);
  EXPECT_EQ(fits[0].pairs, 10);
  EXPECT_EQ(topo.calibration.transition_us, before);

  topo.calibration.elementwise["add_rmsnorm"] = {{1024, 4.0}, {65536, 4.0}};
  double kernels_us = 0;  // 8 ops by their tables, 2 fused kernels at 4 us
  for (const Op& op : ops)
    if (op.kind != OpKind::rmsnorm && op.kind != OpKind::residual_add) kernels_us += compute_cost(op, topo).us;
  kernels_us += 2 * 4.0;
  m.compute_layer_us = {kernels_us + 10 * 0.25};  // a quarter of a µs per transition
  fits = fit_transitions_to_layers(q, m, topo);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_TRUE(fits[0].fitted);
  EXPECT_NEAR(fits[0].ops_us, kernels_us, 1e-9);
  EXPECT_EQ(fits[0].pairs, 10);
  EXPECT_NEAR(fits[0].pairs_us, 10 * 1.0, 1e-9);
  EXPECT_NEAR(fits[0].fitted_us, 10 * 0.25, 1e-9);
  // Into each fused kernel from its add, out of it from its norm; add > norm is no transition.
  EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(transition_key(ops[5], ops[6])), 0.25);  // o_proj > add
  EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(transition_key(ops[7], ops[8])), 0.25);  // norm > gate_up
  EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(transition_key(ops[10], ops[11])), 0.25);  // down > add
  EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(transition_key(ops[0], ops[1])), 0.25);  // norm > qkv
  EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(transition_key(ops[6], ops[7])),
                   before.at(transition_key(ops[6], ops[7])));  // add > norm: as the pair chains left it
}

TEST(ComputeLayer, ALayerWithAnOpTheTablesDoNotPriceIsNotFitted) {
  const Trace t = trace("llama-3.1-8b_tp1_t4.json");
  CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  ASSERT_FALSE(q.compute_layers.empty());
  q.compute_layers.resize(1);
  q.fuse_add_norm = false;  // else the fused add + norm kernels, untabled here, would be the reason
  // A MoE expert GEMM has no table: the roofline prices it, and its error is not a transition.
  Op experts;
  experts.kind = OpKind::grouped_gemm;
  experts.tokens = 32, experts.experts = 8, experts.n = 2048, experts.k = 4096;
  q.compute_layers[0].ops.insert(q.compute_layers[0].ops.begin() + 7, experts);
  CalibrationMeasurements m = flat(q);
  Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  const auto before = topo.calibration.transition_us;
  m.compute_layer_us = {ops_us(q.compute_layers[0], topo) + 100.0};
  const std::vector<LayerTransitionFit> fits = fit_transitions_to_layers(q, m, topo);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_FALSE(fits[0].fitted);
  EXPECT_DOUBLE_EQ(fits[0].fitted_us, fits[0].pairs_us);
  EXPECT_EQ(topo.calibration.transition_us, before);
}

// A fused step runs each layer without its allreduces and without the residual add + RMSNorm they
// absorb: qkv, RoPE, KV store, attention, o_proj, gate_up, act, down per copy, and o_proj ->
// gate_up, down -> qkv are pairs no compute layer has. The layer's measured baseline chain fits
// those two pairs only.
TEST(ComputeLayer, TheFusedLayersOwnPairsAreFittedToItsBaselineChain) {
  const Trace t = trace("llama-3.1-8b_tp2_t4.json");
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = {"nccl", "fused"};
  const CalibrationRequest q = plan_calibration({t}, o);
  std::size_t fused_verify = q.allreduce_layers.size();
  for (std::size_t l = 0; l < q.allreduce_layers.size(); ++l)
    if (q.allreduce_layers[l].strategy == "fused" && q.allreduce_layers[l].step == "verify") fused_verify = l;
  ASSERT_LT(fused_verify, q.allreduce_layers.size());
  const ComputeLayerCase stripped = stripped_layer(q.allreduce_layers[fused_verify]);
  std::vector<OpKind> kinds;
  for (const Op& op : stripped.ops) kinds.push_back(op.kind);
  EXPECT_EQ(kinds, (std::vector<OpKind>{OpKind::gemm, OpKind::elementwise, OpKind::elementwise, OpKind::attention,
                                        OpKind::gemm, OpKind::gemm, OpKind::act, OpKind::gemm}));

  CalibrationMeasurements m = flat(q);
  m.allreduce_layer_us.assign(q.allreduce_layers.size(), std::numeric_limits<double>::quiet_NaN());
  m.allreduce_layer_baseline_us.assign(q.allreduce_layers.size(), std::numeric_limits<double>::quiet_NaN());
  Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  const auto before = topo.calibration.transition_us;
  const double ops = ops_us(stripped, topo);
  // Its 8 pairs: 6 a compute layer has (1 us each by the pair chains), 2 of its own (measured 1 us
  // too); the chain says 3 us more than that: its own two get +1.5 each.
  m.allreduce_layer_baseline_us[fused_verify] = ops + 8.0 + 3.0;
  const std::vector<LayerTransitionFit> fits = fit_transitions_to_stripped_layers(q, m, topo);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_TRUE(fits[0].fitted);
  EXPECT_EQ(fits[0].pairs, 8);
  EXPECT_NEAR(fits[0].pairs_us, 8.0, 1e-9);
  EXPECT_NEAR(fits[0].ops_us + fits[0].fitted_us, fits[0].measured_us, 1e-9);
  int own = 0;
  for (const auto& [key, us] : topo.calibration.transition_us) {
    const bool shape_key = !transition_levels_of(key).kinds.empty();
    if (shape_key && key.rfind("gemm:", 0) == 0 && key.find(">gemm:") != std::string::npos) {
      EXPECT_DOUBLE_EQ(us, 2.5) << key;
      ++own;
    } else {
      EXPECT_DOUBLE_EQ(us, before.at(key)) << key;  // compute layers' entries untouched
    }
  }
  EXPECT_EQ(own, 2);

  // Not measured: nothing moves; no fused layer: nothing to fit.
  CalibrationMeasurements none = m;
  none.allreduce_layer_baseline_us[fused_verify] = std::numeric_limits<double>::quiet_NaN();
  Topology untouched = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  const std::vector<LayerTransitionFit> skipped = fit_transitions_to_stripped_layers(q, none, untouched);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_FALSE(skipped[0].fitted);
  EXPECT_EQ(untouched.calibration.transition_us, before);
  none.allreduce_layer_baseline_us.push_back(1.0);
  EXPECT_THROW(fit_transitions_to_stripped_layers(q, none, untouched), std::invalid_argument);
}

// What a pair of shapes outside the calibration is charged: the mean of the fitted shape entries
// of its kind pair with the GEMMs' weight formats, else of its kind pair; not the pair chains'
// mean (which counts A -> B and B -> A together).
TEST(ComputeLayer, KindEntriesBecomeTheMeanOfTheirFittedShapeEntries) {
  std::map<std::string, double> table = {
      {"rmsnorm>gemm", -1.0},                      // the pair chains' mean
      {"rmsnorm:4096>gemm:6144:4096:bf16", -0.2},  // fitted to a layer
      {"rmsnorm:5120>gemm:3072:5120:fp8", -0.6},
      {"rmsnorm:5120>gemm:1024:5120:fp8", -0.8},
      {"gemm:4096:4096:bf16>act:14336", 0.3},  // no kind entry yet
      {"attention>gemm", -2.0},                // a kind entry with no shape entry: left alone
  };
  const std::vector<KindTransition> kinds = kind_transitions_from_shapes(table);
  std::map<std::string, KindTransition> by_key;
  for (const KindTransition& k : kinds) by_key[k.key] = k;
  ASSERT_EQ(by_key.size(), 5u);
  EXPECT_NEAR(table.at("rmsnorm>gemm"), -1.6 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(table.at("rmsnorm>gemm:bf16"), -0.2);
  EXPECT_DOUBLE_EQ(table.at("rmsnorm>gemm:fp8"), -0.7);
  EXPECT_DOUBLE_EQ(table.at("gemm>act"), 0.3);
  EXPECT_DOUBLE_EQ(table.at("gemm:bf16>act"), 0.3);
  EXPECT_DOUBLE_EQ(table.at("attention>gemm"), -2.0);
  EXPECT_DOUBLE_EQ(table.at("rmsnorm:4096>gemm:6144:4096:bf16"), -0.2);  // shape entries unchanged
  EXPECT_DOUBLE_EQ(by_key.at("rmsnorm>gemm").before_us, -1.0);
  EXPECT_EQ(by_key.at("rmsnorm>gemm").shapes, 3);
  EXPECT_EQ(by_key.at("rmsnorm>gemm:fp8").shapes, 2);
  EXPECT_TRUE(std::isnan(by_key.at("gemm>act").before_us));
  // The simulator charges an unseen pair the entry of its weight format, else of its kinds.
  Op norm;
  norm.kind = OpKind::rmsnorm;
  norm.tokens = 4;
  norm.hidden = 7168;
  Op gemm;
  gemm.kind = OpKind::gemm;
  gemm.m = 4;
  gemm.n = 1536;
  gemm.k = 7168;
  gemm.dtype = DType::fp8;
  EXPECT_DOUBLE_EQ(find_transition(table, norm, gemm).value(), -0.7);
  gemm.dtype = DType::int4;
  EXPECT_NEAR(find_transition(table, norm, gemm).value(), -1.6 / 3, 1e-12);
}

TEST(ComputeLayer, TransitionLevelsOfAShapeKey) {
  TransitionLevels up = transition_levels_of("rmsnorm:7168>gemm:1536:7168:int4");
  EXPECT_EQ(up.family, "rmsnorm>gemm:int4");
  EXPECT_EQ(up.kinds, "rmsnorm>gemm");
  up = transition_levels_of("grouped_gemm:384:5120:fp8>attention:gqa:12:1:128");
  EXPECT_EQ(up.family, "grouped_gemm:fp8>attention");
  EXPECT_EQ(up.kinds, "grouped_gemm>attention");
  for (const char* not_shape : {"rmsnorm>gemm", "rmsnorm>gemm:int4", "gemm:int4>act", "bogus", "x:1>gemm:1:1:bf16"})
    EXPECT_TRUE(transition_levels_of(not_shape).kinds.empty()) << not_shape;
  Op a;
  a.kind = OpKind::grouped_gemm;
  a.dtype = DType::fp8;
  Op b;
  b.kind = OpKind::act;
  EXPECT_EQ(transition_family_key(a, b), "grouped_gemm:fp8>act");
  EXPECT_TRUE(valid_transition_key(transition_family_key(a, b)));
}

namespace {

std::vector<OpKind> kinds_of(const ComputeLayerCase& layer) {
  std::vector<OpKind> kinds;
  for (const Op& op : layer.ops) kinds.push_back(op.kind);
  return kinds;
}

const ComputeLayerCase* find_case(const std::vector<ComputeLayerCase>& cases, const std::string& suffix) {
  for (const ComputeLayerCase& c : cases)
    if (c.where.size() >= suffix.size() && c.where.compare(c.where.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &c;
  return nullptr;
}

}  // namespace

// The layers a kind's marginal needs: the Llama layer without each kind, as the replay's graph
// without that kind runs it (a fused add + RMSNorm leaves as rmsnorm, with its add).
TEST(ComputeLayer, KindReducedLayersLeaveOutEachKindsKernels) {
  const CalibrationRequest q = plan_calibration({core_kernels(trace("llama-3.1-8b_tp1_t4.json"))}, CalibrationPlanOptions{});
  ASSERT_EQ(q.compute_layers.size(), 1u);
  const std::vector<ComputeLayerCase> fused = kind_reduced_layers(q.compute_layers, true);
  // norm, qkv, attention, o, add, norm, gate_up, act, down, add: without gemm, attention, the
  // fused add + RMSNorm kernels, act; each puts kernels together that the layer never has.
  ASSERT_EQ(fused.size(), 4u);
  const ComputeLayerCase* no_norm = find_case(fused, " without rmsnorm");
  ASSERT_NE(no_norm, nullptr);
  EXPECT_EQ(kinds_of(*no_norm), (std::vector<OpKind>{OpKind::gemm, OpKind::attention, OpKind::gemm, OpKind::gemm,
                                                     OpKind::act, OpKind::gemm}));
  const ComputeLayerCase* no_gemm = find_case(fused, " without gemm");
  ASSERT_NE(no_gemm, nullptr);
  EXPECT_EQ(kinds_of(*no_gemm), (std::vector<OpKind>{OpKind::rmsnorm, OpKind::attention, OpKind::residual_add,
                                                     OpKind::rmsnorm, OpKind::act, OpKind::residual_add}));
  EXPECT_NE(find_case(fused, " without attention"), nullptr);
  EXPECT_NE(find_case(fused, " without act"), nullptr);
  for (const ComputeLayerCase& c : fused) EXPECT_EQ(c.gpus, q.compute_layers[0].gpus);
  // Unfused, the add and the norm are kinds of their own.
  const std::vector<ComputeLayerCase> unfused = kind_reduced_layers(q.compute_layers, false);
  const ComputeLayerCase* no_add = find_case(unfused, " without residual_add");
  ASSERT_NE(no_add, nullptr);
  EXPECT_EQ(no_add->ops.size(), 8u);
}

// A kind whose removal leaves only pairs some compute layer has asks for nothing.
TEST(ComputeLayer, KindReducedLayersOnlyWhereTheyBringNewNeighbours) {
  Op g;
  g.kind = OpKind::gemm;
  g.m = 4, g.n = 4096, g.k = 4096;
  Op y;
  y.kind = OpKind::act;
  y.tokens = 4, y.hidden = 4096;
  Op r;
  r.kind = OpKind::rmsnorm;
  r.tokens = 4, r.hidden = 4096;
  ComputeLayerCase l1, l2;
  l1.where = "l1";
  l1.ops = {g, y, r};  // pairs r>g (into the next copy), g>y, y>r
  l2.where = "l2";
  l2.ops = {g, r};  // pairs g>r, r>g
  const std::vector<ComputeLayerCase> cases = kind_reduced_layers({l1, l2}, false);
  std::set<std::string> where;
  for (const ComputeLayerCase& c : cases) where.insert(c.where);
  // l1 without act is l2; l1 without gemm brings r>y, without rmsnorm y>g; l2 leaves one op.
  EXPECT_EQ(where, (std::set<std::string>{"l1 without gemm", "l1 without rmsnorm"}));
}

// A layer without one kind shifts only the entries of the pairs no other layer has, and those
// count towards a kind entry only where no pair of a real layer does.
TEST(ComputeLayer, KindReducedLayersFitOnlyTheirOwnPairs) {
  const Trace t = core_kernels(trace("llama-3.1-8b_tp1_t4.json"));
  CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  q.kind_reduced_layers = kind_reduced_layers(q.compute_layers, q.fuse_add_norm);
  CalibrationMeasurements m = flat(q);
  m.kind_reduced_layer_us.assign(q.kind_reduced_layers.size(), std::numeric_limits<double>::quiet_NaN());
  Topology topo = calibrated_topology(h200(), m, build_calibration(q, m, {t}));
  const auto before = topo.calibration.transition_us;
  std::size_t no_norm = q.kind_reduced_layers.size();
  for (std::size_t l = 0; l < q.kind_reduced_layers.size(); ++l)
    if (q.kind_reduced_layers[l].where.find(" without rmsnorm") != std::string::npos) no_norm = l;
  ASSERT_LT(no_norm, q.kind_reduced_layers.size());
  // qkv, attention, o, gate_up, act, down: its own pairs are o -> gate_up and down -> the next
  // copy's qkv; the chain says 2 us more than its ops and its entries.
  const ComputeLayerCase& layer = q.kind_reduced_layers[no_norm];
  std::set<std::string> own_keys;
  const auto dry = fit_transitions_to_kind_reduced_layers(q, m, topo, own_keys);  // nothing measured
  ASSERT_EQ(dry.size(), q.kind_reduced_layers.size());
  for (const LayerTransitionFit& f : dry) EXPECT_FALSE(f.fitted);
  EXPECT_TRUE(own_keys.empty());
  EXPECT_EQ(topo.calibration.transition_us, before);
  m.kind_reduced_layer_us[no_norm] = ops_us(layer, topo) + dry[no_norm].pairs_us + 2.0;
  const auto fits = fit_transitions_to_kind_reduced_layers(q, m, topo, own_keys);
  ASSERT_TRUE(fits[no_norm].fitted);
  EXPECT_EQ(fits[no_norm].pairs, 6);
  EXPECT_NEAR(fits[no_norm].ops_us + fits[no_norm].fitted_us, fits[no_norm].measured_us, 1e-9);
  ASSERT_EQ(own_keys.size(), 2u);
  for (const std::string& own : own_keys) {
    EXPECT_EQ(own.rfind("gemm:", 0), 0u) << own;
    EXPECT_NE(own.find(">gemm:"), std::string::npos) << own;
    const auto b = before.find(own);
    EXPECT_NEAR(topo.calibration.transition_us.at(own), (b == before.end() ? 0.0 : b->second) + 1.0, 1e-9) << own;
  }
  for (const auto& [key, us] : before)
    if (!own_keys.count(key)) EXPECT_DOUBLE_EQ(topo.calibration.transition_us.at(key), us) << key;  // untouched
  // gemm>gemm (no real layer has the pair) is the mean of the two; rmsnorm>gemm as without them.
  std::map<std::string, double> with = topo.calibration.transition_us, plain = before;
  kind_transitions_from_shapes(with, own_keys);
  kind_transitions_from_shapes(plain);
  double own_mean = 0;
  for (const std::string& own : own_keys) own_mean += with.at(own) / 2;
  EXPECT_NEAR(with.at("gemm>gemm"), own_mean, 1e-12);
  EXPECT_DOUBLE_EQ(with.at("rmsnorm>gemm"), plain.at("rmsnorm>gemm"));
}

TEST(ComputeLayer, SecondaryShapeEntriesCountOnlyForKindPairsWithoutOthers) {
  std::map<std::string, double> table = {
      {"rmsnorm:4096>gemm:6144:4096:bf16", -0.2},        // a real layer's pair
      {"rmsnorm:2048>gemm:128:2048:bf16", 3.0},          // only a layer without some kind has it
      {"gemm:6144:4096:bf16>gemm:4096:4096:bf16", 1.5},  // likewise, and no real layer's pair of its kinds
  };
  kind_transitions_from_shapes(table, {"rmsnorm:2048>gemm:128:2048:bf16", "gemm:6144:4096:bf16>gemm:4096:4096:bf16"});
  EXPECT_DOUBLE_EQ(table.at("rmsnorm>gemm"), -0.2);
  EXPECT_DOUBLE_EQ(table.at("gemm>gemm"), 1.5);
  EXPECT_DOUBLE_EQ(table.at("gemm:bf16>gemm:bf16"), 1.5);
}
