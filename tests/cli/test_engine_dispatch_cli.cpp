// The engine strategies end to end: the must-show runs (Kimi-K2 TP8 on 8 x RTX PRO 6000 and 8 x
// H200, Llama-3.1-8B TP2 on 2 x H200) show every engine's path per allreduce with its reason,
// --engine-option reaches the dispatch and the JSON, and bench-comm --backend sim prints the
// predicted table for every preset, with its JSON and CSV.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

namespace eaglesim::test {
namespace {

const std::string kRepo = EAGLESIM_REPO;

std::string must_show(const std::string& trace, const std::string& topo, const std::string& extra = "") {
  return "run " + kRepo + "/traces/" + trace + ".json --topology " + topo +
         " --strategy sglang,vllm,nccl,oneshot" + extra;
}

void expect_contains(const std::string& text, const std::string& fragment) {
  EXPECT_NE(text.find(fragment), std::string::npos) << "missing: " << fragment << "\nin:\n" << text;
}

}  // namespace

// The must-show runs: trace, topology, and what the output must say.
struct MustShow {
  const char* trace;
  const char* topology;
  std::vector<std::string> says;
};

TEST(EngineDispatchCli, MustShowRunsGiveEveryEnginesPathAndWhy) {
  const std::vector<MustShow> runs{
      {"kimi-k2_tp8_t4",
       "8x-rtx-pro-6000-pcie5",
       {"engine dispatch, verify step", "  sglang: 123 x 56 KiB -> NCCL [nccl]", "  vllm: 123 x 56 KiB -> NCCL [nccl]",
        "custom allreduce off: 8 PCIe GPUs without NVLink",
        // The architecture came from models/llm/kimi-k2-instruct.json; SM 12.0 keeps fusion off.
        "server_args.py turns it on for DeepseekV3ForCausalLM only on SM 9.0 or 10.x, this GPU is SM 12.0",
        "allreduce+RMSNorm fusion off: -O2 turns it on for SM 9.0 and 10.x, this GPU is SM 12.0"}},
      {"kimi-k2_tp8_t4",
       "8x-h200-nvswitch",
       {"  sglang: 123 x 56 KiB + residual add + RMSNorm -> FlashInfer allreduce+RMSNorm one-shot [fused]",
        "  vllm: 123 x 56 KiB + residual add + RMSNorm -> FlashInfer allreduce+RMSNorm one-shot [fused]",
        "torch symmetric memory on: SM 9.0, 8 ranks, NVLink multicast"}},
      {"llama-3.1-8b_tp2_t4",
       "2x-h200-nvlink",
       {"  sglang: 65 x 32 KiB -> custom allreduce one-shot [oneshot]", "2 ranks always run one-shot",
        "  vllm: 65 x 32 KiB + residual add + RMSNorm -> FlashInfer allreduce+RMSNorm one-shot [fused]"}},
  };
  for (const MustShow& m : runs) {
    SCOPED_TRACE(std::string(m.trace) + " on " + m.topology);
    const CliResult r = run_cli(must_show(m.trace, m.topology));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const std::string& fragment : m.says) expect_contains(r.out, fragment);
  }
}

TEST(EngineDispatchCli, EngineOptionsChangeThePathsAndTheJsonListsThem) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(must_show("kimi-k2_tp8_t4", "8x-h200-nvswitch",
                                        " --engine-option disable_custom_all_reduce=true,sglang.enforce_disable_"
                                        "flashinfer_allreduce_fusion=true,vllm.fuse_allreduce_rms=false --json " +
                                            dir + "/r.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_contains(r.out, "  sglang: 123 x 56 KiB -> NCCL [nccl]");
  expect_contains(r.out, "custom allreduce off: disable_custom_all_reduce");
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/r.json"));
  ASSERT_EQ(j["results"][0]["strategy"], "sglang");
  const auto& g = j["results"][0]["dispatch"]["verify"][0];
  EXPECT_EQ(g["count"], 123);
  EXPECT_EQ(g["path"], "NCCL");
  EXPECT_EQ(g["runs_as"], "nccl");
  EXPECT_EQ(g["ops"].size(), 123u);
  EXPECT_FALSE(j["results"][2].contains("dispatch")) << "eaglesim's own strategies carry no dispatch";
  EXPECT_TRUE(j["results"][1]["dispatch"].contains("draft"));
}

TEST(EngineDispatchCli, BenchCommSimForEveryPreset) {
  // Every shipped preset, read from the directory, so a new one is covered without a list here.
  std::vector<std::string> presets;
  for (const auto& e : std::filesystem::directory_iterator(kRepo + "/models/topologies"))
    if (e.path().extension() == ".json") presets.push_back(e.path().stem().string());
  std::sort(presets.begin(), presets.end());
  ASSERT_GE(presets.size(), 10u);
  for (const std::string& topo : presets) {
    SCOPED_TRACE(topo);
    const CliResult r = run_cli("bench-comm --backend sim --topology " + topo);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_contains(r.out, "predicted by the cost models, not measured");
    for (const char* s : {"nccl", "oneshot", "twoshot", "fused", "quant", "auto", "sglang", "vllm"}) expect_contains(r.out, s);
    expect_contains(r.out, "# engine paths");
    expect_contains(r.out, "\n     64M ");  // 1K..64M by default
    // The table's rows fit 120 columns (the comment lines and notes wrap as text does).
    std::size_t start = 0;
    for (std::size_t end; (end = r.out.find('\n', start)) != std::string::npos; start = end + 1)
      if (r.out[start] != '#') EXPECT_LE(end - start, 120u) << r.out.substr(start, end - start);
    const CliResult wide = run_cli("bench-comm --backend sim --wide --topology " + topo);
    ASSERT_EQ(wide.exit_code, 0) << wide.err;
    expect_contains(wide.out, "  67108864   33554432  bf16 |");
  }
}

TEST(EngineDispatchCli, BenchCommSimJsonAndCsv) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli("bench-comm --backend sim --topology 8x-h200-nvswitch --strategy nccl,vllm --sizes 64K,1M "
                              "--ranks 4 --json " + dir + "/b.json --csv " + dir + "/b.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/b.json"));
  EXPECT_EQ(j["backend"], "sim");
  EXPECT_EQ(j["topology"], "8x-h200-nvswitch");
  EXPECT_EQ(j["ranks"], 4);
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& v = j["rows"][0]["strategies"]["vllm"];
  EXPECT_EQ(v["path"], "custom allreduce one-shot");
  EXPECT_EQ(v["runs_as"], "oneshot");
  EXPECT_GT(v["graph_us"].get<double>(), 0.0);
  const std::string csv = slurp(dir + "/b.csv");
  expect_contains(csv, "bytes,count,dtype,strategy,graph_us,context_us,algbw_gbs,busbw_gbs,wrong,fastest,note,supported,"
                       "path,runs_as,reason\n");
  expect_contains(csv, "65536,32768,bf16,vllm,");
}

TEST(EngineDispatchCli, BenchCommSimNcclChannels) {
  // NCCL's search gives 2 channels on two AMD sockets (comm/nccl_channels.hpp); --nccl-channels 8
  // prices NCCL_MIN_NCHANNELS=8, bound by the links again (voipmonitor/rtx6kpro: 22.2 and 37.6
  // GB/s busBW at 32 MiB).
  const std::string cmd = "bench-comm --backend sim --topology 8x-rtx-pro-6000-pcie5-2socket --strategy nccl --sizes 32M --wide";
  const CliResult def = run_cli(cmd);
  ASSERT_EQ(def.exit_code, 0) << def.err;
  expect_contains(def.out, "  33554432   16777216  bf16 |  2660.01  2660.01   12.61   22.08 |");
  const CliResult eight = run_cli(cmd + " --nccl-channels 8");
  ASSERT_EQ(eight.exit_code, 0) << eight.err;
  expect_contains(eight.out, "  33554432   16777216  bf16 |  1591.76  1591.76   21.08   36.89 |");
  expect_contains(eight.out, "# NCCL on 8 channels (--nccl-channels: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = 8)\n");
  EXPECT_EQ(def.out.find("# NCCL on"), std::string::npos);
  const CliResult bad = run_cli(cmd + " --nccl-channels 0");
  EXPECT_EQ(bad.exit_code, 2);
  expect_contains(bad.err, "--nccl-channels");
  const CliResult cuda = run_cli("bench-comm --strategy nccl --sizes 32M --nccl-channels 8");
  EXPECT_EQ(cuda.exit_code, 2);
  expect_contains(cuda.err, "NCCL_MIN_NCHANNELS");
}

}  // namespace eaglesim::test
