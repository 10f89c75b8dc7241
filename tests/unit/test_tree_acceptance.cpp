// The tree acceptance model against hand-computed trees, its exact reduction to the chain
// formula at eagle_topk 1, the tree it selects, monotonicity and its inverse.
#include <gtest/gtest.h>

#include <vector>

#include "core/errors.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "domain/tree_acceptance.hpp"
#include "trace/eagle_tree.hpp"

namespace eaglesim {
namespace {

TEST(TreeAcceptance, OneStepTwoCandidates) {
  // K=2, S=1, D=3 at a=0.5: q = 0.5, 0.25; both children of the root are verified.
  const TreeAcceptance t = tree_acceptance({1, 2, 3}, RankAcceptance::from_chain_rate(0.5, 2));
  EXPECT_DOUBLE_EQ(t.tokens_per_cycle, 1.75);
  EXPECT_EQ(t.tree.parents, (std::vector<int>{-1, 0, 0}));
  EXPECT_EQ(t.tree.rank, (std::vector<int>{0, 1, 2}));
}

TEST(TreeAcceptance, TwoStepsThreeTokensPicksDepthOrWidth) {
  // K=2, S=2, D=3. At a=0.6, q = 0.6, 0.24: the grandchild 0.36 beats the sibling 0.24, so the
  // tree is the chain: E = 1 + 0.6 + 0.36.
  TreeAcceptance deep = tree_acceptance({2, 2, 3}, RankAcceptance::from_chain_rate(0.6, 2));
  EXPECT_NEAR(deep.tokens_per_cycle, 1.96, 1e-15);
  EXPECT_EQ(deep.tree.parents, (std::vector<int>{-1, 0, 1}));
  EXPECT_EQ(deep.tree.depth, (std::vector<int>{0, 1, 2}));
  // At a=0.4, q = 0.4, 0.24: the sibling 0.24 beats the grandchild 0.16: E = 1 + 0.4 + 0.24.
  TreeAcceptance wide = tree_acceptance({2, 2, 3}, RankAcceptance::from_chain_rate(0.4, 2));
  EXPECT_NEAR(wide.tokens_per_cycle, 1.64, 1e-15);
  EXPECT_EQ(wide.tree.parents, (std::vector<int>{-1, 0, 0}));
}

TEST(TreeAcceptance, TiesGoToTheEarlierCandidate) {
  // K=2, S=2, D=5 at a=0.5: depth 1 0.5, 0.25; depth 2 (children of the first) 0.25, 0.125,
  // (of the second) 0.125, 0.0625. The second child of the root (0.25) ties the first
  // grandchild and comes first; 0.125 ties go to the first node's second child.
  const TreeAcceptance t = tree_acceptance({2, 2, 5}, RankAcceptance::from_chain_rate(0.5, 2));
  EXPECT_EQ(t.tree.parents, (std::vector<int>{-1, 0, 0, 1, 1}));
  EXPECT_EQ(t.tree.path_probability, (std::vector<double>{1, 0.5, 0.25, 0.25, 0.125}));
  EXPECT_DOUBLE_EQ(t.tokens_per_cycle, 2.125);
}

TEST(TreeAcceptance, OnlyTheTopKOfADepthAreExpanded) {
  // K=2, S=3, D = 1 + K + 2K^2 = 11: every candidate verified. Depth 2 has four candidates
  // (0.25, 0.125 | 0.125, 0.0625); only the best two (the first node's children) get children.
  const TreeAcceptance t = tree_acceptance({3, 2, 11}, RankAcceptance::from_chain_rate(0.5, 2));
  EXPECT_EQ(t.tree.parents, (std::vector<int>{-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(t.tree.depth, (std::vector<int>{0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  // 1 + 0.5 + 0.25 + (0.25 + 0.125 + 0.125 + 0.0625) + (0.125 + 0.0625 + 0.0625 + 0.03125)
  EXPECT_DOUBLE_EQ(t.tokens_per_cycle, 2.59375);
}

TEST(TreeAcceptance, PerDepthProbabilities) {
  // Depth 1: 0.8, 0.1; depth 2: 0.5, 0.3. Candidates 0.8, 0.1 | 0.4, 0.24 | 0.05, 0.03: the
  // three best are the first child and both its children.
  const RankAcceptance q({{0.8, 0.1}, {0.5, 0.3}}, "test");
  const TreeAcceptance t = tree_acceptance({2, 2, 4}, q);
  EXPECT_EQ(t.tree.parents, (std::vector<int>{-1, 0, 1, 1}));
  EXPECT_NEAR(t.tokens_per_cycle, 1 + 0.8 + 0.4 + 0.24, 1e-15);
  // Depths past the last row take the last row; ranks past a row's end have probability 0.
  EXPECT_DOUBLE_EQ(q.at(7, 2), 0.3);
  EXPECT_DOUBLE_EQ(q.at(1, 3), 0.0);
  EXPECT_EQ(q.describe(), "0.8,0.1/0.5,0.3");
}

TEST(TreeAcceptance, ReducesExactlyToTheChainFormula) {
  for (int s = 0; s <= 16; ++s)
    for (int i = 0; i <= 200; ++i) {
      const double a = i / 200.0;
      ASSERT_EQ(tree_tokens_per_cycle(a, chain_config(s)), chain_tokens_per_cycle(a, s)) << "a=" << a << " S=" << s;
    }
  const double odd[] = {0.123456789, 0.7, 0.999999, 1e-9, 0.333};
  for (double a : odd)
    for (int s = 1; s <= 64; s += 7) ASSERT_EQ(tree_tokens_per_cycle(a, chain_config(s)), chain_tokens_per_cycle(a, s));
}

TEST(TreeAcceptance, ChainTreeIsAChain) {
  const DraftTree t = select_draft_tree(chain_config(4), RankAcceptance::from_chain_rate(0.7, 1));
  EXPECT_EQ(t.parents, (std::vector<int>{-1, 0, 1, 2, 3}));
  EXPECT_EQ(t.depth, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(TreeAcceptance, SelectedTreeIsATree) {
  const SpecConfig configs[] = {{5, 4, 8}, {6, 8, 32}, {4, 3, 20}, {8, 10, 60}, {3, 2, 11}};
  for (const SpecConfig& c : configs)
    for (double a : {0.2, 0.5, 0.7, 0.9}) {
      const DraftTree t = select_draft_tree(c, RankAcceptance::from_chain_rate(a, c.eagle_topk));
      ASSERT_EQ(static_cast<int>(t.parents.size()), c.num_draft_tokens) << describe(c);
      for (std::size_t i = 1; i < t.parents.size(); ++i) {
        ASSERT_GE(t.parents[i], 0);
        ASSERT_LT(t.parents[i], static_cast<int>(i));
        ASSERT_EQ(t.depth[i], t.depth[static_cast<std::size_t>(t.parents[i])] + 1);
        ASSERT_LE(t.depth[i], c.num_steps);
        ASSERT_LE(t.path_probability[i], t.path_probability[static_cast<std::size_t>(t.parents[i])]);
      }
    }
}

TEST(TreeAcceptance, ExpectationIsTheSumOfPathProbabilities) {
  const SpecConfig c{6, 8, 32};
  const RankAcceptance q = RankAcceptance::from_chain_rate(0.65, 8);
  const TreeAcceptance t = tree_acceptance(c, q);
  double sum = 0;
  for (double p : t.tree.path_probability) sum += p;  // the root's 1 included
  EXPECT_NEAR(t.tokens_per_cycle, sum, 1e-12);
}

TEST(TreeAcceptance, Limits) {
  // a = 1: the rank-1 path is certain, the rest impossible: E = 1 + min(S, D - 1).
  EXPECT_DOUBLE_EQ(tree_tokens_per_cycle(1.0, {5, 4, 8}), 6.0);
  EXPECT_DOUBLE_EQ(tree_tokens_per_cycle(1.0, {5, 4, 4}), 4.0);
  EXPECT_DOUBLE_EQ(tree_tokens_per_cycle(0.0, {5, 4, 8}), 1.0);
  EXPECT_DOUBLE_EQ(tree_tokens_per_cycle(0.7, {0, 1, 1}), 1.0);  // no speculation
  EXPECT_THROW(tree_tokens_per_cycle(1.1, {5, 4, 8}), InputError);
  EXPECT_THROW(tree_tokens_per_cycle(0.7, {2, 2, 8}), InputError);  // 6 candidates, D - 1 = 7
  EXPECT_THROW(tree_tokens_per_cycle(0.7, {2, 0, 3}), InputError);
}

TEST(TreeAcceptance, MonotoneInRateTokensAndWidth) {
  const SpecConfig configs[] = {{2, 2, 3}, {3, 2, 6}, {5, 4, 8}, {6, 8, 32}, {4, 4, 16}, {8, 10, 60}};
  for (const SpecConfig& c : configs) {
    double prev = 0;
    for (int i = 0; i <= 400; ++i) {
      const double e = tree_tokens_per_cycle(i / 400.0, c);
      ASSERT_GE(e, prev) << describe(c) << " a=" << i / 400.0;
      prev = e;
    }
  }
  for (double a : {0.3, 0.6, 0.8}) {
    double prev = 0;
    for (int d = 2; d <= 1 + 4 + 4 * 16; ++d) {  // S=5, K=4: more tokens never lower E
      const double e = tree_tokens_per_cycle(a, {5, 4, d});
      ASSERT_GE(e, prev) << "D=" << d;
      prev = e;
    }
    prev = 0;
    for (int k = 1; k <= 8; ++k) {  // the wider draft scores a superset of candidates
      const double e = tree_tokens_per_cycle(a, {5, k, 6});
      ASSERT_GE(e, prev) << "K=" << k;
      prev = e;
    }
    EXPECT_GE(tree_tokens_per_cycle(a, {5, 4, 8}), chain_tokens_per_cycle(a, 5));
  }
}

TEST(TreeAcceptance, RankProbabilitiesAreChecked) {
  EXPECT_THROW(RankAcceptance({}, "--accept-probs"), InputError);
  EXPECT_THROW(RankAcceptance({{}}, "--accept-probs"), InputError);
  EXPECT_THROW(RankAcceptance({{0.8, -0.1}}, "--accept-probs"), InputError);
  EXPECT_THROW(RankAcceptance({{0.8, 0.3}}, "--accept-probs"), InputError);
  EXPECT_NO_THROW(RankAcceptance({{0.7, 0.2, 0.1}}, "--accept-probs"));  // 1 up to rounding
  try {
    RankAcceptance({{0.8}, {0.6, 0.5}}, "--accept-probs");
    FAIL() << "accepted a depth adding up to 1.1";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--accept-probs: depth 2: expected probabilities adding up to at most 1"),
              std::string::npos)
        << e.what();
  }
}

TEST(TreeAcceptance, InverseFindsTheRate) {
  const SpecConfig configs[] = {{5, 4, 8}, {6, 8, 32}, {3, 2, 6}};
  for (const SpecConfig& c : configs)
    for (double a : {0.05, 0.31, 0.63, 0.9}) {
      const auto back = tree_accept_rate_for_tokens(tree_tokens_per_cycle(a, c), c);
      ASSERT_TRUE(back.has_value());
      EXPECT_NEAR(*back, a, 1e-9) << describe(c);
    }
  EXPECT_DOUBLE_EQ(*tree_accept_rate_for_tokens(0.9, {5, 4, 8}), 0.0);
  EXPECT_NEAR(*tree_accept_rate_for_tokens(6.0, {5, 4, 8}), 1.0, 1e-12);
  EXPECT_FALSE(tree_accept_rate_for_tokens(6.01, {5, 4, 8}).has_value()) << "beyond 1 + S";
  // At eagle_topk 1 it is the chain's inverse, bit for bit.
  for (double e : {1.2, 1.75, 2.533, 3.9})
    EXPECT_EQ(*tree_accept_rate_for_tokens(e, chain_config(3)), *accept_rate_for_tokens(e, 3));
}

TEST(SpecConfig, EngineRules) {
  EXPECT_FALSE(engine_config_problem({3, 1, 4}));
  EXPECT_FALSE(engine_config_problem({5, 4, 8}));
  EXPECT_FALSE(engine_config_problem({2, 2, 7}));  // 2 + 4 candidates + the root
  EXPECT_EQ(engine_config_problem({2, 2, 8})->field, "num_draft_tokens");
  EXPECT_EQ(engine_config_problem({3, 1, 5})->field, "num_draft_tokens");
  EXPECT_EQ(engine_config_problem({0, 1, 1})->field, "num_steps");
  EXPECT_EQ(engine_config_problem({3, 0, 4})->field, "eagle_topk");
  EXPECT_EQ(engine_config_problem({5, 4, 1})->field, "num_draft_tokens");  // a tree verifies at least one draft
  EXPECT_EQ(max_tokens_per_cycle({5, 4, 8}), 6);
  EXPECT_EQ(max_tokens_per_cycle({5, 4, 4}), 4);
  EXPECT_EQ(draft_candidates(6, 8), 8 + 5 * 64);
  EXPECT_EQ(draft_candidates(0, 8), 0);  // no draft step, no candidates
  EXPECT_TRUE(is_chain(chain_config(3)));
  EXPECT_EQ(describe(SpecConfig{5, 4, 8}), "num_steps 5, eagle_topk 4, num_draft_tokens 8");
}

}  // namespace

// The model and the trace select their trees with one function (trace/eagle_tree_selection.hpp):
// at the default decay with a = 0.7 the drafts score as the trace's assumed probabilities do, so
// on configurations without ties the model's tree is the one gen writes into the trace.
TEST(TreeAcceptance, DefaultDecayTreeIsTheTracesTree) {
  const SpecConfig configs[] = {{3, 1, 4}, {5, 4, 8}, {6, 8, 32}, {4, 3, 20}, {8, 10, 60}, {3, 2, 11}};
  for (const SpecConfig& c : configs) {
    const DraftTree t = select_draft_tree(c, RankAcceptance::from_chain_rate(kDraftTopProbability, c.eagle_topk));
    EXPECT_EQ(t.parents, derive_eagle_tree(c.num_steps, c.eagle_topk, c.num_draft_tokens)) << describe(c);
  }
}

}  // namespace eaglesim
