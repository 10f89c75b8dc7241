// What each part of a cycle costs, from hand-set step times: the forwards are their steps less
// the per-cycle ops in them, the per-cycle ops are summed over every run of their step, and the
// parts add up to the cycle derive_strategy_metrics computes.
#include <gtest/gtest.h>

#include "domain/cycle_parts.hpp"
#include "domain/spec_decode_metrics.hpp"

namespace eaglesim {
namespace {

StepResult step_of(double us, std::initializer_list<std::pair<OpKind, double>> kinds = {}) {
  StepResult s;
  s.step_us = us;
  for (auto [k, v] : kinds) s.kind_us[static_cast<std::size_t>(k)] = v;
  return s;
}

TEST(CycleParts, EngineCycleSplitsIntoItsParts) {
  StrategyResult r;
  r.verify = step_of(1000, {{OpKind::tree_build, 10}, {OpKind::sampling, 20}, {OpKind::host_sync, 7}, {OpKind::gemm, 900}});
  r.draft_extend = step_of(120, {{OpKind::topk_select, 5}});
  r.draft = step_of(30, {{OpKind::topk_select, 4}});
  r.decode = step_of(400, {{OpKind::sampling, 3}, {OpKind::host_sync, 7}});
  derive_strategy_metrics(r, {Acceptance::Mode::length, 2.5}, 4, 8, 1);
  ASSERT_EQ(r.draft_forwards, 3);  // N = 4 beside the draft-extend pass
  const CycleParts p = cycle_parts(r);
  EXPECT_DOUBLE_EQ(p.draft_extend_us, 115);
  EXPECT_EQ(p.draft_forwards, 3);
  EXPECT_DOUBLE_EQ(p.draft_forward_us, 26);
  EXPECT_DOUBLE_EQ(p.topk_select_us, 5 + 3 * 4);
  EXPECT_DOUBLE_EQ(p.tree_build_us, 10);
  EXPECT_DOUBLE_EQ(p.verify_forward_us, 963);
  EXPECT_DOUBLE_EQ(p.sampling_us, 20);
  EXPECT_DOUBLE_EQ(p.host_sync_us, 7);
  EXPECT_DOUBLE_EQ(p.per_cycle_ops_us(), 17 + 10 + 20 + 7);
  EXPECT_DOUBLE_EQ(r.cycle_us, 120 + 3 * 30 + 1000);
  EXPECT_DOUBLE_EQ(p.total_us(), r.cycle_us);
  EXPECT_TRUE(has_engine_cycle(r));

  const DecodeParts d = decode_parts(r);
  EXPECT_DOUBLE_EQ(d.forward_us, 390);
  EXPECT_DOUBLE_EQ(d.sampling_us, 3);
  EXPECT_DOUBLE_EQ(d.host_sync_us, 7);
}

TEST(CycleParts, ForwardsAloneAreTheDraftAndVerifySteps) {
  StrategyResult r;
  r.verify = step_of(2000, {{OpKind::gemm, 1500}, {OpKind::allreduce, 500}});
  r.draft = step_of(100);
  r.decode = step_of(1000);
  derive_strategy_metrics(r, {Acceptance::Mode::length, 2.5}, 3);
  const CycleParts p = cycle_parts(r);
  EXPECT_EQ(p.draft_forwards, 3);
  EXPECT_DOUBLE_EQ(p.draft_forward_us, 100);
  EXPECT_DOUBLE_EQ(p.draft_extend_us, 0);
  EXPECT_DOUBLE_EQ(p.verify_forward_us, 2000);
  EXPECT_DOUBLE_EQ(p.per_cycle_ops_us(), 0);
  EXPECT_DOUBLE_EQ(p.total_us(), r.cycle_us);
  EXPECT_FALSE(has_engine_cycle(r));
}

TEST(CycleParts, NoDraftStepMeansNoDraftForwards) {
  StrategyResult r;
  r.verify = step_of(2000);
  derive_strategy_metrics(r, {Acceptance::Mode::length, 2.5}, 3);
  const CycleParts p = cycle_parts(r);
  EXPECT_EQ(p.draft_forwards, 0);
  EXPECT_DOUBLE_EQ(p.total_us(), r.cycle_us);
  EXPECT_DOUBLE_EQ(decode_parts(r).forward_us, 0);
}

TEST(CycleParts, UnsupportedResultHasNoParts) {
  StrategyResult r;
  r.supported = false;
  r.verify = step_of(2000, {{OpKind::host_sync, 7}});
  EXPECT_DOUBLE_EQ(cycle_parts(r).total_us(), 0);
  EXPECT_FALSE(has_engine_cycle(r));
}

}  // namespace
}  // namespace eaglesim
