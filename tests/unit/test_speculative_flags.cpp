// gen's SGLang flags resolved as SGLang's server_args.py resolves them: defaults, the topk-1
// adjustment (a note, not an error), and every rejection naming its flag.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "model/speculative_flags.hpp"
#include "trace/eagle_tree.hpp"

using namespace eaglesim;

namespace {

SpeculativeFlags flags(std::optional<int> steps, std::optional<int> topk, std::optional<int> draft_tokens) {
  SpeculativeFlags f;
  f.num_steps = steps;
  f.eagle_topk = topk;
  f.num_draft_tokens = draft_tokens;
  return f;
}

std::string error_of(const SpeculativeFlags& f) {
  try {
    resolve_speculative_flags(f);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(SpeculativeFlags, StepsAloneIsTheChain) {
  const ResolvedSpeculative r = resolve_speculative_flags(flags(3, std::nullopt, std::nullopt));
  EXPECT_EQ(r.config.method, SpecMethod::eagle3);
  EXPECT_EQ(r.config.num_steps, 3);
  EXPECT_EQ(r.config.eagle_topk, 1);
  EXPECT_EQ(r.config.num_draft_tokens, 4);
  EXPECT_EQ(r.config.mask, VerifyMask::chain);
  EXPECT_TRUE(r.config.parents.empty());
  EXPECT_TRUE(r.notes.empty());
}

TEST(SpeculativeFlags, TopkOneAdjustsTheDraftTokensWithANote) {
  const ResolvedSpeculative r = resolve_speculative_flags(flags(3, 1, 6));
  EXPECT_EQ(r.config.num_draft_tokens, 4);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("speculative_num_draft_tokens 6 adjusted to speculative_num_steps + 1 = 4"),
            std::string::npos)
      << r.notes[0];
  EXPECT_TRUE(resolve_speculative_flags(flags(3, 1, 4)).notes.empty());
}

TEST(SpeculativeFlags, TopkAboveOneDerivesTheTree) {
  const ResolvedSpeculative r = resolve_speculative_flags(flags(5, 4, 8));
  EXPECT_EQ(r.config.mask, VerifyMask::tree);
  EXPECT_EQ(r.config.parents, derive_eagle_tree(5, 4, 8));
  EXPECT_EQ(resolve_speculative_flags(flags(6, 8, 32)).config.parents.size(), 32u);
}

TEST(SpeculativeFlags, RejectionsNameTheFlag) {
  EXPECT_EQ(error_of(flags(std::nullopt, 4, 8)),
            "speculative_num_steps: required with speculative_eagle_topk (SGLang chooses the three itself only "
            "when none of them is given)");
  EXPECT_EQ(error_of(flags(std::nullopt, std::nullopt, 8)).rfind("speculative_num_steps: required with "
                                                                 "speculative_num_draft_tokens", 0),
            0u);
  EXPECT_EQ(error_of(flags(5, 4, std::nullopt)),
            "speculative_num_draft_tokens: required with speculative_eagle_topk 4 (the tokens of the tree each "
            "request verifies)");
  EXPECT_EQ(error_of(flags(3, 0, 4)), "speculative_eagle_topk: expected an integer in [1, 256], got 0");
  EXPECT_EQ(error_of(flags(3, -2, 4)), "speculative_eagle_topk: expected an integer in [1, 256], got -2");
  EXPECT_EQ(error_of(flags(0, 1, std::nullopt)), "speculative_num_steps: expected an integer in [1, 256], got 0");
  EXPECT_EQ(error_of(flags(1000, 1, std::nullopt)), "speculative_num_steps: expected an integer in [1, 256], got 1000");
  EXPECT_EQ(error_of(flags(2, 2, 8)),
            "speculative_num_draft_tokens: expected an integer in [2, 7] (the root and at most the 6 candidates "
            "that 2 steps of top-2 drafting score), got 8");
  EXPECT_EQ(error_of(flags(2, 2, 0)).rfind("speculative_num_draft_tokens: expected an integer in [2, 7]", 0), 0u);
  // The root alone verifies no draft: a tree is at least one draft token, as for the sweep.
  EXPECT_EQ(error_of(flags(2, 2, 1)).rfind("speculative_num_draft_tokens: expected an integer in [2, 7]", 0), 0u);
  EXPECT_EQ(error_of(flags(2, 2, 2)), "(accepted)");
  EXPECT_EQ(error_of(flags(2, 2, 7)), "(accepted)");
}
