// GPU test of calibrate (label gpu; skips without a GPU): a small calibration over a 2-layer
// Llama-3.1-8B TP2 trace gives positive, finite, plausibly ordered numbers, and the tables it
// builds read back and price that trace; its compute layer fits the transitions.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/measure/calibrate_register.hpp"
#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration/transition_fit.hpp"
#include "calibration/base_preset.hpp"
#include "calibration/gpu_tools.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "model/speculative_flags.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

int gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// The trace's verify step alone, cut to its ops up to decoder layer `last` (and those outside layers).
Trace verify_layers(Trace t, int last) {
  Step verify = t.verify();
  std::vector<Op> kept;
  for (const Op& op : verify.ops)
    if (op.layer <= last) kept.push_back(op);
  verify.ops = kept;
  t.steps = {verify};
  return t;
}

Trace two_layer_trace() { return verify_layers(read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json"), 1); }

}  // namespace

TEST(CalibrateGpu, SmallCalibrationIsSaneAndMonotoneIsh) {
  const int n = gpus();
  if (n < 1) GTEST_SKIP() << "needs a CUDA GPU";
  cuda::register_calibrate();
  const Trace t = two_layer_trace();
  CalibrationPlanOptions o;
  o.ranks = std::min(n, 2);
  if (o.ranks > 1) o.strategies = {"nccl", "oneshot"};
  CalibrationRequest q = plan_calibration({t}, o);
  // Keep the test short: allreduces up to 1 MiB.
  q.allreduce.erase(std::remove_if(q.allreduce.begin(), q.allreduce.end(),
                                   [](const AllreduceCase& c) { return c.bytes > (1 << 20); }),
                    q.allreduce.end());
  q.iters = 5;
  q.kind_reduced_layers = kind_reduced_layers(q.compute_layers, q.fuse_add_norm);
  const CalibrationMeasurements m = run_calibrate(q);
  ASSERT_EQ(m.compute_us.size(), q.compute.size());
  ASSERT_EQ(m.allreduce_us.size(), q.allreduce.size());
  EXPECT_GT(m.launch_gap_us, 0.2);
  EXPECT_LT(m.launch_gap_us, 20.0);
  for (std::size_t i = 0; i < q.compute.size(); ++i) {
    EXPECT_TRUE(std::isfinite(m.compute_us[i]) && m.compute_us[i] > 0) << q.compute[i].shape_string();
    EXPECT_GE(m.compute_us[i], 0.5 * m.launch_gap_us) << q.compute[i].shape_string();
  }
  // The fused add + RMSNorm kernel (table add_rmsnorm): one positive entry per case, not slower
  // than the residual add and the RMSNorm of the same rows measured one by one (+20 %).
  ASSERT_EQ(m.add_rmsnorm_us.size(), q.add_rmsnorm.size());
  EXPECT_FALSE(q.add_rmsnorm.empty());
  for (std::size_t i = 0; i < q.add_rmsnorm.size(); ++i) {
    const Op& c = q.add_rmsnorm[i];
    EXPECT_TRUE(std::isfinite(m.add_rmsnorm_us[i]) && m.add_rmsnorm_us[i] > 0) << c.shape_string();
    double separate = 0;
    for (std::size_t j = 0; j < q.compute.size(); ++j) {
      const Op& op = q.compute[j];
      if ((op.kind == OpKind::residual_add || op.kind == OpKind::rmsnorm) && op.tokens == c.tokens &&
          op.hidden == c.hidden)
        separate += m.compute_us[j];
    }
    if (separate > 0) EXPECT_LT(m.add_rmsnorm_us[i], 1.2 * separate) << c.shape_string();
  }
  // GEMM time by shape: m = 256 is not faster than m = 1 (same weights, more rows), and a
  // GEMM reading more weight bytes at m = 4 is not faster than one reading less (by 2x).
  std::map<std::pair<std::int64_t, std::int64_t>, std::map<std::int64_t, double>> gemm;
  std::map<std::int64_t, double> attn;
  for (std::size_t i = 0; i < q.compute.size(); ++i) {
    const Op& op = q.compute[i];
    if (op.kind == OpKind::gemm) gemm[{op.n, op.k}][op.m] = m.compute_us[i];
    if (op.kind == OpKind::attention) attn[op.kv_len] = m.compute_us[i];
  }
  for (const auto& [shape, by_m] : gemm) EXPECT_GE(by_m.at(256), 0.9 * by_m.at(1)) << shape.first << "x" << shape.second;
  for (const auto& [a, am] : gemm)
    for (const auto& [b, bm] : gemm)
      if (a.first * a.second >= 2 * b.first * b.second) EXPECT_GT(am.at(4), bm.at(4));
  EXPECT_GT(attn.rbegin()->second, attn.begin()->second) << "longest KV slower than the shortest";
  // Before any allreduce is timed, its shapes passed the self-check against the host reference.
  if (o.ranks > 1)
    for (const std::string& s : o.strategies)
      for (const char* layout : {"calibrate_allreduce", "calibrate_allreduce_context", "calibrate_allreduce_layer"}) {
        const std::string want = s + " (" + layout + "): self-check of ";
        EXPECT_TRUE(std::any_of(m.notes.begin(), m.notes.end(),
                                [&](const std::string& n) { return n.rfind(want, 0) == 0; }))
            << want;
      }
  for (std::size_t i = 0; i < q.allreduce.size(); ++i)
    EXPECT_TRUE(std::isfinite(m.allreduce_us[i]) && m.allreduce_us[i] > 0)
        << q.allreduce[i].strategy << " " << q.allreduce[i].bytes;
  // Allreduces in their trace context: one value per case, each a positive cost of a few µs
  // (between a GEMM and a residual add, a small allreduce is neither free nor a millisecond).
  ASSERT_EQ(m.allreduce_context_us.size(), q.allreduce_contexts.size());
  if (o.ranks > 1) EXPECT_FALSE(q.allreduce_contexts.empty());
  for (std::size_t i = 0; i < q.allreduce_contexts.size(); ++i)
    EXPECT_TRUE(std::isfinite(m.allreduce_context_us[i]) && m.allreduce_context_us[i] > 0.5 &&
                m.allreduce_context_us[i] < 1000)
        << q.allreduce_contexts[i].key << " " << m.allreduce_context_us[i];
  // Allreduces in whole decoder layers: what they add to a layer is a cost (positive), and not
  // more than twice what their context chains measured (+5 us of slack for tiny layers).
  ASSERT_EQ(m.allreduce_layer_us.size(), q.allreduce_layers.size());
  if (o.ranks > 1) EXPECT_FALSE(q.allreduce_layers.empty());
  for (std::size_t l = 0; l < q.allreduce_layers.size(); ++l) {
    const double triples = layer_context_sum(q.allreduce_layers[l], m);
    EXPECT_TRUE(std::isfinite(m.allreduce_layer_us[l]) && m.allreduce_layer_us[l] > 0 &&
                m.allreduce_layer_us[l] < 2 * triples + 5)
        << q.allreduce_layers[l].strategy << " " << q.allreduce_layers[l].where << ": " << m.allreduce_layer_us[l]
        << " us (context chains " << triples << ")";
  }

  const Topology base = read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json");
  Topology topo = calibrated_topology(base, m, build_calibration(q, m, {t}));
  // Compute layers: a chain of copies of the layer costs about what its ops do one by one (within
  // 30 %: the transitions are a few µs of a ~100 µs layer), and the fit makes them add up.
  ASSERT_EQ(m.compute_layer_us.size(), q.compute_layers.size());
  EXPECT_FALSE(q.compute_layers.empty());
  for (const LayerTransitionFit& f : fit_transitions_to_layers(q, m, topo)) {
    EXPECT_TRUE(std::isfinite(f.measured_us) && f.measured_us > 0) << f.where;
    EXPECT_GT(f.measured_us, 0.7 * f.ops_us) << f.where;
    EXPECT_LT(f.measured_us, 1.3 * f.ops_us) << f.where;
    EXPECT_NEAR(f.ops_us + f.fitted_us, f.measured_us, 0.01 * f.measured_us) << f.where;
  }
  // The layers without one kind are measured beside them (a Llama layer has four) and fitted.
  ASSERT_EQ(m.kind_reduced_layer_us.size(), q.kind_reduced_layers.size());
  EXPECT_GE(q.kind_reduced_layers.size(), 4u);
  for (double us : m.kind_reduced_layer_us) EXPECT_TRUE(std::isfinite(us) && us > 0);
  std::set<std::string> own_keys;
  for (const LayerTransitionFit& f : fit_transitions_to_kind_reduced_layers(q, m, topo, own_keys)) {
    EXPECT_GT(f.measured_us, 0.7 * f.ops_us) << f.where;
    EXPECT_LT(f.measured_us, 1.3 * f.ops_us) << f.where;
  }
  EXPECT_FALSE(own_keys.empty());
  const Topology back = parse_topology(nlohmann::json::parse(topology_to_string(topo)), "gpu-test.json");
  EXPECT_EQ(back.calibration.gemm.size(), topo.calibration.gemm.size());
  EXPECT_FALSE(back.calibration.attention.empty());
  EXPECT_EQ(back.calibration.allreduce_context_us.size(), q.allreduce_contexts.size());
  EXPECT_EQ(back.calibration.elementwise.count("add_rmsnorm"), 1u);
}

// A batch x tree verify trace (Llama-3.1-8B, batch 8, SGLang (5, 4, 8)) calibrates: its layer
// chains run the tree-mask attention under the trace's verify tree.
TEST(CalibrateGpu, TreeMaskTraceCalibrates) {
  if (gpus() < 1) GTEST_SKIP() << "needs a CUDA GPU";
  cuda::register_calibrate();
  GenOptions o;
  o.tp = 1;
  o.batch = 8;
  o.kv_len = 1024;
  SpeculativeFlags f;
  f.num_steps = 5, f.eagle_topk = 4, f.num_draft_tokens = 8;
  o.speculative = resolve_speculative_flags(f).config;
  const Trace t =
      verify_layers(generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-8b.json"), o), 0);
  CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  ASSERT_EQ(q.verify_trees.size(), 1u);
  q.iters = 3;
  // The trace's tree-mask layers run with their tree (the programs receive it); its attention
  // table points are one request over the batch's positions (trace_shapes.cpp), so every point
  // measured must be a real time.
  const CalibrationMeasurements m = run_calibrate(q);
  ASSERT_EQ(m.compute_us.size(), q.compute.size());
  for (std::size_t i = 0; i < q.compute.size(); ++i)
    EXPECT_TRUE(std::isfinite(m.compute_us[i]) && m.compute_us[i] > 0) << q.compute[i].shape_string();
  ASSERT_EQ(m.compute_layer_us.size(), q.compute_layers.size());
  for (double us : m.compute_layer_us) EXPECT_TRUE(std::isfinite(us) && us > 0);
}
