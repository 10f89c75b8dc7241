// eaglesim run, end to end: the golden A/B table, output files, and the error exits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

namespace eaglesim::test {
namespace {

const std::string kData = EAGLESIM_TEST_DATA;
// Every compute op of this trace carries its time and the topology calibrates every allreduce
// size, so the numbers below are sums of the fixtures' values (worked out in the golden's
// companion test FusedVerifyIsHandComputable).
const std::string kScenario = "run " + kData + "/run_small_trace.json --topology " + kData +
                              "/run_topo_2gpu.json --op-times measured --accept-rate 0.7";

// Regenerate with EAGLESIM_UPDATE_GOLDEN=1 after an intended change; review the diff.
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = kData + "/golden/" + name;
  const char* update = std::getenv("EAGLESIM_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream f(path, std::ios::binary);
    f << actual;
    ASSERT_TRUE(f.good()) << "cannot write " << path;
    GTEST_SKIP() << "golden updated: " << path;
  }
  ASSERT_TRUE(file_exists(path)) << path << " missing; run with EAGLESIM_UPDATE_GOLDEN=1";
  EXPECT_EQ(slurp(path), actual) << "output differs from " << path;
}

TEST(RunCli, GoldenTable) {
  CliResult r = run_cli(kScenario + " --strategy nccl,oneshot,fused,ideal");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The path of the data directory differs between checkouts: keep the golden relative.
  std::string out = r.out;
  for (std::size_t pos; (pos = out.find(kData)) != std::string::npos;) out.replace(pos, kData.size(), "DATA");
  expect_golden("run_small.txt", out);
  // Same input, same output.
  CliResult again = run_cli(kScenario + " --strategy nccl,oneshot,fused,ideal");
  EXPECT_EQ(again.out, r.out);
}

TEST(RunCli, FusedVerifyIsHandComputable) {
  std::string dir = temp_dir();
  CliResult r = run_cli(kScenario + " --strategy nccl,fused --json " + dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(slurp(dir + "/r.json"));
  const auto& nccl = doc["results"][0];
  const auto& fused = doc["results"][1];
  // Per layer 146.5 us of compute, 4 layers, + embed 3 + final norm 2 + lm_head 90 = 681;
  // 8 allreduces of 32 KiB at 25 us (nccl calibration).
  EXPECT_DOUBLE_EQ(nccl["compute_us"].get<double>(), 681.0);
  EXPECT_DOUBLE_EQ(nccl["verify_us"].get<double>(), 881.0);
  EXPECT_EQ(nccl["allreduce_count"], 8);
  // fused absorbs 4 x (1.5 + 2) after the attention allreduces, 4 x 1.5 residuals and 3 input
  // norms + the final norm after the MLP allreduces: 681 - 28 = 653, + 8 x 11 us.
  EXPECT_DOUBLE_EQ(fused["compute_us"].get<double>(), 653.0);
  EXPECT_DOUBLE_EQ(fused["verify_us"].get<double>(), 741.0);
  // Draft: (146.5 * 0.8 + 95) + 2 x 20 us, three times; decode 4 x 146.5 x 0.9 + 95 + 8 x 20.
  EXPECT_NEAR(nccl["draft_us"].get<double>(), 3 * 252.2, 1e-9);
  EXPECT_NEAR(nccl["decode_us"].get<double>(), 782.4, 1e-9);
  EXPECT_NEAR(nccl["tokens_per_s"].get<double>(), 2.533 / (881.0 + 756.6) * 1e6, 1e-6);
  // Speed-ups are against the fastest plain decoding the run can deploy: fused's, 669.0 us a token
  // (the engines' dispatch takes the fused path on this test machine).
  EXPECT_EQ(doc["scenario"]["plain_baseline"], "fused");
  EXPECT_NEAR(fused["decode_us"].get<double>(), 669.0, 1e-9);
  EXPECT_NEAR(nccl["speedup_vs_decode"].get<double>(), 2.533 * 669.0 / (881.0 + 756.6), 1e-9);
  EXPECT_EQ(doc["scenario"]["draft_tokens"], 3);
  EXPECT_EQ(doc["scenario"]["acceptance"]["mode"], "rate");
}

// SGLang and vLLM run a residual add and the RMSNorm after it as one kernel; so does the
// simulator unless --no-fused-add-norm. Llama-3.1-8B TP1 on 2 x H200: every one of the verify
// step's 64 pairs is a launch gap (2.5 us) cheaper fused, and the notes and JSON say which ran.
TEST(RunCli, NoFusedAddNormRunsTheResidualAddAndNormAsTwoKernels) {
  const std::string dir = temp_dir();
  const std::string trace = "traces/llama-3.1-8b_tp1_t4.json";
  // A preset without fitted models (the H200 presets carry them): the roofline's per-kernel cost
  // is what the pair count pins.
  const std::string args = "run " + trace + " --topology 8x-h100-nvswitch --strategy nccl --accept-rate 0.7";
  const CliResult fused = run_cli(args + " --verbose --json " + dir + "/fused.json");
  ASSERT_EQ(fused.exit_code, 0) << fused.err;
  const CliResult apart = run_cli(args + " --no-fused-add-norm --json " + dir + "/apart.json");
  ASSERT_EQ(apart.exit_code, 0) << apart.err;

  int pairs = 0;  // residual_add followed by an rmsnorm of the same shape in the verify step
  const auto t = nlohmann::json::parse(slurp(std::string(EAGLESIM_REPO) + "/" + trace));
  for (const auto& step : t["steps"]) {
    if (step["name"] != "verify") continue;
    const auto& ops = step["ops"];
    for (std::size_t i = 0; i + 1 < ops.size(); ++i)
      pairs += ops[i]["kind"] == "residual_add" && ops[i + 1]["kind"] == "rmsnorm" &&
               ops[i]["tokens"] == ops[i + 1]["tokens"] && ops[i]["hidden"] == ops[i + 1]["hidden"];
  }
  EXPECT_EQ(pairs, 64);  // 32 layers x (attention add + post-attention norm, MLP add + next input norm)

  const auto f = nlohmann::json::parse(slurp(dir + "/fused.json"));
  const auto a = nlohmann::json::parse(slurp(dir + "/apart.json"));
  EXPECT_EQ(f["scenario"]["fused_add_norm"], true);
  EXPECT_EQ(a["scenario"]["fused_add_norm"], false);
  const double fused_us = f["results"][0]["verify_us"].get<double>();
  const double apart_us = a["results"][0]["verify_us"].get<double>();
  EXPECT_NEAR(apart_us - fused_us, pairs * 2.5, 1e-6);
  EXPECT_EQ(f["results"][0]["verify_kind_us"].count("residual_add"), 0u) << "every add ran inside a norm's kernel";
  EXPECT_GT(a["results"][0]["verify_kind_us"]["residual_add"].get<double>(), 0.0);

  auto has_note = [](const nlohmann::json& notes, const std::string& text) {
    for (const auto& n : notes)
      if (n.get<std::string>().find(text) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has_note(f["results"][0]["notes"], "verify: 64 residual_add + rmsnorm pairs run as one fused kernel each"));
  EXPECT_FALSE(has_note(f["scenario"]["notes"], "--no-fused-add-norm"));
  EXPECT_FALSE(has_note(a["results"][0]["notes"], "fused kernel each"));
  EXPECT_TRUE(has_note(a["scenario"]["notes"], "--no-fused-add-norm: every residual_add and rmsnorm runs as its own kernel"));
  EXPECT_NE(fused.out.find("residual_add + rmsnorm pairs run as one fused kernel each"), std::string::npos) << fused.out;
  EXPECT_NE(apart.out.find("--no-fused-add-norm: every residual_add"), std::string::npos) << apart.out;
  EXPECT_NE(run_cli("run --help").out.find("--no-fused-add-norm"), std::string::npos);
}

// A version-2 trace's speculative configuration drives the acceptance: the tree model at its
// (num_steps, eagle_topk, num_draft_tokens), not a chain of its draft tokens.
TEST(RunCli, TreeTraceUsesItsSpeculativeConfigForAcceptance) {
  const std::string dir = temp_dir();
  ASSERT_EQ(run_cli("gen --model models/llm/llama-3.1-8b.json --tp 1 --batch 4 --speculative-num-steps 5 "
                    "--speculative-eagle-topk 4 --speculative-num-draft-tokens 8 --kv-len 1024 -o " + dir + "/t.json")
                .exit_code,
            0);
  const CliResult r = run_cli("run " + dir + "/t.json --topology 2x-h200-nvlink --strategy nccl --accept-rate 0.6");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tree model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("num_steps 5, eagle_topk 4, num_draft_tokens 8"), std::string::npos) << r.out;
  // --draft-tokens asks for a chain of the same verify shape (D = N + 1); another N is another step.
  const CliResult chain =
      run_cli("run " + dir + "/t.json --topology 2x-h200-nvlink --strategy nccl --accept-rate 0.6 --draft-tokens 7");
  ASSERT_EQ(chain.exit_code, 0) << chain.err;
  const CliResult other =
      run_cli("run " + dir + "/t.json --topology 2x-h200-nvlink --strategy nccl --accept-rate 0.6 --draft-tokens 3");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("--draft-tokens 3: " + dir + "/t.json verifies 8 tokens per request (N = 7)"),
            std::string::npos)
      << other.err;
  EXPECT_EQ(other.out, "");
  EXPECT_EQ(chain.out.find("eagle_topk 4"), std::string::npos) << chain.out;
}

TEST(RunCli, JsonCsvAndTimelineFiles) {
  std::string dir = temp_dir();
  CliResult r = run_cli(kScenario + " --strategy nccl,ideal --json " + dir + "/r.json --csv " + dir +
                        "/r.csv --timeline " + dir + "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(slurp(dir + "/r.json"));
  ASSERT_TRUE(doc.contains("scenario"));
  ASSERT_EQ(doc["results"].size(), 2u);
  for (const char* key : {"strategy", "supported", "verify_us", "compute_us", "comm_us", "comm_fraction",
                          "allreduce_count", "allreduce_mean_us", "draft_us", "decode_us", "tokens_per_cycle",
                          "tokens_per_s", "speedup_vs_decode", "breakeven_accept_rate"})
    EXPECT_TRUE(doc["results"][0].contains(key)) << key;
  EXPECT_EQ(doc["results"][1]["comm_us"], 0.0) << "ideal allreduces are free";
  EXPECT_EQ(doc["best"], "nccl") << "ideal is a bound, not a candidate";

  std::string csv = slurp(dir + "/r.csv");
  EXPECT_EQ(csv.rfind("model,topology,backend,tp,ranks,draft_tokens,batch,strategy,supported,verify_us", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);

  auto tl = nlohmann::json::parse(slurp(dir + "/t.json"));
  int x = 0, drafts = 0;
  std::set<int> pids;
  for (const auto& e : tl["traceEvents"])
    if (e["ph"] == "X") {
      const std::string name = e["name"];
      x += name.rfind("verify | ", 0) == 0;
      drafts += name.rfind("draft ", 0) == 0;
      pids.insert(e["pid"].get<int>());
    }
  EXPECT_EQ(pids.size(), 4u) << "2 strategies x 2 ranks";
  EXPECT_EQ(x, 2 * 2 * 51) << "every verify op on every rank, per strategy";
  EXPECT_GT(drafts, 0) << "the draft forwards of the cycle before it";
}

TEST(RunCli, UnknownStrategyIsExit2WithKnownNames) {
  CliResult r = run_cli(kScenario + " --strategy nccl,warp9");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("warp9"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("oneshot"), std::string::npos) << "lists the known names: " << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(RunCli, UnwritableOutputFailsBeforeWorkAndLeavesNothing) {
  std::string dir = temp_dir();
  CliResult r = run_cli(kScenario + " --strategy nccl --csv " + dir + "/r.csv --json " + dir + "/missing/r.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing/r.json"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/r.csv"));
  EXPECT_FALSE(file_exists(dir + "/missing"));
  EXPECT_TRUE(r.out.empty()) << "no table for a run that did not happen";
}

TEST(RunCli, TraceWithDuplicateKeyIsExit2AndWritesNothing) {
  // steps[0].ops[1] holds "bytes" twice; a parser that kept the last one would run 65536 bytes.
  const std::string dir = temp_dir();
  const std::string trace = kData + "/bad/duplicate_key.json";
  CliResult r = run_cli("run " + trace + " --topology " + kData + "/run_topo_2gpu.json --json " + dir + "/r.json --csv " +
                        dir + "/r.csv");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(trace + ": steps[0].ops[1]: key \"bytes\" appears twice"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/r.json"));
  EXPECT_FALSE(file_exists(dir + "/r.csv"));
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(RunCli, UnsupportedStrategyIsListedNotFatal) {
  CliResult r = run_cli("run " + kData + "/run_small_trace.json --topology " + kData +
                        "/run_topo_nop2p.json --op-times measured --strategy nccl,oneshot");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("unsupported:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oneshot: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("P2P"), std::string::npos) << "says why: " << r.out;
  EXPECT_NE(r.out.find("best: nccl"), std::string::npos) << r.out;
}

TEST(RunCli, BadFlagsAreExit2) {
  EXPECT_EQ(run_cli(kScenario + " --accept-rate 1.5").exit_code, 2);
  EXPECT_EQ(run_cli("run " + kData + "/run_small_trace.json --topology " + kData +
                    "/run_topo_2gpu.json --accept-len 9").exit_code, 2) << "E above N+1";
  EXPECT_EQ(run_cli(kScenario + " --accept-len 2").exit_code, 2) << "rate and length exclude each other";
  EXPECT_EQ(run_cli(kScenario + " --skew-us 0,1,2").exit_code, 2) << "one value per rank";
  EXPECT_EQ(run_cli(kScenario + " --skew-us 0,x").exit_code, 2);
  EXPECT_EQ(run_cli(kScenario + " --backend warp").exit_code, 2);
  EXPECT_EQ(run_cli(kScenario + " --ranks 4").exit_code, 2) << "topology has 2 GPUs";
  EXPECT_EQ(run_cli("run " + kData + "/does_not_exist.json --topology " + kData + "/run_topo_2gpu.json").exit_code, 2);
  for (const char* flag : {" --iters 0", " --warmup -1", " --warmup 1000000000", " --timeout 0", " --timeout 1e30"}) {
    CliResult r = run_cli(kScenario + flag);
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.err;
    EXPECT_NE(r.err.find(std::string(flag).substr(1, std::string(flag).find(' ', 1) - 1)), std::string::npos) << r.err;
  }
}

TEST(RunCli, SkewShowsUpAsWait) {
  std::string dir = temp_dir();
  CliResult r = run_cli(kScenario + " --strategy nccl --skew-us 0,40 --verbose --json " + dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(slurp(dir + "/r.json"));
  // Rank 1 starts 40 us late and arrives last at the first allreduce; after that the ranks are
  // in step, so the verify step is 40 us longer and rank 0 shows it as allreduce time.
  EXPECT_DOUBLE_EQ(doc["results"][0]["verify_us"].get<double>(), 921.0);
  EXPECT_DOUBLE_EQ(doc["results"][0]["comm_us"].get<double>(), 240.0);
  EXPECT_NE(r.out.find("ranks start up to 40.0 us apart"), std::string::npos) << r.out;
}

TEST(RunCli, CudaBackendWithoutCudaIsExit3) {
#ifndef EAGLESIM_EXE_HAS_CUDA
  CliResult r = run_cli("run " + kData + "/run_small_trace.json --backend cuda --strategy nccl");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
#else
  GTEST_SKIP() << "built with CUDA";
#endif
}

}  // namespace
}  // namespace eaglesim::test

namespace eaglesim::test {
namespace {

// `eaglesim run` with no arguments: the seed scenario, and it says which defaults it used.
TEST(RunCliDefaults, NoArgumentsRunsTheSeedScenario) {
  const bool shipped = file_exists(std::string(EAGLESIM_REPO) + "/traces/kimi-k2_tp8_t4.json") &&
                       file_exists(std::string(EAGLESIM_REPO) + "/models/topologies/8x-rtx-pro-6000-pcie5.json");
  CliResult r = run_cli("run");
  if (!shipped) {
    // Without the shipped files the failure must be a clear input error naming what is missing.
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(r.err.find("kimi-k2_tp8_t4") != std::string::npos ||
                r.err.find("8x-rtx-pro-6000-pcie5") != std::string::npos)
        << r.err;
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("defaults: trace traces/kimi-k2_tp8_t4.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("topology 8x-rtx-pro-6000-pcie5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accept rate a=0.7"), std::string::npos) << r.out;
  for (const char* s : {"nccl", "oneshot", "twoshot", "fused", "quant", "ideal"})
    EXPECT_NE(r.out.find(std::string("\n") + s + " "), std::string::npos) << s << " row missing:\n" << r.out;
  EXPECT_NE(r.out.find("best: "), std::string::npos);
}

}  // namespace
}  // namespace eaglesim::test

namespace eaglesim::test {
namespace {

// --acceptance and --accept-probs, end to end: the tokens per cycle the report prices and the
// source it names, in the table and in the JSON report.
const std::string kAcceptanceRun = "run " + std::string(EAGLESIM_TEST_DATA) + "/run_small_trace.json --topology " +
                                   std::string(EAGLESIM_TEST_DATA) + "/run_topo_2gpu.json --op-times measured --strategy nccl";

struct AcceptanceRun {
  CliResult cli;
  nlohmann::json doc;
};

AcceptanceRun run_with(const std::string& flags) {
  const std::string dir = temp_dir();
  AcceptanceRun r{run_cli(kAcceptanceRun + " " + flags + " --json " + dir + "/r.json"), {}};
  if (r.cli.exit_code == 0) r.doc = nlohmann::json::parse(slurp(dir + "/r.json"));
  return r;
}

std::string acceptance_line(const std::string& out) {
  const auto at = out.find("acceptance: ");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

TEST(RunCliAcceptance, TableEntryGivesTokensPerCycle) {
  const std::string table = std::string(EAGLESIM_TEST_DATA) + "/acceptance/measured.json";
  const AcceptanceRun r = run_with("--acceptance " + table);
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.err;
  EXPECT_EQ(acceptance_line(r.cli.out),
            "acceptance: measured accept len E=2.80 from " + table +
                " entries[0] (num_steps 3, eagle_topk 1, num_draft_tokens 4, batch 1: sglang decode log, batch 1)");
  EXPECT_EQ(r.cli.out.find("defaults:"), std::string::npos) << "the measurement, not the default rate, was used";
  const auto& acc = r.doc["scenario"]["acceptance"];
  EXPECT_EQ(acc["mode"], "length");
  EXPECT_EQ(acc["value"], 2.8);
  EXPECT_EQ(acc["tokens_per_cycle"], 2.8);
  EXPECT_EQ(acc["source"]["kind"], "measured_table");
  EXPECT_EQ(acc["source"]["file"], table);
  EXPECT_EQ(acc["source"]["entry"], 0);
  EXPECT_EQ(acc["source"]["batch"], 1);
  EXPECT_EQ(acc["source"]["batch_match"], "exact");
  EXPECT_EQ(acc["source"]["num_draft_tokens"], 4);
  const auto& nccl = r.doc["results"][0];
  EXPECT_EQ(nccl["tokens_per_cycle"], 2.8);
  EXPECT_NEAR(nccl["tokens_per_s"].get<double>(), 2.8 / nccl["cycle_us"].get<double>() * 1e6, 1e-9);
}

TEST(RunCliAcceptance, TableWithoutTheConfigurationFallsBackToTheTreeModel) {
  // The table measures other configurations only: this one is priced by the tree model at the
  // rate the table's entries imply, not at the assumed default.
  const std::string table = std::string(EAGLESIM_TEST_DATA) + "/acceptance/other_configs.json";
  const AcceptanceRun r = run_with("--acceptance " + table);
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.err;
  const auto& src = r.doc["scenario"]["acceptance"]["source"];
  EXPECT_EQ(src["kind"], "tree_model");
  const double a = src["rate"].get<double>();
  EXPECT_NE(a, 0.7);
  const double e = (1 - std::pow(a, 4)) / (1 - a);  // the chain (3, 1, 4)
  EXPECT_EQ(acceptance_line(r.cli.out),
            fmt::format("acceptance: tree model from accept rate a={:.2f} per position (fitted to {}, chain), "
                        "num_steps 3, eagle_topk 1, num_draft_tokens 4: E={:.2f}; {} has no entry for num_steps 3, "
                        "eagle_topk 1, num_draft_tokens 4",
                        a, table, e, table));
  EXPECT_NE(r.cli.out.find(fmt::format("defaults: accept rate a={:.2f} fitted to {}'s 1 measured entry", a, table)),
            std::string::npos)
      << r.cli.out;
  EXPECT_EQ(src["unmatched_table"], table);
  EXPECT_EQ(src["tree_parents"], nlohmann::json::parse("[-1, 0, 1, 2]"));
  EXPECT_NEAR(r.doc["results"][0]["tokens_per_cycle"].get<double>(), e, 1e-9);
}

TEST(RunCliAcceptance, PerRankProbabilities) {
  const AcceptanceRun r = run_with("--accept-probs 0.6");
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.err;
  EXPECT_EQ(acceptance_line(r.cli.out),
            "acceptance: tree model from per-rank acceptance 0.6 (--accept-probs), num_steps 3, eagle_topk 1, "
            "num_draft_tokens 4: E=2.18");
  EXPECT_NEAR(r.doc["results"][0]["tokens_per_cycle"].get<double>(), 1 + 0.6 + 0.36 + 0.216, 1e-12);
  EXPECT_EQ(r.doc["scenario"]["acceptance"]["source"]["rank_probabilities"], "0.6");
}

TEST(RunCliAcceptance, PlainRateReadsAsWithoutTheNewFlags) {
  const AcceptanceRun r = run_with("--accept-rate 0.7");
  ASSERT_EQ(r.cli.exit_code, 0) << r.cli.err;
  EXPECT_EQ(acceptance_line(r.cli.out), "acceptance: accept rate a=0.70 per position (chain), E=2.53 for N=3");
  EXPECT_FALSE(r.doc["scenario"]["acceptance"].contains("source"));
}

TEST(RunCliAcceptance, DraftTokensOverrideLooksUpItsOwnConfiguration) {
  // A (2, 2, 3) tree verifies 3 tokens; -n 2 prices the chain of the same shape, (2, 1, 3): the
  // table's entry for it, measured at batch 4, is the nearest.
  const std::string dir = temp_dir();
  ASSERT_EQ(run_cli("gen --model llama-3.2-1b --tp 1 --speculative-num-steps 2 --speculative-eagle-topk 2 "
                    "--speculative-num-draft-tokens 3 -o " + dir + "/t.json")
                .exit_code,
            0);
  const CliResult r = run_cli("run " + dir + "/t.json --topology 8x-h100-nvswitch --strategy nccl -n 2 --acceptance " +
                              std::string(EAGLESIM_TEST_DATA) + "/acceptance/measured.json --json " + dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir + "/r.json"))["results"][0]["tokens_per_cycle"], 2.2);
  EXPECT_NE(acceptance_line(r.out).find("batch 4, the nearest measured to batch 1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace eaglesim::test

namespace eaglesim::test {
namespace {

// On 8 PCIe GPUs without NVLink SGLang and vLLM run NCCL: the fastest strategy needs eaglesim's
// kernel, so the run also names what can be deployed and gives the verdict for it; the lossy fp8
// allreduce is shown and left out of "best" unless --allow-lossy.
TEST(RunCliDeployment, BestIsSplitFromWhatAnEngineRunsAndLossyIsLeftOut) {
  const CliResult r = run_cli("run --strategy nccl,twoshot,quant");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  deployable: nccl (SGLang (default); vLLM (default))\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  eaglesim's kernel or an engine patch: twoshot\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  lossy (changes the numbers): quant\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nbest: twoshot ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ndeployable: nccl ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nleft out: quant ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nverdict (nccl, deployable): EAGLE-3 is "), std::string::npos) << r.out;

  const CliResult lossy = run_cli("run --strategy nccl,twoshot,quant --allow-lossy");
  ASSERT_EQ(lossy.exit_code, 0) << lossy.err;
  EXPECT_NE(lossy.out.find("\nbest: quant ("), std::string::npos) << lossy.out;
  EXPECT_EQ(lossy.out.find("\nleft out: "), std::string::npos) << lossy.out;
}

// With an engine's dispatch in the run, the verdict is for what that engine would do.
TEST(RunCliDeployment, VerdictFollowsTheEnginePath) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli("run --strategy oneshot,sglang --json " + dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nverdict (what sglang runs here): "), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(doc["verdict"]["strategy"], "sglang");
  EXPECT_EQ(doc["results"][0]["deployable"], false);
  EXPECT_EQ(doc["results"][1]["deployable"], nullptr);  // an engine's own dispatch: nothing to deploy
}

}  // namespace
}  // namespace eaglesim::test

namespace eaglesim::test {
namespace {

// Brief by default: the caveats first, the per-kind split in the table, the per-strategy notes
// counted (all of them with --verbose).
TEST(RunCliBrief, CaveatsFirstPerKindSplitAndNotesOnRequest) {
  const std::string args = "run traces/llama-3.1-8b_tp2_t4.json --topology 2x-h200-nvlink";
  const CliResult brief = run_cli(args);
  ASSERT_EQ(brief.exit_code, 0) << brief.err;
  EXPECT_NE(brief.out.find("verify step by op kind (us, the critical rank):\nstrategy    gemm  attention  allreduce"),
            std::string::npos)
      << brief.out;
  EXPECT_NE(brief.out.find("notes: 31 more on fusion, kernels and timing per strategy (--verbose shows them)"),
            std::string::npos)
      << brief.out;
  EXPECT_EQ(brief.out.find("\n  - "), std::string::npos) << brief.out;
  const CliResult verbose = run_cli(args + " --verbose");
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  std::size_t notes = 0;
  for (std::size_t at = verbose.out.find("\n  - "); at != std::string::npos; at = verbose.out.find("\n  - ", at + 1))
    ++notes;
  EXPECT_EQ(notes, 31u) << verbose.out;

  // A scenario caveat comes before the tables.
  const CliResult ignored = run_cli("run traces/kimi-k2_tp8_t4.json --topology 8x-l40s-pcie4 --ignore-memory --strategy nccl");
  ASSERT_EQ(ignored.exit_code, 0) << ignored.err;
  EXPECT_LT(ignored.out.find("caveats:\n  - memory: kimi-k2-instruct at TP8 does not fit"), ignored.out.find("strategy "))
      << ignored.out;
}

}  // namespace
}  // namespace eaglesim::test

namespace eaglesim::test {
namespace {

// --timeline draws the whole cycle where the trace has the draft side: the draft-extend pass, each
// draft forward, then the verify step, one after another.
TEST(RunCliTimeline, TheWholeCycleOfAnEngineTrace) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli("run traces/llama-3.1-8b_tp1_b8_s5k4d8_engine.json --topology 8x-h200-nvswitch "
                              "--strategy nccl --timeline " + dir + "/t.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(slurp(dir + "/t.json"));
  const auto& events = doc.is_object() ? doc["traceEvents"] : doc;
  double extend_end = 0, first_draft = 1e18, last_draft_end = 0, verify_start = 1e18;
  int drafts = 0;
  for (const auto& e : events) {
    if (e["ph"] != "X") continue;
    const std::string name = e["name"];
    const double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    if (name.rfind("draft_extend | ", 0) == 0) extend_end = std::max(extend_end, end);
    if (name.rfind("draft ", 0) == 0 && name.rfind("draft_extend", 0) != 0) {
      first_draft = std::min(first_draft, ts);
      last_draft_end = std::max(last_draft_end, end);
      drafts += name.rfind("draft 4 | ", 0) == 0;
    }
    if (name.rfind("verify | ", 0) == 0) verify_start = std::min(verify_start, ts);
  }
  EXPECT_GT(drafts, 0) << "four draft forwards (S = 5 beside the draft-extend pass)";
  EXPECT_LE(extend_end, first_draft + 1e-6);
  EXPECT_LE(last_draft_end, verify_start + 1e-6);
}

}  // namespace
}  // namespace eaglesim::test
