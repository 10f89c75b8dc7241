// `eaglesim sweep` over batch sizes and SGLang's speculative flags: the best configuration per
// batch and where speculation stops paying in the table and the JSON, invalid combinations
// skipped and counted, the acceptance source per row, and bad input naming the flag.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

using namespace eaglesim::test;

namespace {
void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const char* kBatch =
    "sweep --model llama-3.1-8b --topology 2x-h200-nvlink --tp 1,2 --batch 1,8,64 --speculative-num-steps 3,5 "
    "--speculative-eagle-topk 1,4 --speculative-num-draft-tokens 4,8 --accept-rate 0.7 --strategy nccl,oneshot";
}  // namespace

TEST(SweepBatchCli, BestPerBatchAndWhereSpeculationStopsPaying) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kBatch) + " --json " + dir + "/s.json -o " + dir + "/s.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Best configuration per batch (by total tok/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("speculation "), std::string::npos) << r.out;
  // (3,1,8) and (5,1,4) and (5,1,8) are not chains SGLang runs at topk 1.
  EXPECT_NE(r.out.find("Skipped 3 configurations SGLang would not run"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/s.json"));
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["counts"]["skipped_configs"], 3);
  // configurations: (3,1,4), (3,4,4), (3,4,8), (5,1,6), (5,4,4), (5,4,8)
  EXPECT_EQ(j["axes"]["spec_configs"].size(), 6u);
  EXPECT_EQ(j["rows"].size(), 2u * 3 * 6 * 2);
  ASSERT_EQ(j["best_per_batch"].size(), 3u);
  for (const auto& b : j["best_per_batch"]) {
    ASSERT_FALSE(b["row"].is_null()) << b.dump();
    const auto& row = j["rows"][b["row"].get<std::size_t>()];
    EXPECT_EQ(row["batch"], b["batch"]);
    EXPECT_EQ(row["total_tokens_per_s"], b["total_tokens_per_s"]);
    // No row of that batch has a higher total.
    for (const auto& other : j["rows"])
      if (other["batch"] == b["batch"] && other["status"] == "ok")
        EXPECT_LE(other["total_tokens_per_s"].get<double>(), b["total_tokens_per_s"].get<double>());
    EXPECT_NEAR(b["speedup_vs_plain"].get<double>(),
                b["total_tokens_per_s"].get<double>() / b["plain_total_tokens_per_s"].get<double>(), 1e-5);
  }
  ASSERT_EQ(j["speculation_limits"].size(), 1u);
  const auto& limit = j["speculation_limits"][0];
  if (limit["stops_paying_at_batch"].is_null())
    EXPECT_EQ(limit["summary"], "speculation pays at every batch swept");
  else
    EXPECT_EQ(limit["summary"], "speculation stops paying at batch " + limit["stops_paying_at_batch"].dump());
  // Every priced row says where E came from: the chain formula or the tree model.
  for (const auto& row : j["rows"]) {
    if (row["status"] != "ok") continue;
    const std::string src = row["accept_source"];
    EXPECT_EQ(src, row["eagle_topk"] == 1 ? "chain_rate" : "tree_model") << row.dump();
  }
  EXPECT_NE(slurp(dir + "/s.csv").find("batch,kv_len,num_steps,eagle_topk,num_draft_tokens"), std::string::npos);
}

TEST(SweepBatchCli, TheDraftTokensChainAxisStillWorksBesideTheSglangLists) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "sweep --model llama-3.1-8b --topology 2x-h200-nvlink --tp 1 --draft-tokens 3 --speculative-num-steps 3 "
      "--strategy nccl --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // --draft-tokens 3 and --speculative-num-steps 3 are the same chain (3, 1, 4): one configuration.
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/s.json"));
  ASSERT_EQ(j["axes"]["spec_configs"].size(), 1u);
  EXPECT_EQ(j["axes"]["spec_configs"][0]["num_draft_tokens"], 4);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["draft_tokens"], 3);
  EXPECT_EQ(j["rows"][0]["accept_source"], "chain_rate");
}

TEST(SweepBatchCli, AcceptanceTableAndProbsNameTheirSourcePerRow) {
  const std::string dir = temp_dir();
  write_file(dir + "/acc.json",
             R"({"format": "eaglesim-acceptance", "version": 1, "entries": [)"
             R"({"num_steps": 3, "eagle_topk": 1, "num_draft_tokens": 4, "accept_len": 2.9, "batch": 1}]})");
  const CliResult r = run_cli(
      "sweep --model llama-3.1-8b --topology 2x-h200-nvlink --tp 1 --batch 1 --speculative-num-steps 3 "
      "--speculative-eagle-topk 1,4 --speculative-num-draft-tokens 8 --accept-probs 0.7,0.1/0.6 --acceptance " +
      dir + "/acc.json --strategy nccl --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/s.json"));
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["accept_source"], "measured_table");
  EXPECT_DOUBLE_EQ(j["rows"][0]["tokens_per_cycle"].get<double>(), 2.9);
  EXPECT_EQ(j["rows"][0]["accept_mode"], "probs");
  EXPECT_EQ(j["rows"][1]["accept_source"], "tree_model");
  const std::string detail = j["acceptance_sources"][j["rows"][1]["accept_source_index"].get<std::size_t>()];
  EXPECT_NE(detail.find("0.7,0.1/0.6"), std::string::npos) << detail;
}

TEST(SweepBatchCli, BadInputExitsTwoNamingTheFlag) {
  const std::string base = "sweep --model llama-3.1-8b --topology 2x-h200-nvlink --tp 1 ";
  struct Case {
    std::string args, flag;
  };
  for (const Case& c : {Case{"--speculative-num-steps 3 --speculative-eagle-topk 0 --speculative-num-draft-tokens 4",
                             "--speculative-eagle-topk: expected values in [1, 256], got \"0\""},
                        Case{"--batch 0", "--batch: expected values in [1, 4096], got \"0\""},
                        Case{"--batch 100000", "--batch: expected values in [1, 4096], got \"100000\""},
                        Case{"--batch ,", "--batch"},
                        Case{"--speculative-num-steps ''", "--speculative-num-steps"},
                        Case{"--speculative-eagle-topk 4", "--speculative-num-steps: required"},
                        Case{"--speculative-num-steps 2 --speculative-eagle-topk 4",
                             "--speculative-num-draft-tokens: required with --speculative-eagle-topk 4"},
                        Case{"--speculative-num-steps 1 --speculative-eagle-topk 2 --speculative-num-draft-tokens 8",
                             "--speculative-num-draft-tokens: no valid (num_steps, eagle_topk, num_draft_tokens)"},
                        Case{"--accept-probs 0.7,x", "--accept-probs"},
                        Case{"--acceptance /no/such/acc.json", "/no/such/acc.json"}}) {
    const CliResult r = run_cli(base + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
}
