// `eaglesim gen` end to end: files written on success; exit 2, a message on stderr and no output
// file on every bad input; and the shipped traces in traces/ equal what gen makes today.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
  EXPECT_NE(r.err.find(cfg + ": model_type: expected one of llama, qwen3, qwen3_moe, glm4_moe, deepseek_v3, kimi_k2, got \"mamba\""),
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
  EXPECT_NE(r.err.find("models/llm/no-such-model.json: cannot open file for reading"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));

  r = run_cli("gen " + kLlama8b + " --tp 1 --tokens 2 --draft models/llm/no-such-draft.json -o " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-draft.json: cannot open file for reading"), std::string::npos) << r.err;
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
