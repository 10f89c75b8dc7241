// The sweep's batch and speculative-configuration axes: the grid's arithmetic with them, SGLang's
// rules applied per combination (skipped, counted, never fatal unless nothing is left), the best
// configuration per batch on hand-made rows, and the memory of B requests' KV cache.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/errors.hpp"
#include "domain/tree_acceptance.hpp"
#include "model/model_config.hpp"
#include "sweep/batch_best.hpp"
#include "sweep/memory_check.hpp"
#include "sweep/spec_axis.hpp"
#include "sweep/sweep_grid.hpp"
#include "sweep/tree_breakeven.hpp"

using namespace eaglesim;

TEST(SweepBatchGrid, RowsAndPointsAreInverseWithTheNewAxes) {
  const SweepGrid g(2, 3, 2, 4, 5, 6, 7, 3);
  EXPECT_EQ(g.rows(), 2u * 3 * 2 * 4 * 5 * 6 * 7 * 3);
  std::set<std::size_t> seen;
  for (std::size_t i = 0; i < g.rows(); ++i) {
    const GridPoint p = g.point(i);
    ASSERT_EQ(g.row(p), i);
    seen.insert(i);
  }
  EXPECT_EQ(seen.size(), g.rows());
  // Acceptance fastest, then strategy, configuration, batch, TP, dtype, topology, model.
  GridPoint p;
  p.batch = 1;
  EXPECT_EQ(g.row(p), 6u * 7 * 3);
  p = {};
  p.spec = 1;
  EXPECT_EQ(g.row(p), 7u * 3);
  p = {};
  p.layout = 1;
  EXPECT_EQ(g.row(p), 5u * 6 * 7 * 3);
  EXPECT_EQ(g.fits(), 2u * 3 * 2 * 4 * 5);
  EXPECT_EQ(g.fit(1, 2, 1, 3, 4), g.fits() - 1);
  EXPECT_EQ(g.fit(0, 0, 0, 0, 1), 1u);
  EXPECT_EQ(g.traces(), 2u * 2 * 4 * 5 * 6);
  EXPECT_EQ(g.trace(1, 1, 3, 4, 5), g.traces() - 1);
  EXPECT_EQ(g.trace(0, 0, 0, 1, 0), 6u);
  const RowRange block = g.model_topology_rows(1, 2);
  EXPECT_EQ(block.last, g.rows());
  EXPECT_EQ(block.last - block.first, 2u * 4 * 5 * 6 * 7 * 3);
  EXPECT_EQ(g.point(block.first).model, 1u);
  EXPECT_EQ(g.point(block.first).topology, 2u);
}

TEST(SweepSpecAxis, InvalidCombinationsAreSkippedWithTheReason) {
  SpecAxisLists l;
  l.num_steps = {1, 3};
  l.eagle_topk = {1, 4};
  l.num_draft_tokens = {4, 8};
  const SpecAxis a = build_spec_axis(l);
  // topk 1: the chains (1,1,2) and (3,1,4) as SGLang runs them; (1,1,4), (1,1,8) and (3,1,8) skipped.
  // topk 4: (1,4,4) fits 1 + 4 candidates; (1,4,8) does not; (3,4,4) and (3,4,8) do.
  const std::vector<SpecConfig> want = {{1, 1, 2}, {1, 4, 4}, {3, 1, 4}, {3, 4, 4}, {3, 4, 8}};
  ASSERT_EQ(a.configs.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(a.configs[i], want[i]) << short_spec(a.configs[i]);
  ASSERT_EQ(a.skipped.size(), 4u);
  std::set<std::string> skipped;
  for (const SkippedSpecConfig& s : a.skipped) skipped.insert(short_spec(s.config));
  EXPECT_EQ(skipped, (std::set<std::string>{"1/1/4", "1/1/8", "3/1/8", "1/4/8"}));
  for (const SkippedSpecConfig& s : a.skipped) {
    EXPECT_EQ(s.reason.rfind("num_draft_tokens: expected", 0), 0u) << s.reason;
    if (s.config.eagle_topk == 4) EXPECT_NE(s.reason.find("= 5"), std::string::npos) << s.reason;
  }
}

TEST(SweepSpecAxis, ChainsOfDraftTokensJoinWithoutDuplicates) {
  SpecAxisLists l;
  l.chain_draft_tokens = {2, 3};
  l.num_steps = {3};
  const SpecAxis a = build_spec_axis(l);
  ASSERT_EQ(a.configs.size(), 2u);
  EXPECT_EQ(a.configs[0], chain_config(2));
  EXPECT_EQ(a.configs[1], (SpecConfig{3, 1, 4}));
  EXPECT_TRUE(a.skipped.empty());
}

TEST(SweepSpecAxis, NothingValidOrMissingListsAreInputErrorsNamingTheFlag) {
  SpecAxisLists none;
  none.num_steps = {1};
  none.eagle_topk = {8};
  none.num_draft_tokens = {16, 32};  // 1 + 8 candidates at most
  try {
    build_spec_axis(none);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("speculative_num_draft_tokens: no valid", 0), 0u) << m;
    EXPECT_NE(m.find("1/8/16"), std::string::npos) << m;
  }
  SpecAxisLists no_steps;
  no_steps.eagle_topk = {4};
  EXPECT_THROW(build_spec_axis(no_steps), InputError);
  SpecAxisLists no_tokens;
  no_tokens.num_steps = {3};
  no_tokens.eagle_topk = {1, 4};
  try {
    build_spec_axis(no_tokens);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("speculative_num_draft_tokens: required", 0), 0u) << e.what();
  }
}

namespace {

// A priced row with the totals best_per_batch reads.
SweepRow priced(double total, double plain_total, int batch) {
  SweepRow r;
  r.batch = batch;
  r.total_tokens_per_s = total;
  r.decode_us = 1;
  r.decode_total_tokens_per_s = plain_total;
  return r;
}

}  // namespace

TEST(SweepBatchGrid, FitIndicesAndFitPointsAreInverse) {
  const SweepGrid g(2, 3, 2, 4, 5, 6, 7, 3);
  for (std::size_t f = 0; f < g.fits(); ++f) {
    const GridPoint p = g.fit_point(f);
    ASSERT_EQ(g.fit(p.model, p.topology, p.dtype, p.layout, p.batch), f);
    EXPECT_EQ(p.spec + p.strategy + p.acceptance, 0u);
  }
  // The first row of a fit's block is the fit's point with every later coordinate 0.
  const GridPoint last = g.fit_point(g.fits() - 1);
  EXPECT_EQ(g.row(last), g.rows() - 6u * 7 * 3);
}

TEST(SweepBatchBest, PicksTheHighestTotalPerBatchAndWhereSpeculationStopsPaying) {
  // One model, one topology, TP, dtype; batches 1, 8, 64; two configurations; strategies
  // fast + lower bound; one acceptance.
  const SweepGrid g(1, 1, 1, 1, 3, 2, 2, 1);
  const std::vector<int> batches = {1, 8, 64};
  const std::vector<bool> deployable = {true, false};
  std::vector<SweepRow> rows(g.rows());
  auto at = [&](std::size_t b, std::size_t c, std::size_t s) -> SweepRow& {
    GridPoint p;
    p.batch = b, p.spec = c, p.strategy = s;
    return rows[g.row(p)];
  };
  // batch 1: config 1 wins (300 > 200), plain 100 -> pays 3x.
  at(0, 0, 0) = priced(200, 100, 1);
  at(0, 1, 0) = priced(300, 100, 1);
  at(0, 0, 1) = priced(900, 500, 1);  // a lower bound: neither best nor plain
  at(0, 1, 1) = priced(900, 500, 1);
  // batch 8: config 0 wins at 700 against plain 600 (its own row's 600, the other's 400).
  at(1, 0, 0) = priced(700, 600, 8);
  at(1, 1, 0) = priced(650, 400, 8);
  at(1, 0, 1) = priced(9000, 9000, 8);
  at(1, 1, 1) = priced(9000, 9000, 8);
  // batch 64: nothing beats plain 2000.
  at(2, 0, 0) = priced(1900, 2000, 64);
  at(2, 1, 0) = priced(1500, 2000, 64);
  at(2, 0, 1) = priced(9000, 9000, 64);
  at(2, 1, 1).unfit = UnfitKind::memory;

  auto speeds = [&] {
    std::vector<RowSpeeds> out;
    for (std::size_t i = 0; i < rows.size(); ++i) out.push_back(RowSpeeds::of(rows[i], deployable[g.point(i).strategy]));
    return out;
  };
  const BatchVerdicts v = best_per_batch(g, batches, speeds());
  ASSERT_EQ(v.best.size(), 3u);
  EXPECT_EQ(v.best[0].batch, 1);
  EXPECT_EQ(*v.best[0].row, g.row([] { GridPoint p; p.spec = 1; return p; }()));
  EXPECT_DOUBLE_EQ(v.best[0].plain_total_tokens_per_s, 100);
  EXPECT_DOUBLE_EQ(v.best[0].speedup_vs_plain, 3.0);
  EXPECT_TRUE(v.best[0].pays());
  EXPECT_EQ(v.best[1].batch, 8);
  EXPECT_DOUBLE_EQ(rows[*v.best[1].row].total_tokens_per_s, 700);
  EXPECT_DOUBLE_EQ(v.best[1].plain_total_tokens_per_s, 600);
  EXPECT_NEAR(v.best[1].speedup_vs_plain, 700.0 / 600, 1e-12);
  EXPECT_DOUBLE_EQ(rows[*v.best[2].row].total_tokens_per_s, 1900);
  EXPECT_FALSE(v.best[2].pays());
  ASSERT_EQ(v.limits.size(), 1u);
  EXPECT_EQ(v.limits[0].batches_run, 3);
  ASSERT_TRUE(v.limits[0].stops_at_batch);
  EXPECT_EQ(*v.limits[0].stops_at_batch, 64);

  // Paying everywhere: no limit.
  at(2, 0, 0) = priced(2100, 2000, 64);
  const BatchVerdicts all = best_per_batch(g, batches, speeds());
  EXPECT_FALSE(all.limits[0].stops_at_batch);
  EXPECT_EQ(all.limits[0].batches_run, 3);
}

TEST(SweepBatchMemory, BRequestsKvOfTargetAndHeadAddUp) {
  // Llama-3.1-70B: 80 layers x K and V x 8 KV heads x 128 x 2 B = 327,680 B per position, /2 at TP2.
  const ModelConfig m = read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-70b.json");
  const ModelConfig head = read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/llama-3.1-70b-eagle3.json");
  const double head_per_position = kv_cache_bytes_per_token_per_rank(head, 2);
  const MemoryNeed one = memory_needed(m, &head, 2, DType::bf16, 4096);
  const MemoryNeed b32 = memory_needed(m, &head, 2, DType::bf16, 4096, 32);
  EXPECT_EQ(b32.requests, 32);
  EXPECT_EQ(b32.kv_tokens, 32 * 4096);
  EXPECT_DOUBLE_EQ(b32.weight_bytes, one.weight_bytes);
  EXPECT_DOUBLE_EQ(b32.draft_weight_bytes, one.draft_weight_bytes);
  EXPECT_NEAR(b32.kv_bytes, (163840.0 + head_per_position) * 32 * 4096, 1);
  EXPECT_NEAR(b32.draft_kv_bytes, head_per_position * 32 * 4096, 1);
  // Ragged: 512 + 4096 + 16384 positions.
  const MemoryNeed ragged = memory_needed(m, nullptr, 2, DType::bf16, std::vector<std::int64_t>{512, 4096, 16384});
  EXPECT_NEAR(ragged.kv_bytes, 163840.0 * (512 + 4096 + 16384), 1);
  // Target only, TP2: one request of 4096 needs 70.55 GB of weights + 0.67 GB KV, under 72 usable
  // of 80 GB; 32 requests add 32 x 0.67 = 21.5 GB and do not fit.
  GpuSpec gpu;
  gpu.name = "H100-80GB";
  gpu.mem_gb = 80;
  EXPECT_TRUE(check_memory(memory_needed(m, nullptr, 2, DType::bf16, 4096), gpu, 0.9).fits);  // 71.22 GB
  const MemoryVerdict v = check_memory(memory_needed(m, nullptr, 2, DType::bf16, 4096, 32), gpu, 0.9);
  EXPECT_FALSE(v.fits);
  EXPECT_NE(v.reason.find("for 32 requests, 131072 positions"), std::string::npos) << v.reason;
}

TEST(SweepTreeBreakeven, TheCurveIsTheDomainsTreeModel) {
  // Every SGLang-valid configuration up to 6 steps, topk 8, 32 draft tokens, against the model
  // that builds the tree (tree_tokens_per_cycle) and its bisection (tree_accept_rate_for_tokens).
  int checked = 0;
  for (int s = 1; s <= 6; ++s)
    for (int k : {1, 2, 3, 4, 8})
      for (int d : {2, 3, 4, 6, 8, 12, 16, 32}) {
        const SpecConfig c{s, k, d};
        if (engine_config_problem(c)) continue;
        const TreeBreakevenCurve curve(c);
        for (double a : {0.0, 0.05, 0.3, 0.5, 0.61, 0.7, 0.85, 0.99, 1.0})
          ASSERT_NEAR(curve.tokens_at(a), tree_tokens_per_cycle(a, c), 1e-12) << short_spec(c) << " a=" << a;
        for (double e : {0.5, 1.0, 1.3, 2.0, 2.7, 3.5, 6.5}) {
          const auto want = tree_accept_rate_for_tokens(e, c);
          const auto got = curve.rate_for_tokens(e);
          ASSERT_EQ(want.has_value(), got.has_value()) << short_spec(c) << " E=" << e;
          if (want) ASSERT_NEAR(*got, *want, 1e-9) << short_spec(c) << " E=" << e;
        }
        ++checked;
      }
  EXPECT_GT(checked, 60);
}
