// The verify tree derived from (num_steps, eagle_topk, num_draft_tokens) as SGLang builds it,
// and the checks a given parent list must pass. The expected trees are worked out by hand in
// the comments from the assumed draft probabilities 0.7 * 0.3^r of the r-th best token.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "trace/eagle_tree.hpp"
#include "trace/speculative.hpp"

using namespace eaglesim;

namespace {

int max_depth(const std::vector<int>& parents) {
  const std::vector<int> d = tree_depths(parents);
  return *std::max_element(d.begin(), d.end());
}

std::vector<int> children_of(const std::vector<int>& parents) {
  std::vector<int> c(parents.size(), 0);
  for (std::size_t i = 1; i < parents.size(); ++i) ++c[static_cast<std::size_t>(parents[i])];
  return c;
}

}  // namespace

TEST(EagleTree, CandidatesAreTopkThenTopkSquaredPerFurtherStep) {
  EXPECT_EQ(draft_candidates(3, 1), 3);          // a chain: one candidate per level
  EXPECT_EQ(draft_candidates(5, 4), 4 + 4 * 16);  // 68
  EXPECT_EQ(draft_candidates(6, 8), 8 + 5 * 64);  // 328
  EXPECT_EQ(draft_candidates(1, 8), 8);
}

TEST(EagleTree, TopkOneIsTheChain) {
  EXPECT_EQ(derive_eagle_tree(3, 1, 4), (std::vector<int>{-1, 0, 1, 2}));
  EXPECT_EQ(derive_eagle_tree(1, 1, 2), (std::vector<int>{-1, 0}));
  const std::vector<int> chain7 = derive_eagle_tree(6, 1, 7);
  for (std::size_t i = 1; i < chain7.size(); ++i) EXPECT_EQ(chain7[i], static_cast<int>(i) - 1);
}

TEST(EagleTree, FiveStepsTopFourEightTokensByHand) {
  // Scores (product along the path): level 1: 0.7, 0.21, ...; the chain of best tokens 0.49,
  // 0.343, 0.24, 0.168; the second-best child of the first token 0.7 * 0.21 = 0.147, tied with
  // the best child of the second-best token and taking the tie as the earlier candidate. The 7
  // best: 0.7, 0.49, 0.343, 0.24, 0.21, 0.168, 0.147, in candidate order: L1 r0 (token 1),
  // L1 r1 (2), L2 00 (3), L2 01 (4), L3 000 (5), L4 (6), L5 (7).
  EXPECT_EQ(derive_eagle_tree(5, 4, 8), (std::vector<int>{-1, 0, 0, 1, 1, 3, 5, 6}));
}

TEST(EagleTree, TwoStepsTopTwoFourTokensByHand) {
  // 0.7 (L1 r0), 0.49 (L2 00), 0.21 (L1 r1): in candidate order L1 r0, L1 r1, L2 00.
  EXPECT_EQ(derive_eagle_tree(2, 2, 4), (std::vector<int>{-1, 0, 0, 1}));
}

TEST(EagleTree, SixStepsTopEightThirtyTwoTokensIsATreeSglangCouldBuild) {
  const std::vector<int> t = derive_eagle_tree(6, 8, 32);
  ASSERT_EQ(t.size(), 32u);
  EXPECT_FALSE(find_tree_problem(t, 6, 8, 32).has_value());
  EXPECT_EQ(max_depth(t), 6);  // the chain of best tokens reaches the last level (0.7^6 = 0.118)
  const std::vector<int> c = children_of(t);
  EXPECT_LE(*std::max_element(c.begin(), c.end()), 8);
  EXPECT_GE(c[0], 2);  // and the root branches
}

TEST(EagleTree, EveryDerivedTreePassesTheChecksAndRunsInDepthOrder) {
  for (int steps = 1; steps <= 7; ++steps)
    for (int topk = 1; topk <= 8; ++topk) {
      const std::int64_t most = topk == 1 ? steps + 1 : 1 + draft_candidates(steps, topk);
      for (std::int64_t n = topk == 1 ? steps + 1 : 1; n <= std::min<std::int64_t>(most, 64); ++n) {
        SCOPED_TRACE(::testing::Message() << steps << "," << topk << "," << n);
        const std::vector<int> t = derive_eagle_tree(steps, topk, static_cast<int>(n));
        ASSERT_EQ(t.size(), static_cast<std::size_t>(n));
        EXPECT_FALSE(find_tree_problem(t, steps, topk, static_cast<int>(n)).has_value());
        const std::vector<int> d = tree_depths(t);
        EXPECT_TRUE(std::is_sorted(d.begin(), d.end()));  // SGLang's candidate order is level by level
      }
    }
}

TEST(EagleTree, ProblemsNameTheTokenAndTheRule) {
  auto problem = [](std::vector<int> p, int steps, int topk) {
    auto r = find_tree_problem(p, steps, topk, static_cast<int>(p.size()));
    return r ? std::to_string(r->index) + ": " + r->expected + " / " + r->got : std::string("(none)");
  };
  EXPECT_EQ(problem({-1, 0, 0, 1}, 2, 2), "(none)");
  EXPECT_EQ(problem({0, 0, 0, 1}, 2, 2), "0: -1 (token 0 is the root, the last verified token) / 0");
  EXPECT_EQ(problem({-1, 0, 3, 1}, 2, 2), "2: a parent before the token, in [0, 2) (a later parent makes a cycle) / 3");
  EXPECT_EQ(problem({-1, 1, 0, 1}, 2, 2), "1: a parent before the token, in [0, 1) (a later parent makes a cycle) / 1");
  EXPECT_EQ(problem({-1, 0, 0, 9}, 2, 2), "3: a token index in [0, 3) (out of range) / 9");
  EXPECT_EQ(problem({-1, 0, -2, 1}, 2, 2), "2: a token index in [0, 2) (out of range) / -2");
  EXPECT_EQ(problem({-1, 0, -1, 1}, 2, 2), "2: a parent in [0, 2): only token 0 is a root / -1");
  EXPECT_EQ(problem({-1, 0, 1, 2}, 2, 2),
            "3: a token at depth at most num_steps = 2 (SGLang drafts 2 levels) / 2 (depth 3)");
  EXPECT_EQ(problem({-1, 0, 0, 0}, 2, 2), "3: at most eagle_topk = 2 children per token / 0 (child 3 of token 0)");
  // topk 2: level 1 holds two tokens; only the two best of a level are extended, so three
  // level-1 tokens with children cannot happen (topk 3 tokens at level 1, each with a child).
  EXPECT_EQ(problem({-1, 0, 0, 0, 1, 2, 3}, 2, 3), "(none)");
  EXPECT_EQ(problem({-1, 0, 0, 1, 2, 3, 4}, 3, 2).substr(0, 3), "(no");  // a chain below two branches
  EXPECT_NE(problem({-1, 0, 0, 1, 1, 2, 3, 4, 5}, 3, 2).find("children of at most eagle_topk = 2 tokens at depth 2"),
            std::string::npos);
  EXPECT_EQ(find_tree_problem({-1, 0, 0}, 2, 2, 4)->expected, "a parent for each of the num_draft_tokens = 4 tokens");
}

TEST(SpeculativeConfig, SglangRulesAreCheckedInOrder) {
  auto field = [](SpeculativeConfig c) {
    auto p = find_speculative_problem(c);
    return p ? static_cast<int>(p->field) : -1;
  };
  SpeculativeConfig chain{{3, 1, 4}, SpecMethod::eagle3, VerifyMask::chain, {}};
  EXPECT_EQ(field(chain), -1);
  SpeculativeConfig c = chain;
  c.num_draft_tokens = 6;  // topk 1: SGLang verifies steps + 1
  EXPECT_EQ(field(c), static_cast<int>(SpecField::num_draft_tokens));
  c = chain;
  c.eagle_topk = 0;
  EXPECT_EQ(field(c), static_cast<int>(SpecField::eagle_topk));
  c = chain;
  c.num_steps = 0;
  EXPECT_EQ(field(c), static_cast<int>(SpecField::num_steps));
  SpeculativeConfig tree{{5, 4, 8}, SpecMethod::eagle3, VerifyMask::tree, derive_eagle_tree(5, 4, 8)};
  EXPECT_EQ(field(tree), -1);
  c = tree;
  c.mask = VerifyMask::chain;
  c.parents.clear();
  EXPECT_EQ(field(c), static_cast<int>(SpecField::mask));
  c = tree;
  c.num_draft_tokens = 70;  // 1 + 68 candidates at most
  EXPECT_EQ(field(c), static_cast<int>(SpecField::num_draft_tokens));
  c.num_draft_tokens = 69;
  c.parents = derive_eagle_tree(5, 4, 69);
  EXPECT_EQ(field(c), -1);
  c.num_draft_tokens = 1;  // the root alone: a tree verifies at least one draft
  c.parents = {-1};
  EXPECT_EQ(field(c), static_cast<int>(SpecField::num_draft_tokens));
  SpeculativeConfig none{{0, 0, 0}, SpecMethod::none, VerifyMask::chain, {}};
  EXPECT_EQ(field(none), -1);
  none.num_steps = 2;
  EXPECT_EQ(field(none), static_cast<int>(SpecField::num_steps));
}

// The trace reader and the sweep / acceptance table hold the three numbers to one rule set: within
// the trace format's limits they reject the same configurations, naming the same field.
TEST(SpeculativeConfig, TraceAndEngineRulesAgree) {
  for (int steps = -1; steps <= 4; ++steps)
    for (int topk = -1; topk <= 4; ++topk)
      for (int tokens = -1; tokens <= 40; ++tokens) {
        SpeculativeConfig c{{steps, topk, tokens}, SpecMethod::eagle3, VerifyMask::chain, {}};
        const auto engine = engine_config_problem(c);
        if (topk > 1) c.mask = VerifyMask::tree;
        if (topk > 1 && !engine) c.parents = derive_eagle_tree(steps, topk, tokens);
        SCOPED_TRACE(::testing::Message() << steps << "," << topk << "," << tokens);
        const auto trace = find_speculative_problem(c);
        ASSERT_EQ(trace.has_value(), engine.has_value()) << (trace ? trace->expected : engine->message);
        if (!engine) continue;
        const SpecField field = engine->field == "num_steps"    ? SpecField::num_steps
                                : engine->field == "eagle_topk" ? SpecField::eagle_topk
                                                                : SpecField::num_draft_tokens;
        EXPECT_EQ(static_cast<int>(trace->field), static_cast<int>(field)) << engine->field;
      }
}
