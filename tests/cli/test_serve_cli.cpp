#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

using namespace eaglesim::test;
using nlohmann::json;

namespace {
const char* kDeployment =
    "serve --model llama-3.1-8b --topology 8x-h100-nvswitch --tp 1 --num-prompts 200 --random-input-len 512 "
    "--random-output-len 256 --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 "
    "--accept-len 2.6";
const std::string kServe = std::string(kDeployment) + " --max-concurrency 16";
}  // namespace

// bench_serving's summary, plain and EAGLE-3 side by side, and the same figures in the JSON.
TEST(ServeCli, PrintsTheBenchmarkSummaryPlainAndSpeculative) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kServe) + " --json " + dir + "/s.json --csv " + dir + "/r.csv --timeline " +
                              dir + "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* label : {"Serving Benchmark Result", "Output token throughput (tok/s):", "Mean TPOT (ms):",
                            "P99 ITL (ms):", "Accept length:", "EAGLE-3 3/1/4 vs plain: output tok/s"})
    EXPECT_NE(r.out.find(label), std::string::npos) << label << "\n" << r.out;
  const json j = json::parse(slurp(dir + "/s.json"))["runs"][0];
  EXPECT_EQ(json::parse(slurp(dir + "/s.json"))["format"], "eaglesim-serve");
  ASSERT_EQ(j["cases"].size(), 2u);
  const json& plain = j["cases"][0]["metrics"];
  const json& spec = j["cases"][1]["metrics"];
  EXPECT_EQ(plain["completed"], 200);
  EXPECT_EQ(plain["total_output_tokens"], spec["total_output_tokens"]);  // same seed, same lengths
  EXPECT_NEAR(spec["accept_length"].get<double>(), 2.6, 0.05);
  EXPECT_LE(plain["concurrency"].get<double>(), 16.0 + 1e-9);
  // Throughput is tokens over duration.
  EXPECT_NEAR(plain["output_throughput"].get<double>(),
              plain["total_output_tokens"].get<double>() / plain["duration"].get<double>(), 0.01);
  EXPECT_EQ(j["cases"][1]["engine_rules"]["max_running_requests"], 48);
  // One CSV row per request and configuration; the timeline has every iteration.
  std::size_t lines = 0;
  for (char c : slurp(dir + "/r.csv")) lines += c == '\n';
  EXPECT_EQ(lines, 1u + 2 * 200);
  const json t = json::parse(slurp(dir + "/t.json"));
  std::size_t iterations = 0;
  for (const json& e : t["traceEvents"]) iterations += e["ph"] == "X";
  EXPECT_EQ(iterations, plain["prefill_forwards"].get<std::size_t>() + plain["decode_forwards"].get<std::size_t>() +
                            spec["prefill_forwards"].get<std::size_t>() + spec["decode_forwards"].get<std::size_t>());
}

TEST(ServeCli, SameSeedSameNumbers) {
  const std::string dir = temp_dir();
  const CliResult a = run_cli(std::string(kServe) + " --json " + dir + "/a.json");
  const CliResult b = run_cli(std::string(kServe) + " --json " + dir + "/b.json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(json::parse(slurp(dir + "/a.json"))["runs"], json::parse(slurp(dir + "/b.json"))["runs"]);
}

// Capacity: the highest Poisson rate meeting the SLO, per configuration; at that rate the run
// meets it.
TEST(ServeCli, SloFindsTheHighestRateThatMeetsIt) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kDeployment) + " --slo mean_tpot_ms=12,p99_ttft_ms=1000 --json " +
                              dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("capacity under mean_tpot_ms <= 12, p99_ttft_ms <= 1000"), std::string::npos) << r.out;
  const json j = json::parse(slurp(dir + "/s.json"))["runs"][0];
  for (const json& c : j["cases"]) {
    ASSERT_TRUE(c["capacity"]["load"].is_number()) << c["label"];
    EXPECT_LE(c["capacity"]["metrics"]["mean_tpot_ms"].get<double>(), 12.0);
    EXPECT_LE(c["capacity"]["metrics"]["p99_ttft_ms"].get<double>(), 1000.0);
  }
}

// A measured bench_serving result beside the prediction, with the error per figure.
TEST(ServeCli, ComparePutsTheMeasuredResultBeside) {
  const std::string dir = temp_dir();
  const std::string measured = dir + "/bench.json";
  {
    std::FILE* f = std::fopen(measured.c_str(), "w");
    std::fputs("{\"backend\": \"sglang\", \"completed\": 200, \"output_throughput\": 2000.0, \"mean_ttft_ms\": 50.0, "
               "\"mean_tpot_ms\": 7.5, \"accept_length\": 2.6, \"total_token_throughput\": 6000}",
               f);
    std::fclose(f);
  }
  const CliResult r = run_cli(std::string(kServe) + " --compare " + measured + " --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured"), std::string::npos);
  const json j = json::parse(slurp(dir + "/s.json"))["runs"][0];
  EXPECT_EQ(j["measured"]["values"]["output_throughput"], 2000.0);
  EXPECT_EQ(j["measured"]["values"]["total_throughput"], 6000.0);  // vLLM's name read as bench_serving's
  EXPECT_EQ(j["measured"]["compared_with"], "EAGLE-3 3/1/4");
}

// vLLM's scheduler: mixed forwards, its batch defaults.
TEST(ServeCli, VllmRunsMixedSteps) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli("serve --model llama-3.1-8b --topology 8x-h100-nvswitch --engine vllm --num-prompts 100 "
                              "--request-rate 20 --num-speculative-tokens 3 --accept-len 2.4 --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(slurp(dir + "/s.json"))["runs"][0];
  EXPECT_EQ(j["cases"][0]["engine_rules"]["token_budget"], 8192);
  EXPECT_EQ(j["cases"][0]["engine_rules"]["max_running_requests"], 1024);
  EXPECT_GT(j["cases"][0]["metrics"]["mixed_forwards"].get<int>(), 0);
  EXPECT_EQ(j["workload"]["request_rate"], 20.0);
}

// Several deployments: one instance per topology x TP, a summary per deployment with the GPUs a
// traffic needs; a TP the topology cannot hold is listed, not fatal.
TEST(ServeCli, CapacityPerTopologyAndTp) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "serve --model llama-3.1-8b --topology 8x-h100-nvswitch,2x-h200-nvlink --tp 1,4 --num-prompts 100 "
      "--random-input-len 512 --random-output-len 128 --slo mean_tpot_ms=15,p99_ttft_ms=2000 --traffic 30 --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(slurp(dir + "/s.json"));
  EXPECT_EQ(j["runs"].size(), 3u);  // 2x-h200-nvlink cannot hold TP4
  ASSERT_EQ(j["skipped"].size(), 1u);
  EXPECT_NE(j["skipped"][0].get<std::string>().find("2x-h200-nvlink TP4"), std::string::npos);
  EXPECT_NE(r.out.find("per deployment (capacity under mean_tpot_ms <= 15, p99_ttft_ms <= 2000)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPUs@30/s"), std::string::npos) << r.out;
  for (const json& run : j["runs"]) {
    const json& cap = run["cases"][0]["capacity"];
    ASSERT_TRUE(cap["load"].is_number());
    EXPECT_EQ(cap["gpus"].get<double>(), std::ceil(30.0 / cap["load"].get<double>() - 1e-9) * run["deployment"]["tp"].get<int>());
  }
}

// A load ladder: one run per listed load with the same step grid, and where speculation stops
// paying as the load grows.
TEST(ServeCli, LoadLadderSaysWhereSpeculationStopsPaying) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kDeployment) + " --max-concurrency 2,64 --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(slurp(dir + "/s.json"));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["workload"]["max_concurrency"], 2);
  EXPECT_EQ(j["runs"][1]["workload"]["max_concurrency"], 64);
  EXPECT_LE(j["runs"][1]["cases"][1]["metrics"]["peak_running_requests"].get<int>(), 48);  // SGLang's EAGLE cap
  EXPECT_NE(r.out.find("8x-h100-nvswitch TP1: speculation "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("       c64 EAGLE-3 3/1/4"), std::string::npos) << r.out;
}

// --compare alone: the result's own workload is simulated (its requests' lengths, its
// concurrency), from the last run of a bench_serving JSON Lines file.
TEST(ServeCli, CompareSimulatesTheResultsOwnWorkload) {
  const std::string dir = temp_dir();
  const std::string results = dir + "/bench.jsonl";
  {
    std::FILE* f = std::fopen(results.c_str(), "w");
    std::fputs("{\"completed\": 10, \"output_throughput\": 1.0, \"max_concurrency\": 2}\n"
               "{\"completed\": 3, \"failed\": 0, \"output_throughput\": 900.0, \"mean_tpot_ms\": 8.0, "
               "\"max_concurrency\": 3, \"request_rate\": \"inf\", \"input_lens\": [100, 200, 300], "
               "\"output_lens\": [10, 20, 30]}\n",
               f);
    std::fclose(f);
  }
  const CliResult r = run_cli("serve --model llama-3.1-8b --topology 8x-h100-nvswitch --compare " + results + " --json " +
                              dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json run = json::parse(slurp(dir + "/s.json"))["runs"][0];
  EXPECT_EQ(run["workload"]["num_prompts"], 3);
  EXPECT_EQ(run["workload"]["max_concurrency"], 3);
  EXPECT_EQ(run["workload"]["dataset"], results);
  EXPECT_EQ(run["cases"][0]["metrics"]["total_output_tokens"], 60);
  EXPECT_EQ(run["measured"]["values"]["output_throughput"], 900.0);
  EXPECT_NE(r.out.find("workload from " + results + " (line 2, its last run)"), std::string::npos) << r.out;
}

// SGLang's DeepSeek recipe: TP16 over two nodes with EP16, DP attention and the MTP layer as the
// draft (NEXTN, its automatic 3/1/4): one scheduler per DP rank, the per-rank limits in the
// output, the MTP layer named as the draft.
TEST(ServeCli, DpAttentionWithTheMtpDraft) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "serve --model deepseek-v3 --topology 2x8-h200-nvswitch-ib400 --weight-dtype fp8 --tp 16 --ep-size 16 "
      "--enable-dp-attention --speculative-algorithm NEXTN --accept-len 2.4 --num-prompts 64 --random-input-len 256 "
      "--random-output-len 64 --max-concurrency 32 --json " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"TP16 EP16 DPA", "per DP rank (16 ranks)", "MTP 3/1/4 vs plain", "auto_choose_speculative_params"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  const json j = json::parse(slurp(dir + "/s.json"))["runs"][0];
  EXPECT_EQ(j["deployment"]["layout"], "TP16 EP16 DPA");
  EXPECT_EQ(j["deployment"]["draft_model"], "deepseek-v3 (MTP layer)");
  const json& rules = j["cases"][1]["engine_rules"];
  EXPECT_EQ(rules["dp_ranks"], 16);
  EXPECT_EQ(rules["max_running_requests"], 3);  // SGLang's 48 with EAGLE, // 16
  EXPECT_EQ(rules["token_budget"], 512);        // chunked_prefill_size 8192 // 16
  EXPECT_EQ(j["cases"][1]["metrics"]["completed"], 64);
}
