// calibrate on batch x tree traces: the request carries the traces' verify trees (and the
// designed grid's), so that the replay's programs find the mask words of every tree-mask
// attention op they measure; an op whose tree no trace gives is refused before any GPU work.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "calibration/calibration_plan.hpp"
#include "calibration/designed_grid.hpp"
#include "core/errors.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "model/speculative_flags.hpp"

using namespace eaglesim;

namespace {

Trace tree_trace(int batch, int steps, int topk, int tokens) {
  GenOptions o;
  o.tp = 1;
  o.batch = batch;
  o.kv_len = 2048;
  SpeculativeFlags f;
  f.num_steps = steps;
  f.eagle_topk = topk;
  f.num_draft_tokens = tokens;
  o.speculative = resolve_speculative_flags(f).config;
  return generate_trace(read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-8b.json"), o);
}

std::size_t tree_ops(const CalibrationRequest& q) {
  std::size_t n = 0;
  for (const Op& op : q.compute) n += op.kind == OpKind::attention && op.mask == AttentionMask::tree;
  for (const ComputeLayerCase& c : q.compute_layers)
    for (const Op& op : c.ops) n += op.kind == OpKind::attention && op.mask == AttentionMask::tree;
  return n;
}

}  // namespace

TEST(CalibrationTrees, RequestCarriesTheTraceTree) {
  const Trace t = tree_trace(8, 5, 4, 8);
  ASSERT_TRUE(t.meta.speculative);
  const CalibrationRequest q = plan_calibration({t}, CalibrationPlanOptions{});
  EXPECT_GT(tree_ops(q), 0u);
  ASSERT_EQ(q.verify_trees.size(), 1u);
  EXPECT_EQ(q.verify_trees[0], t.meta.speculative->parents);
  EXPECT_NO_THROW(check_tree_masks(q));
}

TEST(CalibrationTrees, TreesOfSeveralTracesAndTheGridOncePerTokenCount) {
  const Trace a = tree_trace(8, 5, 4, 8), b = tree_trace(32, 6, 8, 32), chain = tree_trace(1, 3, 1, 4);
  CalibrationPlanOptions po;
  po.grid = designed_grid({a}, GridDensity::coarse);
  const CalibrationRequest q = plan_calibration({a, b, chain}, po);
  ASSERT_EQ(q.verify_trees.size(), 2u);  // 8 and 32 tokens; the chain has none; the grid's are the same sizes
  EXPECT_EQ(q.verify_trees[0], a.meta.speculative->parents);
  EXPECT_EQ(q.verify_trees[1], b.meta.speculative->parents);
  EXPECT_NO_THROW(check_tree_masks(q));
}

TEST(CalibrationTrees, ATreeOpWithoutItsTreeIsRefused) {
  CalibrationRequest q = plan_calibration({tree_trace(8, 5, 4, 8)}, CalibrationPlanOptions{});
  q.verify_trees.clear();
  try {
    check_tree_masks(q);
    ADD_FAILURE() << "accepted a tree mask without its tree";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tree mask over 8 query tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("meta.speculative.parents"), std::string::npos) << msg;
  }
}
