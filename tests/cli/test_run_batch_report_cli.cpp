// `eaglesim run` on batched traces of the engine's cycle: the throughput at the batch (per
// request, in all, per GPU; plain decoding at the same batch), the cycle's parts and the verdict,
// the same in the table, the JSON and the CSV, each checked against what it is made of.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

namespace eaglesim::test {
namespace {

using json = nlohmann::json;

const std::string kH200 = "--topology 8x-h200-nvswitch";

// A trace from gen with SGLang's flags and the engine's cycle, in `dir`.
std::string gen_cycle(const std::string& dir, const std::string& model, const std::string& draft, int tp, int batch,
                      const std::string& spec) {
  const std::string out = dir + "/" + model + ".json";
  const CliResult g = run_cli("gen --model models/llm/" + model + ".json --draft models/llm/" + draft + ".json --tp " +
                              std::to_string(tp) + " --batch " + std::to_string(batch) + " " + spec +
                              " --kv-len 2048 --engine-cycle -o " + out);
  EXPECT_EQ(g.exit_code, 0) << g.err;
  return out;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, sep);) out.push_back(cell);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

// The CSV's rows as column -> cell.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
  std::stringstream ss(text);
  std::string line;
  std::getline(ss, line);
  const std::vector<std::string> header = split(line, ',');
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(ss, line)) {
    const std::vector<std::string> cells = split(line, ',');
    EXPECT_EQ(cells.size(), header.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

double num(const json& j, const char* key) { return j.at(key).get<double>(); }

TEST(RunBatchReport, ThroughputAtTheBatchAndTheCyclePartsAddUp) {
  const std::string dir = temp_dir();
  // Llama-3.1-8B at TP1, 8 requests of SGLang's (5, 4, 8): 4 draft forwards beside the
  // draft-extend pass; E = 3 given.
  const std::string trace = gen_cycle(dir, "llama-3.1-8b", "llama-3.1-8b-eagle3", 1, 8,
                                      "--speculative-num-steps 5 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8");
  const CliResult r = run_cli("run " + trace + " " + kH200 + " --strategy nccl,ideal --accept-len 3 --json " + dir +
                              "/r.json --csv " + dir + "/r.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(doc["scenario"]["batch"], 8);
  const json& res = doc["results"][0];
  ASSERT_EQ(res["strategy"], "nccl");
  EXPECT_EQ(res["batch"], 8);
  EXPECT_EQ(res["gpus"], 1);
  const double cycle = num(res, "cycle_us");
  EXPECT_NEAR(num(res, "tokens_per_s"), 3.0 / cycle * 1e6, 1e-9 * num(res, "tokens_per_s"));
  EXPECT_NEAR(num(res, "total_tokens_per_s"), 8 * num(res, "tokens_per_s"), 1e-9 * num(res, "total_tokens_per_s"));
  EXPECT_NEAR(num(res, "tokens_per_s_per_gpu"), num(res, "total_tokens_per_s"), 1e-9 * num(res, "total_tokens_per_s"));
  EXPECT_NEAR(num(res, "decode_tokens_per_s"), 1e6 / num(res, "decode_us"), 1e-9 * num(res, "decode_tokens_per_s"));
  EXPECT_NEAR(num(res, "decode_total_tokens_per_s"), 8 * num(res, "decode_tokens_per_s"), 1e-6);
  EXPECT_NEAR(num(res, "breakeven_accept_len"), cycle / num(res, "decode_us"), 1e-9);

  // The parts: the draft-extend pass and its top-k are its step, four forwards and their top-k
  // the draft steps, and the verify's forward, tree, sampling and host sync the verify step.
  const json& p = res["cycle_parts"];
  EXPECT_EQ(p["draft_forwards"], 4);
  const double topk_per_forward = (num(p, "topk_select_us") - (num(res, "draft_extend_step_us") - num(p, "draft_extend_us"))) / 4;
  EXPECT_GT(topk_per_forward, 0);
  EXPECT_NEAR(num(p, "draft_forward_us") + topk_per_forward, num(res, "draft_step_us"), 1e-6);
  EXPECT_NEAR(num(p, "verify_forward_us") + num(p, "tree_build_us") + num(p, "sampling_us") + num(p, "host_sync_us"),
              num(res, "verify_us"), 1e-6);
  for (const char* k : {"tree_build_us", "sampling_us", "host_sync_us"}) EXPECT_GT(num(p, k), 0) << k;
  EXPECT_NEAR(num(p, "draft_extend_us") + 4 * num(p, "draft_forward_us") + num(p, "topk_select_us") +
                  num(p, "tree_build_us") + num(p, "verify_forward_us") + num(p, "sampling_us") + num(p, "host_sync_us"),
              cycle, 1e-6);
  const json& d = res["decode_parts"];
  EXPECT_NEAR(num(d, "forward_us") + num(d, "sampling_us") + num(d, "host_sync_us"), num(res, "decode_us"), 1e-6);
  EXPECT_GT(num(d, "host_sync_us"), 0);

  // The verdict names the batch and agrees with the speed-up.
  const std::string text = doc["verdict"]["text"];
  EXPECT_EQ(doc["verdict"]["state"], num(res, "speedup_vs_decode") > 1 ? "faster" : "slower");
  EXPECT_NE(text.find("than plain decoding at batch 8"), std::string::npos) << text;

  // The CSV has the same numbers (6 significant digits) in its own columns.
  const auto rows = csv_rows(slurp(dir + "/r.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("batch"), "8");
  EXPECT_EQ(rows[0].at("draft_forwards"), "4");
  for (const char* k : {"cycle_us", "total_tokens_per_s", "tokens_per_s_per_gpu", "decode_tokens_per_s",
                        "decode_total_tokens_per_s", "breakeven_accept_len"})
    EXPECT_NEAR(std::stod(rows[0].at(k)), num(res, k), 1e-5 * num(res, k)) << k;
  for (const char* k : {"draft_extend_us", "draft_forward_us", "topk_select_us", "tree_build_us", "verify_forward_us",
                        "sampling_us", "host_sync_us"})
    EXPECT_NEAR(std::stod(rows[0].at(k)), num(p, k), 1e-5 * num(p, k)) << k;

  // The table: both blocks, the parts, the verdict.
  EXPECT_NE(r.out.find("batch 8) on 8x-h200-nvswitch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("throughput at batch 8 on 1 GPU ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cycle parts"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 x draft fwd"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("): " + text + "\n"), std::string::npos) << r.out;
}

// Kimi-K2 at TP8, 8 requests of (3, 1, 4): each GPU serves an eighth of the batch's tokens; and
// where speculation loses, the verdict says so with the accept length that would break even —
// the verify's MoE layers touch 384 x (1 - (1 - 8/384)^32) = 188 experts each against 60 for a
// decode of the same batch, so at E = 1.5 the cycle loses.
TEST(RunBatchReport, PerGpuSharesTheTotalAndTheVerdictSaysWhenSpeculationLoses) {
  const std::string dir = temp_dir();
  const std::string trace = gen_cycle(dir, "kimi-k2-instruct", "kimi-k2-eagle3", 8, 8,
                                      "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4");
  // bf16 Kimi-K2 does not fit 8 x H200; the arithmetic is what is tested, so it is priced anyway.
  const CliResult r = run_cli("run " + trace + " " + kH200 + " --strategy nccl,oneshot --accept-len 1.5 --ignore-memory --json " +
                              dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(slurp(dir + "/r.json"));
  const json& res = doc["results"][0];
  EXPECT_EQ(res["gpus"], 8);
  EXPECT_NEAR(num(res, "total_tokens_per_s"), 8 * num(res, "tokens_per_s"), 1e-9 * num(res, "total_tokens_per_s"));
  EXPECT_NEAR(num(res, "tokens_per_s_per_gpu"), num(res, "total_tokens_per_s") / 8, 1e-9 * num(res, "total_tokens_per_s"));
  EXPECT_NE(r.out.find("throughput at batch 8 on 8 GPUs"), std::string::npos) << r.out;

  EXPECT_EQ(doc["verdict"]["state"], "slower");
  const std::string text = doc["verdict"]["text"];
  EXPECT_EQ(text.rfind("EAGLE-3 is slower than plain decoding at batch 8: 0.", 0), 0u) << text;
  EXPECT_NE(text.find(", given 1.50"), std::string::npos) << text;
  EXPECT_NE(r.out.find("): EAGLE-3 is slower than plain decoding at batch 8"), std::string::npos) << r.out;
}

// A trace of the forwards alone keeps the table to its two blocks: no cycle-parts block.
TEST(RunBatchReport, ForwardsAloneHaveNoCyclePartsBlock) {
  const CliResult r = run_cli("run traces/llama-3.1-8b_tp1_t4.json " + kH200 + " --strategy nccl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("cycle parts"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("throughput at batch 1 on 1 GPU ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict (nccl): EAGLE-3 is "), std::string::npos) << r.out;
}

// The verify's expert touching: at batch 4 a decode's 4 tokens x top-8 touch 128 x (1 - (15/16)^4)
// = 29 of Qwen3-30B-A3B's 128 experts, a verify of 4 x 4 tokens 128 x (1 - (15/16)^16) = 82, so
// the verify reads 2.8 times the expert weights a decode reads and costs well over one decode
// step (the preset's grouped-GEMM fit of a 1 x H200 calibration: a fixed cost per launch plus
// the bytes): with the draft for free (the trace has no draft step) the chain's E = 1.52 at
// a = 0.35 loses.
TEST(RunBatchReport, SmallActiveMoeVerifyTouchesMoreExpertsAndLosesAtBatchFour) {
  const std::string dir = temp_dir(), trace = dir + "/q.json";
  const CliResult g = run_cli("gen --model models/llm/qwen3-30b-a3b.json --tp 1 --batch 4 --speculative-num-steps 3 "
                              "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --kv-len 4096 --engine-cycle -o " +
                              trace);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const json t = json::parse(slurp(trace));
  auto experts = [&](const std::string& step) {
    for (const json& s : t["steps"])
      if (s["name"] == step)
        for (const json& op : s["ops"])
          if (op["kind"] == "grouped_gemm") return op["experts"].get<int>();
    return 0;
  };
  EXPECT_EQ(experts("verify"), 82);
  EXPECT_EQ(experts("decode"), 29);
  const CliResult r = run_cli("run " + trace + " " + kH200 + " --strategy nccl --accept-rate 0.35 --json " + dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(doc["verdict"]["state"], "slower") << doc["verdict"]["text"];
  EXPECT_GT(num(doc["results"][0], "verify_us"), 1.5 * num(doc["results"][0], "decode_us"));
  EXPECT_NE(r.out.find("MoE: the verify step's layers touch up to 82 experts each against 29 in a decode step of the "
                       "same batch, reading 2.8x the expert weights"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace eaglesim::test
