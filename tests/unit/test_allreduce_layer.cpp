// Allreduces calibrated in a whole decoder layer: which (strategy, layer) replays calibrate asks
// the GPUs for, and how what the allreduces add to a layer rescales that layer's context entries.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "engine/calibration_plan.hpp"
#include "topology/calibration_keys.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

Trace llama8b_tp2() { return read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json"); }

CalibrationRequest plan(const std::vector<Trace>& traces, std::vector<std::string> strategies) {
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = std::move(strategies);
  return plan_calibration(traces, o);
}

// Measurements of `q` with the given context entries (compute and tables irrelevant here).
CalibrationMeasurements with_contexts(const CalibrationRequest& q, const std::vector<double>& context_us) {
  CalibrationMeasurements m;
  m.ranks = 2;
  m.compute_us.assign(q.compute.size(), 5.0);
  m.allreduce_us.assign(q.allreduce.size(), 7.0);
  m.allreduce_context_us = context_us;
  return m;
}

}  // namespace

TEST(AllreduceLayer, PlanAsksForTheFirstLayerOfEveryStepPerStrategy) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"nccl", "fused"});
  ASSERT_FALSE(q.allreduce_layers.empty());
  std::set<std::string> strategies_seen;
  for (const AllreduceLayerCase& c : q.allreduce_layers) {
    strategies_seen.insert(c.strategy);
    ASSERT_GT(c.layer_size, 0u);
    ASSERT_LE(c.layer_size, c.ops.size());
    EXPECT_NE(c.where.find("layer"), std::string::npos) << c.where;
    // Every allreduce of the layer is dropped from the baseline and has its context entry.
    std::vector<std::size_t> allreduces;
    for (std::size_t j = 0; j < c.layer_size; ++j)
      if (c.ops[j].is_comm()) allreduces.push_back(j);
    ASSERT_FALSE(allreduces.empty());
    ASSERT_EQ(c.contexts.size(), allreduces.size());
    for (std::size_t k = 0; k < allreduces.size(); ++k) {
      const AllreduceContextCase& cc = q.allreduce_contexts.at(c.contexts[k]);
      EXPECT_EQ(cc.allreduce.strategy, c.strategy);
      EXPECT_EQ(cc.allreduce.bytes, c.ops[allreduces[k]].bytes);
      EXPECT_NE(std::find(c.dropped.begin(), c.dropped.end(), allreduces[k]), c.dropped.end());
    }
    if (c.strategy == "nccl") {
      // Nothing absorbed: exactly the allreduces are dropped, and there is no tail.
      EXPECT_EQ(c.dropped, allreduces);
      EXPECT_EQ(c.ops.size(), c.layer_size);
    } else {
      // Fused: each allreduce also drops the residual add + RMSNorm it absorbs; the last one's
      // RMSNorm is the next layer's input norm, carried as the tail, the same op as the head.
      EXPECT_EQ(c.dropped.size(), 3 * allreduces.size());
      for (std::size_t d : c.dropped) {
        ASSERT_LT(d, c.ops.size());
        const OpKind k = c.ops[d].kind;
        EXPECT_TRUE(k == OpKind::allreduce || k == OpKind::residual_add || k == OpKind::rmsnorm);
      }
      ASSERT_EQ(c.ops.size(), c.layer_size + 1);
      EXPECT_EQ(c.ops.back().kind, c.ops.front().kind);
      EXPECT_EQ(c.ops.back().shape_string(), c.ops.front().shape_string());
    }
  }
  EXPECT_EQ(strategies_seen, (std::set<std::string>{"nccl", "fused"}));
  // One rank: no allreduce, no layer.
  EXPECT_TRUE(plan_calibration({t}, CalibrationPlanOptions{}).allreduce_layers.empty());
  // Deduplicated across traces.
  EXPECT_EQ(plan({t, t}, {"nccl", "fused"}).allreduce_layers.size(), q.allreduce_layers.size());
}

TEST(AllreduceLayer, WhatALayerMeasuresIsSplitOverItsAllreducesByTheirContextEntries) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"nccl"});
  ASSERT_FALSE(q.allreduce_layers.empty());
  const AllreduceLayerCase& layer = q.allreduce_layers[0];
  ASSERT_EQ(layer.contexts.size(), 2u);  // a Llama layer: after attention and after the MLP
  ASSERT_NE(layer.contexts[0], layer.contexts[1]);
  std::vector<double> context_us(q.allreduce_contexts.size(), 9.0);
  context_us[layer.contexts[0]] = 10.0;
  context_us[layer.contexts[1]] = 6.0;
  CalibrationMeasurements m = with_contexts(q, context_us);
  m.allreduce_layer_us.assign(q.allreduce_layers.size(), std::numeric_limits<double>::quiet_NaN());
  m.allreduce_layer_us[0] = 8.0;  // the two allreduces add 8 us to the layer, not 16
  const Calibration cal = build_calibration(q, m, {t});
  EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[layer.contexts[0]].key), 5.0);
  EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[layer.contexts[1]].key), 3.0);
  // Entries of layers not measured (NaN) keep their context-chain value.
  for (std::size_t i = 0; i < q.allreduce_contexts.size(); ++i)
    if (i != layer.contexts[0] && i != layer.contexts[1])
      EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[i].key), 9.0) << q.allreduce_contexts[i].key;

  // A layer whose context entries were not all measured is not used to scale.
  context_us[layer.contexts[1]] = std::numeric_limits<double>::quiet_NaN();
  const Calibration partial = build_calibration(q, with_contexts(q, context_us), {t});
  EXPECT_DOUBLE_EQ(partial.allreduce_context_us.at(q.allreduce_contexts[layer.contexts[0]].key), 10.0);
  CalibrationMeasurements partial_m = with_contexts(q, context_us);
  partial_m.allreduce_layer_us = m.allreduce_layer_us;
  EXPECT_DOUBLE_EQ(build_calibration(q, partial_m, {t}).allreduce_context_us.at(q.allreduce_contexts[layer.contexts[0]].key),
                   10.0);

  // Measurements that do not match the request are a programming error.
  m.allreduce_layer_us.push_back(1.0);
  EXPECT_THROW(build_calibration(q, m, {t}), std::invalid_argument);
}

TEST(AllreduceLayer, AnEntryInSeveralLayersTakesTheMeanOfItsScaledValues) {
  const Trace t = llama8b_tp2();
  // Two layer cases sharing their entries, as layers of the same shapes in two traces do.
  CalibrationRequest q = plan({t}, {"nccl"});
  ASSERT_FALSE(q.allreduce_layers.empty());
  AllreduceLayerCase twin = q.allreduce_layers[0];
  twin.where += " (twin)";
  q.allreduce_layers.push_back(twin);
  std::vector<double> context_us(q.allreduce_contexts.size(), 4.0);
  CalibrationMeasurements m = with_contexts(q, context_us);
  m.allreduce_layer_us.assign(q.allreduce_layers.size(), std::numeric_limits<double>::quiet_NaN());
  m.allreduce_layer_us[0] = 6.0;                // 3 + 3
  m.allreduce_layer_us.back() = 10.0;           // 5 + 5
  const Calibration cal = build_calibration(q, m, {t});
  for (std::size_t c : twin.contexts)
    EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[c].key), 4.0);
}
