#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

using namespace eaglesim::test;

namespace {

const std::string kDir = std::string(EAGLESIM_TEST_DATA) + "/kineto/";

std::string nccl_pair() {
  return kDir + "llama8b_tp2_t4_nccl_rank0.json.gz " + kDir + "llama8b_tp2_t4_nccl_rank1.json.gz";
}

// Runs an import that must fail: exit 2, the expected message on stderr, no output file.
void expect_refused(const std::string& inputs, const std::string& extra, const std::string& message) {
  std::string out = temp_dir() + "/out.json";
  CliResult r = run_cli("import kineto " + inputs + " -o " + out + " " + extra);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(out));
}

}  // namespace

TEST(ImportCli, NcclTraceImportsAndInspects) {
  std::string out = temp_dir() + "/llama.json";
  CliResult r = run_cli("import kineto " + nccl_pair() + " -o " + out + " --layers 32 --model llama-3.1-8b");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("other (not typed"), std::string::npos) << r.out;  // what was not recognised
  ASSERT_TRUE(file_exists(out));
  CliResult i = run_cli("inspect " + out);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("model llama-3.1-8b  tp 2  tokens 4  source imported"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("32768 B x 64"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("448 ops over 32 layers"), std::string::npos) << i.out;
}

TEST(ImportCli, OneRankWarnsAboutUpperBound) {
  std::string out = temp_dir() + "/one.json";
  CliResult r = run_cli("import kineto " + kDir + "llama8b_tp2_t4_one_shot_rank0.json.gz -o " + out + " --layers 32 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("UPPER BOUND"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(slurp(out).find("UPPER BOUND"), std::string::npos);
}

TEST(ImportCli, BadInputsExit2WithoutOutput) {
  expect_refused(kDir + "bad/not_json.json", "", "not_json.json: truncated JSON");
  expect_refused(kDir + "bad/not_profiler.json", "", "expected a PyTorch profiler trace");
  expect_refused(kDir + "bad/no_kernels.json", "", "no GPU kernels");
  expect_refused(kDir + "synthetic/vllm_tp2_rank0.json " + kDir + "bad/mismatch_rank1.json", "",
                 "not the ranks of one run");
  expect_refused(nccl_pair(), "", "pass --layers N");
  expect_refused(kDir + "synthetic/vllm_tp2_rank0.json", "--step 7", "--step 7: not a complete step");
  expect_refused(kDir + "synthetic/vllm_tp2_rank0.json", "--step 0 --all-steps", "excludes");
}

TEST(ImportCli, ImportNeedsASubcommand) {
  CliResult r = run_cli("import");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("subcommand is required"), std::string::npos) << r.err;
}

// --config takes the layer count from the model's HF config: same trace as --layers 32.
TEST(ImportCli, ConfigGivesTheLayerCount) {
  std::string dir = temp_dir();
  CliResult a = run_cli("import kineto " + nccl_pair() + " -o " + dir + "/a.json --layers 32 --model llama-3.1-8b -q");
  CliResult b = run_cli("import kineto " + nccl_pair() + " -o " + dir + "/b.json --config llama-3.1-8b -q");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(slurp(dir + "/a.json"), slurp(dir + "/b.json"));
  expect_refused(nccl_pair(), "--config no-such-model", "no-such-model");
}

// A graph-mode profile: shapes from --config and the run's tokens / KV length; the summary
// names the kernels that were not recognised.
TEST(ImportCli, GraphTraceTakesShapesFromTheConfig) {
  std::string out = temp_dir() + "/graph.json";
  CliResult r = run_cli("import kineto " + kDir + "graph/sglang_tp1_synthetic.json -o " + out + " --config " + kDir +
                        "graph/tiny_llama.json --tokens 4 --kv-len 128");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("shapes: from --config tiny_llama"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unrecognised kernels: 5 (BatchQKApplyRotaryPosIdsCosSinCacheKernel x4"), std::string::npos) << r.out;
  CliResult i = run_cli("inspect " + out);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("40 ops over 4 layers"), std::string::npos) << i.out;
}

TEST(ImportCli, GraphBadInputsExit2WithoutOutput) {
  const std::string cfg = " --tokens 4 --kv-len 2048 --config llama-3.1-8b";
  expect_refused(kDir + "bad/rocm_graph.json", "", "expected an NVIDIA GPU");
  expect_refused(kDir + "graph/sglang_tp1_synthetic.json", cfg, "num_hidden_layers is 32, but the step's 40 kernels");
  expect_refused(kDir + "graph/llama8b_tp2_t4_nccl_graph_rank0.json.gz " + kDir + "bad/graph_tp2_missing_step_rank1.json.gz",
                 cfg, "not the ranks of one run");
  expect_refused(kDir + "graph/sglang_tp1_synthetic.json", "--config " + kDir + "graph/tiny_llama.json --kv-len 128",
                 "--tokens: required");
}

// The graph-mode Llama-3.1-8B TP1 verify step recorded on one H200 by tools/record_graph_trace.py
// (trimmed with tools/trim_kineto.py): every GEMM, attention and norm typed, 32 layers numbered
// without allreduces, and the simulator with the recorded op times within 5 % of the step time
// the recording measured over its graph replays. Skips until the recording is in the repository.
TEST(ImportCli, RecordedGraphStepMatchesItsRecording) {
  const std::string trace = kDir + "graph/llama8b_tp1_t4_graph.json.gz";
  const std::string measured = kDir + "graph/llama8b_tp1_t4_graph.measured.json";
  if (!file_exists(trace) || !file_exists(measured)) GTEST_SKIP() << "no recording at " << trace;
  const std::string dir = temp_dir();
  CliResult r = run_cli("import kineto " + trace + " --config llama-3.1-8b --tokens 4 --kv-len 2048 -o " + dir +
                        "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto t = nlohmann::json::parse(slurp(dir + "/t.json"));
  std::map<std::string, int> kinds;
  for (const auto& op : t["steps"][0]["ops"]) ++kinds[op["kind"].get<std::string>()];
  EXPECT_EQ(kinds["gemm"], 4 * 32) << r.out;
  EXPECT_EQ(kinds["attention"], 32) << r.out;
  EXPECT_EQ(kinds["rmsnorm"], 2 * 32 + 1) << r.out;
  EXPECT_EQ(kinds["act"], 32) << r.out;
  EXPECT_EQ(kinds["lm_head"], 1) << r.out;
  EXPECT_NE(r.out.find("32 layers of"), std::string::npos) << r.out;
  CliResult run = run_cli("run " + dir + "/t.json --backend sim --op-times measured --strategy nccl --json " + dir + "/r.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const double sim_us = nlohmann::json::parse(slurp(dir + "/r.json"))["results"][0]["verify_us"].get<double>();
  const double recorded_us = nlohmann::json::parse(slurp(measured))["step_us_median"].get<double>();
  EXPECT_NEAR(sim_us, recorded_us, 0.05 * recorded_us) << run.out;
}
