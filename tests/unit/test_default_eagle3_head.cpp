#include <gtest/gtest.h>

#include <string>

#include "model/default_eagle3_head.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;

// The derived head is the published one wherever a target has one: the rule is how they are built
// (dense GQA, GQA MoE and MLA targets alike).
TEST(DefaultEagle3Head, MatchesThePublishedHeads) {
  for (const char* target : {"llama-3.1-8b", "llama-3.1-70b", "qwen3-8b", "qwen3-30b-a3b", "kimi-k2-instruct"}) {
    const ModelConfig t = shipped_model(target);
    const ModelConfig published =
        shipped_model(std::string(target == std::string("kimi-k2-instruct") ? "kimi-k2" : target) + "-eagle3");
    const ModelConfig derived = default_eagle3_head(t);
    EXPECT_TRUE(derived.is_draft()) << target;
    EXPECT_EQ(derived.layers, 1) << target;
    EXPECT_EQ(derived.hidden, published.hidden) << target;
    EXPECT_EQ(derived.heads, published.heads) << target;
    EXPECT_EQ(derived.kv_heads, published.kv_heads) << target;
    EXPECT_EQ(derived.head_dim, published.head_dim) << target;
    EXPECT_EQ(derived.intermediate, published.intermediate) << target;
    EXPECT_EQ(derived.vocab, published.vocab) << target;
    EXPECT_EQ(derived.draft_vocab, published.draft_vocab) << target;
    EXPECT_EQ(derived.name, std::string(target) + "-eagle3-default");
  }
}

TEST(DefaultEagle3Head, SaysWhatItIs) {
  const ModelConfig t = shipped_model("qwen3-4b");
  const std::string text = describe_default_head(t, default_eagle3_head(t));
  EXPECT_NE(text.find("qwen3-4b: no EAGLE-3 head given; priced with a default head derived from its dimensions"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hidden 2560, 32 heads / 8 KV of 128, MLP 9728, draft vocabulary 32000"), std::string::npos)
      << text;
}
