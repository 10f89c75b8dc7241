// The resolution rule: which input gives tokens per cycle, what the report is told, and that a
// plain rate or length on a chain reaches the report exactly as without the rule.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "domain/acceptance_resolution.hpp"
#include "domain/spec_decode_metrics.hpp"

namespace eaglesim {
namespace {

const std::string kData = EAGLESIM_TEST_DATA;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(AcceptanceResolution, PlainRateOnAChainIsTheChainFormula) {
  AcceptanceInputs in;
  in.accept_rate = 0.7;
  const ResolvedAcceptance r = resolve_acceptance(chain_config(3), in);
  EXPECT_EQ(r.tokens_per_cycle, chain_tokens_per_cycle(0.7, 3));
  EXPECT_EQ(r.source.kind, AcceptanceSource::Kind::tree_model);
  EXPECT_FALSE(r.default_rate);
  EXPECT_EQ(r.source.description, "accept rate a=0.70 per position (chain), E=2.53 for N=3");
  const Acceptance report = r.report_acceptance();
  EXPECT_EQ(report.mode, Acceptance::Mode::rate);
  EXPECT_EQ(report.value, 0.7);
  EXPECT_FALSE(report.source) << "a plain rate on a chain reads as before";
}

TEST(AcceptanceResolution, DefaultRateIsSaid) {
  AcceptanceInputs in;
  in.default_rate = 0.6;
  const ResolvedAcceptance r = resolve_acceptance(chain_config(2), in);
  EXPECT_TRUE(r.default_rate);
  EXPECT_EQ(r.tokens_per_cycle, chain_tokens_per_cycle(0.6, 2));
}

TEST(AcceptanceResolution, PlainLengthOnAChain) {
  AcceptanceInputs in;
  in.accept_len = 2.5;
  const ResolvedAcceptance r = resolve_acceptance(chain_config(3), in);
  EXPECT_EQ(r.tokens_per_cycle, 2.5);
  EXPECT_EQ(r.source.kind, AcceptanceSource::Kind::measured_flag);
  EXPECT_EQ(r.source.description, "mean accepted length E=2.50 tokens per cycle (given, N=3)");
  EXPECT_FALSE(r.report_acceptance().source);
  in.accept_len = 4.5;
  try {
    resolve_acceptance(chain_config(3), in);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "accept_len: expected a mean accepted length in [1, N+1] = [1, 4] for N=3")) << e.what();
  }
}

TEST(AcceptanceResolution, LengthOnATreeIsBoundedByItsDepth) {
  AcceptanceInputs in;
  in.accept_len = 3.4;
  const ResolvedAcceptance r = resolve_acceptance({5, 4, 8}, in);
  EXPECT_EQ(r.source.description, "measured accept len E=3.40 (accept_len) for num_steps 5, eagle_topk 4, num_draft_tokens 8");
  ASSERT_TRUE(r.report_acceptance().source);
  in.accept_len = 3.5;
  EXPECT_THROW(resolve_acceptance({2, 4, 8}, in), InputError) << "two steps deep: at most 3 tokens a cycle";
}

TEST(AcceptanceResolution, TableEntryWinsOverTheModel) {
  const AcceptanceTable table = read_acceptance_table(kData + "/acceptance/measured.json");
  AcceptanceInputs in;
  in.table = &table;
  in.batch = 1;
  in.accept_rate = 0.9;  // only for configurations the table lacks
  const ResolvedAcceptance r = resolve_acceptance(chain_config(3), in);
  EXPECT_EQ(r.tokens_per_cycle, 2.8);
  EXPECT_EQ(r.source.kind, AcceptanceSource::Kind::measured_table);
  EXPECT_EQ(r.source.table_entry, 0u);
  EXPECT_EQ(r.source.batch_match, "exact");
  EXPECT_EQ(r.source.description, "measured accept len E=2.80 from " + table.file +
                                      " entries[0] (num_steps 3, eagle_topk 1, num_draft_tokens 4, batch 1: "
                                      "sglang decode log, batch 1)");
  const Acceptance report = r.report_acceptance();
  EXPECT_EQ(report.mode, Acceptance::Mode::length);
  EXPECT_EQ(report.value, 2.8);
  ASSERT_TRUE(report.source);
  EXPECT_EQ(report.describe(3), r.source.description);
  EXPECT_EQ(report.tokens_per_cycle(3), 2.8);
}

TEST(AcceptanceResolution, NearestBatchIsSaid) {
  const AcceptanceTable table = read_acceptance_table(kData + "/acceptance/measured.json");
  AcceptanceInputs in;
  in.table = &table;
  in.batch = 6;
  const ResolvedAcceptance r = resolve_acceptance(chain_config(3), in);
  EXPECT_EQ(r.tokens_per_cycle, 2.6);
  EXPECT_TRUE(contains(r.source.description, "batch 8, the nearest measured to batch 6")) << r.source.description;
  EXPECT_FALSE(r.default_rate);
}

TEST(AcceptanceResolution, TableWithoutTheConfigurationFallsBackToTheModel) {
  const AcceptanceTable table = read_acceptance_table(kData + "/acceptance/other_configs.json");
  AcceptanceInputs in;
  in.table = &table;
  in.batch = 1;
  in.accept_rate = 0.7;
  const ResolvedAcceptance r = resolve_acceptance(chain_config(3), in);
  EXPECT_EQ(r.tokens_per_cycle, chain_tokens_per_cycle(0.7, 3));
  EXPECT_EQ(r.source.kind, AcceptanceSource::Kind::tree_model);
  EXPECT_EQ(r.source.unmatched_table, table.file);
  EXPECT_EQ(r.source.description, "tree model from accept rate a=0.70 per position (chain), num_steps 3, eagle_topk 1, "
                                  "num_draft_tokens 4: E=2.53; " +
                                      table.file + " has no entry for num_steps 3, eagle_topk 1, num_draft_tokens 4");
  EXPECT_TRUE(r.report_acceptance().source) << "the report says the table had no entry";
  EXPECT_EQ(r.source.tree_parents, (std::vector<int>{-1, 0, 1, 2}));
}

TEST(AcceptanceResolution, TreeModelForATree) {
  AcceptanceInputs in;
  in.accept_rate = 0.7;
  const ResolvedAcceptance r = resolve_acceptance({5, 4, 8}, in);
  EXPECT_EQ(r.tokens_per_cycle, tree_tokens_per_cycle(0.7, {5, 4, 8}));
  EXPECT_GT(r.tokens_per_cycle, chain_tokens_per_cycle(0.7, 5));
  EXPECT_TRUE(contains(r.source.description, "tree model from accept rate a=0.70 per position, q(r) = a(1-a)^(r-1), "
                                             "num_steps 5, eagle_topk 4, num_draft_tokens 8: E="))
      << r.source.description;
  EXPECT_EQ(r.source.tree_parents.size(), 8u);
  ASSERT_TRUE(r.report_acceptance().source) << "a tree is never the plain chain";
}

TEST(AcceptanceResolution, PerRankProbabilities) {
  AcceptanceInputs in;
  in.rank_probabilities = RankAcceptance({{0.6}}, "--accept-probs");
  in.accept_rate = 0.9;  // the explicit probabilities come first
  const ResolvedAcceptance r = resolve_acceptance(chain_config(3), in);
  EXPECT_NEAR(r.tokens_per_cycle, 1 + 0.6 + 0.36 + 0.216, 1e-15);
  EXPECT_EQ(r.source.rank_probabilities, "0.6");
  EXPECT_FALSE(r.source.rate);
  EXPECT_TRUE(contains(r.source.description, "tree model from per-rank acceptance 0.6 (accept_probs)"));
  EXPECT_TRUE(r.report_acceptance().source);
}

TEST(AcceptanceResolution, MeasuredLengthComesFirst) {
  const AcceptanceTable table = read_acceptance_table(kData + "/acceptance/measured.json");
  AcceptanceInputs in;
  in.table = &table;
  in.accept_len = 3.0;
  EXPECT_EQ(resolve_acceptance(chain_config(3), in).tokens_per_cycle, 3.0);
}

TEST(AcceptanceResolution, BreakEvenOfATreeUsesTheTreeModel) {
  AcceptanceInputs in;
  in.accept_rate = 0.7;
  const SpecConfig tree{5, 4, 8};
  const Acceptance acc = resolve_acceptance(tree, in).report_acceptance();
  StrategyResult r;
  r.verify.step_us = 1000;
  r.decode = StepResult{};
  r.decode->step_us = 400;
  derive_strategy_metrics(r, acc, 7);
  EXPECT_DOUBLE_EQ(r.breakeven_accept_len, 2.5);
  ASSERT_TRUE(r.breakeven_accept_rate);
  EXPECT_NEAR(tree_tokens_per_cycle(*r.breakeven_accept_rate, tree), 2.5, 1e-9);
  EXPECT_DOUBLE_EQ(r.tokens_per_cycle, tree_tokens_per_cycle(0.7, tree));
}

}  // namespace
}  // namespace eaglesim
