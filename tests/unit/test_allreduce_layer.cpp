// Allreduces calibrated in a whole decoder layer: which (strategy, layer) replays calibrate asks
// the GPUs for, the chain of layer copies it replays (engine/layer_chain), and how what the
// allreduces add to a layer rescales that layer's context entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration/layer_chain.hpp"
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
  EXPECT_DOUBLE_EQ(layer_context_sum(layer, m), 16.0);
  const Calibration cal = build_calibration(q, m, {t});
  EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[layer.contexts[0]].key), 5.0);
  EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[layer.contexts[1]].key), 3.0);
  // Entries of layers not measured (NaN) keep their context-chain value.
  for (std::size_t i = 0; i < q.allreduce_contexts.size(); ++i)
    if (i != layer.contexts[0] && i != layer.contexts[1])
      EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[i].key), 9.0) << q.allreduce_contexts[i].key;

  // A layer whose context entries were not all measured is not used to scale.
  context_us[layer.contexts[1]] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(layer_context_sum(layer, with_contexts(q, context_us))));
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

TEST(AllreduceLayer, ChainDropsEveryCopysAllreducesAndOnlyThem) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"nccl"});
  ASSERT_FALSE(q.allreduce_layers.empty());
  const AllreduceLayerCase& layer = q.allreduce_layers[0];
  const std::size_t n = layer.layer_size;
  const LayerChain chain = layer_chain(layer, 3);
  ASSERT_EQ(chain.ops.size(), 3 * n);  // no tail without fusion
  ASSERT_EQ(chain.with.size(), chain.ops.size());
  for (std::size_t j = 0; j < chain.ops.size(); ++j) {
    EXPECT_EQ(chain.with[j], j);
    EXPECT_EQ(chain.ops[j].kind, layer.ops[j % n].kind) << j;  // copy after copy
  }
  // The baseline is every op but the 3 x 2 allreduces, in order.
  ASSERT_EQ(chain.without.size(), 3 * n - 3 * layer.contexts.size());
  for (std::size_t j : chain.without) EXPECT_FALSE(chain.ops[j].is_comm()) << j;
  EXPECT_TRUE(std::is_sorted(chain.without.begin(), chain.without.end()));
  EXPECT_TRUE(chain.absorbed.empty());
  EXPECT_THROW(layer_chain(layer, 0), std::invalid_argument);
  AllreduceLayerCase bad = layer;
  bad.dropped.push_back(bad.ops.size());
  EXPECT_THROW(layer_chain(bad, 2), std::invalid_argument);
}

TEST(AllreduceLayer, FusedChainLetsEachCopyAbsorbTheNextCopysInputNorm) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"fused"});
  ASSERT_FALSE(q.allreduce_layers.empty());
  const AllreduceLayerCase& layer = q.allreduce_layers[0];
  const std::size_t n = layer.layer_size;
  const LayerChain chain = layer_chain(layer, 4);
  ASSERT_EQ(chain.ops.size(), 4 * n + 1);  // the tail: the next layer's input norm
  EXPECT_EQ(chain.ops.back().kind, OpKind::rmsnorm);
  // Copy 0's input norm has no allreduce before it: it runs in both chains. Copies 1..3's, and
  // the tail, are absorbed by the allreduce before them, so only the chain with them runs them.
  EXPECT_EQ(chain.without.front(), 0u);
  EXPECT_EQ(chain.ops[0].kind, OpKind::rmsnorm);
  for (std::size_t c = 1; c <= 4; ++c)
    EXPECT_NE(std::find(chain.absorbed.begin(), chain.absorbed.end(), c * n), chain.absorbed.end()) << "copy " << c;
  // Each absorbed op is a residual add or RMSNorm right after an allreduce (or after the add
  // right after one), so a fused kernel can take it.
  for (std::size_t j : chain.absorbed) {
    ASSERT_GE(j, 1u);
    const bool after_ar = chain.ops[j - 1].is_comm() || (j >= 2 && chain.ops[j - 2].is_comm());
    EXPECT_TRUE(after_ar) << j;
    EXPECT_TRUE(chain.ops[j].kind == OpKind::residual_add || chain.ops[j].kind == OpKind::rmsnorm) << j;
  }
  // The baseline has no allreduce and none of the absorbed ops.
  ASSERT_EQ(chain.without.size() + chain.absorbed.size() + 4 * layer.contexts.size(), chain.ops.size());
}

TEST(AllreduceLayer, CopiesRotateTheWeightsPastL2AtLeastTwice) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"nccl"});
  const AllreduceLayerCase& layer = q.allreduce_layers.at(0);
  double weights = 0;
  for (std::size_t j = 0; j < layer.layer_size; ++j) weights += layer.ops[j].weight_bytes();
  ASSERT_GT(weights, 0);
  EXPECT_EQ(layer_chain_copies(layer, 1 << 20), 8);             // a small L2: the floor
  EXPECT_EQ(layer_chain_copies(layer, 20 * weights), 32);       // a huge one: the cap
  EXPECT_EQ(layer_chain_copies(layer, 5.2 * weights), 11);      // ceil(2 x 5.2 layers' worth)
}

TEST(AllreduceLayer, RepeatedChainRunsTheCopiesTwiceThenTheTail) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"fused"});
  ASSERT_FALSE(q.allreduce_layers.empty());
  const AllreduceLayerCase& layer = q.allreduce_layers[0];
  const std::size_t n = layer.layer_size, copies = 3, core = copies * n;
  const LayerChain once = layer_chain(layer, static_cast<int>(copies));
  const LayerChain twice = repeated(once, core);
  EXPECT_EQ(twice.ops.size(), once.ops.size());  // the same program ops
  EXPECT_EQ(twice.absorbed, once.absorbed);
  for (const auto& [a, b] : {std::pair{&once.with, &twice.with}, std::pair{&once.without, &twice.without}}) {
    std::vector<std::size_t> core_part, tail_part;
    for (std::size_t i : *a) (i < core ? core_part : tail_part).push_back(i);
    std::vector<std::size_t> expect = core_part;
    expect.insert(expect.end(), core_part.begin(), core_part.end());
    expect.insert(expect.end(), tail_part.begin(), tail_part.end());
    EXPECT_EQ(*b, expect);
    EXPECT_FALSE(tail_part.empty() && a == &once.with) << "fused: the tail (next layer's norm) ends the chain";
  }
  // The baseline's extra length is exactly one more run of its copies: the difference of the two
  // lengths counts each op of a copy once per copy.
  EXPECT_EQ(twice.with.size() - once.with.size(), static_cast<std::size_t>(std::count_if(
                                                       once.with.begin(), once.with.end(), [&](std::size_t i) { return i < core; })));
}
