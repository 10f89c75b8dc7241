// `eaglesim gen` end to end: files written on success; exit 2, a message on stderr and no output
// file on every bad input; and the shipped traces in traces/ equal what gen makes today.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

using namespace eaglesim::test;

namespace {

// A fresh directory for one test, removed with everything in it when the test ends.
struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { std::filesystem::remove_all(path); }
};

const std::string kLlama8b = "--model models/llm/llama-3.1-8b.json";

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// traces/MANIFEST: the list tools/regen-traces.sh rebuilds ("OUTPUT_FILE  gen arguments").
struct ManifestEntry {
  std::string output;
  std::string args;
};

std::vector<ManifestEntry> manifest() {
  std::vector<ManifestEntry> out;
  for (const NamedLine& l : read_named_lines(std::string(EAGLESIM_REPO) + "/traces/MANIFEST")) out.push_back({l.name, l.rest});
  return out;
}

}  // namespace

TEST(GenCli, WritesATraceThatInspectReads) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/t.json";
  CliResult r = run_cli("gen " + kLlama8b + " --tp 2 --tokens 4 --draft models/llm/llama-3.1-8b-eagle3.json -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(file_exists(out));
  auto doc = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(doc["meta"]["model"], "llama-3.1-8b");
  EXPECT_EQ(doc["meta"]["draft_tokens"], 3);
  EXPECT_EQ(doc["steps"].size(), 3u);
  CliResult i = run_cli("inspect --json " + out);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto stats = nlohmann::json::parse(i.out);
  EXPECT_EQ(stats["steps"]["verify"]["allreduce_bytes"]["32768"], 65);  // 64 layer + 1 embedding
}

// Names resolve as in sweep; success says what was written, on stdout.
TEST(GenCli, TakesModelNamesAndSaysWhatItWrote) {
  TempDir tmp;
  const std::string out = tmp.path + "/t.json";
  CliResult r = run_cli("gen --model llama-3.1-8b --draft llama-3.1-8b-eagle3 --tp 2 --tokens 4 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + out +
                       ": llama-3.1-8b TP2 (8.03 B parameters, 8.03 GB of weights per rank), batch 1, 4 tokens per "
                       "request verified (sglang engine); steps verify, "
                       "draft, decode; verify step 455 ops, allreduces 65 x 32.0 KiB\n");
  CliResult bad = run_cli("gen --model no-such-model --tp 2 --tokens 4 -o " + out + "2");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--model: no model config \"no-such-model\""), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
}

// gpt-oss (mxfp4 experts at 4.25 bits, the rest bf16) and Llama-4 (bf16, its vision tower beside
// the count): the parameters and weights per rank gen prints at TP1 and TP8, and a trace inspect
// reads.
TEST(GenCli, GptOssAndLlama4SayTheirParametersAndWeightsPerRank) {
  TempDir tmp;
  const std::string out = tmp.path + "/t.json";
  const std::tuple<const char*, int, const char*> cases[] = {
      {"gpt-oss-120b", 1, "(116.83 B parameters, 65.25 GB of weights per rank)"},
      {"gpt-oss-120b", 8, "(116.83 B parameters, 8.20 GB of weights per rank)"},
      {"gpt-oss-20b", 1, "(20.91 B parameters, 13.76 GB of weights per rank)"},
      {"gpt-oss-20b", 8, "(20.91 B parameters, 1.73 GB of weights per rank)"},
      {"llama-4-scout-17b-16e-instruct", 1,
       "(107.77 B parameters and a 0.87 B vision tower not priced, 215.54 GB of weights per rank)"},
      {"llama-4-scout-17b-16e-instruct", 8,
       "(107.77 B parameters and a 0.87 B vision tower not priced, 26.95 GB of weights per rank)"},
      {"llama-4-maverick-17b-128e-instruct", 1,
       "(400.71 B parameters and a 0.87 B vision tower not priced, 801.42 GB of weights per rank)"},
      {"llama-4-maverick-17b-128e-instruct", 8,
       "(400.71 B parameters and a 0.87 B vision tower not priced, 100.21 GB of weights per rank)"},
  };
  for (const auto& [model, tp, said] : cases) {
    CliResult r = run_cli(fmt::format("gen --model {} --tp {} --tokens 4 -o {}", model, tp, out));
    ASSERT_EQ(r.exit_code, 0) << model << " " << r.err;
    EXPECT_NE(r.out.find(fmt::format(": {} TP{} {}, batch 1", model, tp, said)), std::string::npos) << r.out;
    CliResult i = run_cli("inspect --json " + out);
    ASSERT_EQ(i.exit_code, 0) << model << " " << i.err;
  }
  // --weight-dtype prices every linear layer in one format, without mxfp4's scales.
  CliResult int4 = run_cli("gen --model gpt-oss-120b --tp 1 --tokens 4 --weight-dtype int4 -o " + out);
  ASSERT_EQ(int4.exit_code, 0) << int4.err;
  EXPECT_NE(int4.out.find("(116.83 B parameters, 60.23 GB of weights per rank)"), std::string::npos) << int4.out;
}

TEST(GenCli, KimiK2Tp8ThreeTokensShows123AllreducesOf43008InInspect) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/k2.json";
  CliResult r = run_cli("gen --model models/llm/kimi-k2-instruct.json --tp 8 --tokens 3 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CliResult i = run_cli("inspect --json " + out);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto stats = nlohmann::json::parse(i.out);
  // 61 layers x 2 layer allreduces + the vocab-parallel embedding's, all 3 x 7168 x 2 B.
  EXPECT_EQ(stats["steps"]["verify"]["allreduce_bytes"].size(), 1u);
  EXPECT_EQ(stats["steps"]["verify"]["allreduce_bytes"]["43008"], 123);
  auto trace = nlohmann::json::parse(slurp(out));
  int layer_allreduces = 0;
  for (const auto& op : trace["steps"][0]["ops"])
    layer_allreduces += op["kind"] == "allreduce" && op["layer"].get<int>() >= 0;
  EXPECT_EQ(layer_allreduces, 122);
}

TEST(GenCli, UnknownModelTypeExits2WithoutOutput) {
  TempDir tmp;
  const std::string dir = tmp.path, cfg = dir + "/mamba.json", out = dir + "/t.json";
  write_text(cfg, R"({"model_type":"mamba","num_hidden_layers":4,"hidden_size":256})");
  CliResult r = run_cli("gen --model " + cfg + " --tp 1 --tokens 2 -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(cfg + ": model_type: expected one of llama, qwen2, qwen3, qwen3_moe, mistral, mixtral, glm4_moe, deepseek_v3, kimi_k2, gpt_oss, llama4_text, got \"mamba\""),
            std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));
}

TEST(GenCli, BadTpExits2WithoutOutput) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/t.json";
  CliResult r = run_cli("gen " + kLlama8b + " --tp 3 --tokens 4 -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot shard over --tp 3: num_attention_heads (32) is not a multiple of 3"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));

  r = run_cli("gen " + kLlama8b + " --tp 0 --tokens 4 -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tp: expected an integer in [1, 1024], got 0"), std::string::npos) << r.err;
  r = run_cli("gen " + kLlama8b + " --tp eight --tokens 4 -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tp"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));
}

TEST(GenCli, AbsurdValuesExit2) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/t.json";
  for (const std::string& args : {" --tp 2 --tokens 0", " --tp 2 --tokens 1000000", " --tp 2 --tokens 4 --kv-len 0",
                                  " --tp 2 --tokens 4 --kv-len 99999999999", " --tp 2 --tokens 4 --weight-dtype fp4"}) {
    SCOPED_TRACE(args);
    CliResult r = run_cli("gen " + kLlama8b + args + " -o " + out);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_FALSE(r.err.empty());
    EXPECT_FALSE(file_exists(out));
  }
}

TEST(GenCli, MissingConfigExits2WithoutOutput) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/t.json";
  CliResult r = run_cli("gen --model models/llm/no-such-model.json --tp 1 --tokens 2 -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--model: no model config \"models/llm/no-such-model.json\""), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));

  r = run_cli("gen " + kLlama8b + " --tp 1 --tokens 2 --draft models/llm/no-such-draft.json -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--draft: no model config \"models/llm/no-such-draft.json\""), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));
}

TEST(GenCli, UnwritableOutputExits2) {
  CliResult r = run_cli("gen " + kLlama8b + " --tp 1 --tokens 2 -o /nonexistent-eaglesim-dir/t.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent-eaglesim-dir/t.json: cannot write here"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists("/nonexistent-eaglesim-dir/t.json"));
}

TEST(GenCli, FailedRunLeavesAnExistingFileAlone) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/t.json";
  write_text(out, "previous content");
  CliResult r = run_cli("gen " + kLlama8b + " --tp 5 --tokens 4 -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(slurp(out), "previous content");
}

TEST(GenCli, ShippedTracesMatchTheGenerator) {
  auto entries = manifest();
  ASSERT_GE(entries.size(), 5u);
  TempDir tmp;
  const std::string dir = tmp.path;
  for (const auto& e : entries) {
    SCOPED_TRACE(e.output);
    std::string out = dir + "/" + e.output;
    CliResult r = run_cli("gen " + e.args + " -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string shipped = slurp(std::string(EAGLESIM_REPO) + "/traces/" + e.output);
    ASSERT_FALSE(shipped.empty()) << "traces/" << e.output << " is missing: run the regen-traces target";
    EXPECT_TRUE(slurp(out) == shipped) << "traces/" << e.output
                                       << " is stale: rebuild with `cmake --build build --target regen-traces`";
  }
}

TEST(GenCli, SglangFlagsForTheChainAtBatchOneWriteTheTokensTrace) {
  TempDir tmp;
  const std::string dir = tmp.path;
  const std::string models[] = {kLlama8b + " --tp 2 --draft models/llm/llama-3.1-8b-eagle3.json",
                                "--model models/llm/deepseek-v3.json --tp 8 --weight-dtype fp8",
                                "--model models/llm/glm-4.5.json --tp 4 --kv-len 1024"};
  for (const std::string& m : models)
    for (int steps : {1, 3, 5}) {
      SCOPED_TRACE(m + " steps " + std::to_string(steps));
      const std::string tokens = dir + "/tokens.json", sglang = dir + "/sglang.json", bare = dir + "/bare.json";
      ASSERT_EQ(run_cli("gen " + m + " --tokens " + std::to_string(steps + 1) + " -o " + tokens).exit_code, 0);
      CliResult r = run_cli("gen " + m + " --batch 1 --speculative-num-steps " + std::to_string(steps) +
                            " --speculative-eagle-topk 1 --speculative-num-draft-tokens " + std::to_string(steps + 1) +
                            " -o " + sglang);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_EQ(run_cli("gen " + m + " --speculative-num-steps " + std::to_string(steps) + " -o " + bare).exit_code, 0);
      EXPECT_TRUE(slurp(sglang) == slurp(tokens));
      EXPECT_TRUE(slurp(bare) == slurp(tokens));
      EXPECT_NE(slurp(tokens).find("\"version\": 2,"), std::string::npos);  // meta.engine
    }
}

TEST(GenCli, TopkOneWithOtherDraftTokensIsAdjustedWithANote) {
  TempDir tmp;
  const std::string dir = tmp.path, adjusted = dir + "/a.json", chain = dir + "/c.json";
  CliResult r = run_cli("gen " + kLlama8b + " --tp 1 --speculative-num-steps 3 --speculative-eagle-topk 1 "
                        "--speculative-num-draft-tokens 6 -o " + adjusted);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--speculative-num-draft-tokens 6 adjusted to --speculative-num-steps + 1 = 4"),
            std::string::npos) << r.err;
  ASSERT_EQ(run_cli("gen " + kLlama8b + " --tp 1 --tokens 4 -o " + chain).exit_code, 0);
  EXPECT_TRUE(slurp(adjusted) == slurp(chain));
}

TEST(GenCli, BatchedTreeWithTheEngineCycleShowsInInspect) {
  TempDir tmp;
  const std::string dir = tmp.path, out = dir + "/t.json";
  CliResult r = run_cli("gen --model models/llm/kimi-k2-instruct.json --tp 8 --batch 8 --speculative-num-steps 5 "
                        "--speculative-eagle-topk 4 --speculative-num-draft-tokens 8 --kv-lens "
                        "1024,2048,4096,8192,1024,2048,4096,8192 --draft models/llm/kimi-k2-eagle3.json --engine-cycle -o " +
                        out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto trace = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(trace["version"], 2);
  CliResult i = run_cli("inspect --json " + out);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  auto s = nlohmann::json::parse(i.out);
  EXPECT_EQ(s["batch"], 8);
  EXPECT_EQ(s["kv_lens"]["min"], 1024);
  EXPECT_EQ(s["kv_lens"]["max"], 8192);
  EXPECT_DOUBLE_EQ(s["kv_lens"]["mean"].get<double>(), 3840.0);
  EXPECT_EQ(s["speculative"]["num_steps"], 5);
  EXPECT_EQ(s["speculative"]["eagle_topk"], 4);
  EXPECT_EQ(s["speculative"]["mask"], "tree");
  EXPECT_EQ(s["speculative"]["parents"].size(), 8u);
  EXPECT_EQ(s["steps"]["verify"]["rows"], 64);                    // 8 requests x 8 draft tokens
  EXPECT_EQ(s["steps"]["verify"]["allreduce_bytes"]["917504"], 123);  // 64 x 7168 x 2 B, 61 x 2 + 1
  EXPECT_EQ(s["steps"]["verify"]["attention"]["mask"], "tree");
  EXPECT_EQ(s["steps"]["draft_extend"]["rows"], 48);  // 8 x (5 + 1)
  EXPECT_EQ(s["steps"]["draft"]["rows"], 32);         // 8 x topk 4
  EXPECT_EQ(s["steps"]["draft"]["runs_per_cycle"], 4);
  EXPECT_EQ(s["steps"]["decode"]["rows"], 8);
  EXPECT_EQ(s["steps"]["decode"]["runs_per_cycle"], 0);
  EXPECT_EQ(s["steps"]["verify"]["ops_by_kind"]["host_sync"], 1);

  // The simulator runs it end to end, the draft-extend pass in the cycle.
  const std::string topo = std::string(EAGLESIM_REPO) + "/models/topologies/8x-h200-nvswitch.json";
  // (Kimi-K2 in bf16 does not fit 8 x H200: priced anyway for the cycle's shape.)
  CliResult run = run_cli("run " + out + " --topology " + topo + " --strategy nccl --ignore-memory --json " + dir + "/r.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto report = nlohmann::json::parse(slurp(dir + "/r.json"));
  const auto& res = report["results"][0];
  EXPECT_GT(res["draft_extend_step_us"].get<double>(), 0.0);
  EXPECT_NEAR(res["draft_us"].get<double>(),
              4 * res["draft_step_us"].get<double>() + res["draft_extend_step_us"].get<double>(), 1e-6);
}

// The must-show grid end to end: for Llama-3.1-8B at TP1 and Kimi-K2 at TP8, at batch 1, 8, 32
// and 64 and (steps, topk, draft tokens) (3,1,4), (5,4,8) and (6,8,32), every verify GEMM gen
// writes has batch x draft tokens rows, and inspect counts every verify allreduce at
// batch x draft tokens x hidden x 2 bytes (2 per layer and the embedding's; none at TP1).
TEST(GenCli, MustShowGridGemmRowsAndAllreduceBytesFollowBatchTimesDraftTokens) {
  struct Target {
    const char* model;
    int tp;
    std::int64_t hidden;
    int layers;
  };
  TempDir tmp;
  const std::string out = tmp.path + "/t.json";
  for (const Target& t : {Target{"llama-3.1-8b", 1, 4096, 32}, Target{"kimi-k2-instruct", 8, 7168, 61}})
    for (int batch : {1, 8, 32, 64})
      for (auto [steps, topk, tokens] : {std::tuple{3, 1, 4}, std::tuple{5, 4, 8}, std::tuple{6, 8, 32}}) {
        SCOPED_TRACE(::testing::Message() << t.model << " B=" << batch << " (" << steps << "," << topk << "," << tokens << ")");
        const CliResult g = run_cli(fmt::format("gen --model models/llm/{}.json --tp {} --batch {} --speculative-num-steps {} "
                                                "--speculative-eagle-topk {} --speculative-num-draft-tokens {} -o {}",
                                                t.model, t.tp, batch, steps, topk, tokens, out));
        ASSERT_EQ(g.exit_code, 0) << g.err;
        const std::int64_t rows = static_cast<std::int64_t>(batch) * tokens;
        const auto trace = nlohmann::json::parse(slurp(out));
        int gemms = 0;
        for (const auto& op : trace["steps"][0]["ops"])
          if (op["kind"] == "gemm") {
            EXPECT_EQ(op["m"].get<std::int64_t>(), rows) << op["name"];
            ++gemms;
          }
        EXPECT_GT(gemms, 0);
        const CliResult i = run_cli("inspect --json " + out);
        ASSERT_EQ(i.exit_code, 0) << i.err;
        const auto verify = nlohmann::json::parse(i.out)["steps"]["verify"];
        if (verify.contains("rows")) EXPECT_EQ(verify["rows"].get<std::int64_t>(), rows);
        const auto& bytes = verify["allreduce_bytes"];
        if (t.tp == 1) {
          EXPECT_TRUE(bytes.empty()) << bytes.dump();
        } else {
          ASSERT_EQ(bytes.size(), 1u) << bytes.dump();
          EXPECT_EQ(bytes.value(std::to_string(rows * t.hidden * 2), 0), 2 * t.layers + 1) << bytes.dump();
        }
      }
}
