#include <gtest/gtest.h>

#include <string>

#include "core/errors.hpp"
#include "sweep/sweep_inputs.hpp"

using namespace eaglesim;

namespace {
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(SweepInputs, IntegerAxesTakeListsAndRanges) {
  EXPECT_EQ(parse_int_axis("--tp", "1..8", 1, 64), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(parse_int_axis("--tp", "8, 1,2,2", 1, 64), (std::vector<int>{1, 2, 8}));
  EXPECT_EQ(parse_int_axis("--tp", "1,4..6", 1, 64), (std::vector<int>{1, 4, 5, 6}));
  EXPECT_EQ(error_of([] { parse_int_axis("--tp", "0,2", 1, 64); }), "--tp: expected values in [1, 64], got \"0\"");
  EXPECT_EQ(error_of([] { parse_int_axis("--tp", "4..2", 1, 64); }), "--tp: range \"4..2\" runs backwards");
  EXPECT_EQ(error_of([] { parse_int_axis("--tp", "two", 1, 64); }),
            "--tp: expected an integer or a range like 1..8, got \"two\"");
  EXPECT_EQ(error_of([] { parse_int_axis("--tp", "1,,2", 1, 64); }),
            "--tp: empty item in \"1,,2\" (expected a comma-separated list)");
}

TEST(SweepInputs, NumberAndDtypeLists) {
  EXPECT_EQ(parse_number_list("--accept-rate", "0.7,0.5", 0, 1), (std::vector<double>{0.5, 0.7}));
  EXPECT_EQ(error_of([] { parse_number_list("--accept-rate", "1.5", 0, 1); }),
            "--accept-rate: expected values in [0, 1], got 1.5");
  EXPECT_EQ(error_of([] { parse_number_list("--accept-rate", "nan", 0, 1); }), "--accept-rate: expected a number, got \"nan\"");
  EXPECT_EQ(parse_dtype_list("--weight-dtype", "fp8,bf16,fp8"), (std::vector<DType>{DType::fp8, DType::bf16}));
  EXPECT_NE(error_of([] { parse_dtype_list("--weight-dtype", "fp4"); }).find("got \"fp4\""), std::string::npos);
}

TEST(SweepInputs, ModelsResolveByNameOrPath) {
  const std::string by_name = resolve_model_path("--model", "llama-3.1-8b");
  EXPECT_NE(by_name.find("models/llm/llama-3.1-8b.json"), std::string::npos);
  EXPECT_EQ(resolve_model_path("--model", "llama-3.1-8b.json"), by_name);
  const std::string path = std::string(EAGLESIM_REPO) + "/models/llm/glm-4.5.json";
  EXPECT_EQ(resolve_model_path("--model", path), path);
  const std::string err = error_of([] { resolve_model_path("--model", "gpt-17"); });
  EXPECT_NE(err.find("--model: no model config \"gpt-17\""), std::string::npos) << err;
  EXPECT_NE(err.find("kimi-k2-instruct"), std::string::npos) << err;  // lists what exists
}

TEST(SweepInputs, TopologyItemsExpandNamesGlobsAndAll) {
  const std::vector<std::string> all = expand_topology_item("--topology", "all");
  EXPECT_EQ(all.size(), preset_names("topologies").size());
  EXPECT_GE(all.size(), 2u);
  const std::vector<std::string> eight = expand_topology_item("--topology", "8x-*");
  EXPECT_FALSE(eight.empty());
  for (const std::string& p : eight) EXPECT_NE(p.find("/8x-"), std::string::npos) << p;
  EXPECT_TRUE(std::is_sorted(eight.begin(), eight.end()));
  const std::vector<std::string> by_path =
      expand_topology_item("--topology", std::string(EAGLESIM_REPO) + "/models/topologies/2x-*.json");
  EXPECT_EQ(by_path.size(), 1u);
  EXPECT_NE(error_of([] { expand_topology_item("--topology", "99x-*"); }).find("\"99x-*\" matches no topology file"),
            std::string::npos);
  EXPECT_THROW(expand_topology_item("--topology", "no-such-machine"), InputError);
}

TEST(SweepInputs, DraftHeadsAreFoundBesideTheirModels) {
  const std::string dir = std::string(EAGLESIM_REPO) + "/models/llm/";
  EXPECT_EQ(find_draft_beside(dir + "llama-3.1-70b.json"), dir + "llama-3.1-70b-eagle3.json");
  EXPECT_EQ(find_draft_beside(dir + "kimi-k2-instruct.json"), dir + "kimi-k2-eagle3.json");
  EXPECT_EQ(find_draft_beside(dir + "glm-4.5.json"), "");
  EXPECT_EQ(find_draft_beside(dir + "kimi-k2-eagle3.json"), "");  // a head has no head
}
