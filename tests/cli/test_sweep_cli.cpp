#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

using namespace eaglesim::test;

namespace {
const char* kSmall =
    "sweep --model llama-3.1-8b,llama-3.1-70b --topology 8x-h100-nvswitch,4x-rtx-pro-6000-pcie5 --tp 1,2,3,8 "
    "--draft-tokens 1..3 --accept-rate 0.5,0.7 --strategy nccl,oneshot,fused";

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
}  // namespace

TEST(SweepCli, PrintsTheBestConfigurationPerModelAndTopology) {
  const CliResult r = run_cli(kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Best configuration per model, topology and acceptance"), std::string::npos) << r.out;
  // One line per model x topology x acceptance, each naming a strategy and a verdict.
  std::size_t best_lines = 0;
  for (std::size_t pos = 0; (pos = r.out.find('\n', pos)) != std::string::npos; ++pos) {
    const std::size_t end = r.out.find('\n', pos + 1);
    const std::string line = r.out.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
    if (line.rfind("llama-3.1-", 0) == 0 && (line.find("a=0.50") != std::string::npos || line.find("a=0.70") != std::string::npos)) {
      ++best_lines;
      EXPECT_TRUE(line.find("pays off") != std::string::npos || line.find("nothing fits") != std::string::npos) << line;
    }
  }
  EXPECT_EQ(best_lines, 2u * 2 * 2) << r.out;
  EXPECT_NE(r.out.find("pays off"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;  // no progress bar when stderr is not a terminal
}

// The verdict column names how the model drafts: its EAGLE-3 head, or its own MTP layer. A
// checkpoint priced in the very format it ships draws no warning.
TEST(SweepCli, TheVerdictColumnNamesTheDraftingMethod) {
  const CliResult eagle = run_cli(kSmall);
  ASSERT_EQ(eagle.exit_code, 0) << eagle.err;
  EXPECT_NE(eagle.out.find("speedup  EAGLE-3\n"), std::string::npos) << eagle.out;
  const CliResult mtp = run_cli(
      "sweep --model deepseek-v3 --draft mtp --topology 8x-h200-nvswitch --tp 8 --draft-tokens 3 "
      "--accept-rate 0.7 --strategy nccl --weight-dtype fp8");
  ASSERT_EQ(mtp.exit_code, 0) << mtp.err;
  EXPECT_NE(mtp.out.find("speedup  MTP\n"), std::string::npos) << mtp.out;
  EXPECT_EQ(mtp.out.find("EAGLE-3"), std::string::npos) << mtp.out;
  EXPECT_EQ(mtp.err.find("quantization_config"), std::string::npos) << mtp.err;
  const CliResult bf16 = run_cli(
      "sweep --model deepseek-v3 --draft mtp --topology 8x-h200-nvswitch --tp 8 --draft-tokens 3 "
      "--accept-rate 0.7 --strategy nccl --weight-dtype bf16,fp8");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_NE(bf16.err.find("sweep prices every linear layer in --weight-dtype (bf16,fp8)"), std::string::npos)
      << bf16.err;
}

TEST(SweepCli, ListsWhatCannotRunWithTheReason) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kSmall) + " -o " + dir + "/s.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Cannot run ("), std::string::npos);
  EXPECT_NE(r.out.find("num_attention_heads (64) is not a multiple of 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TP 8 needs 8 GPUs, 4x-rtx-pro-6000-pcie5 has 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GB per GPU (weights 141.1 + draft head"), std::string::npos) << r.out;  // 70B bf16 on one H100
  const std::string csv = slurp(dir + "/s.csv");
  EXPECT_EQ(count_lines(csv), 1u + 2 * 2 * 4 * 3 * 3 * 2);  // header + every combination
  EXPECT_NE(csv.find(",memory,"), std::string::npos);
  EXPECT_NE(csv.find(",tp_sharding,"), std::string::npos);
  EXPECT_NE(csv.find(",tp_exceeds_gpus,\"TP 8 needs 8 GPUs, 4x-rtx-pro-6000-pcie5 has 4\","), std::string::npos);
}

TEST(SweepCli, OrderIsDeterministicForAnyThreadCount) {
  const std::string dir = temp_dir();
  const CliResult a = run_cli(std::string(kSmall) + " -j 1 -o " + dir + "/a.csv --json " + dir + "/a.json");
  const CliResult b = run_cli(std::string(kSmall) + " -j 2 -o " + dir + "/b.csv --json " + dir + "/b.json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(slurp(dir + "/a.csv"), slurp(dir + "/b.csv"));
  EXPECT_EQ(slurp(dir + "/a.json"), slurp(dir + "/b.json"));
  EXPECT_NE(a.out.find("on 1 threads"), std::string::npos);
  EXPECT_NE(b.out.find("on 2 threads"), std::string::npos);
}

TEST(SweepCli, JsonAndReportDescribeTheSameRun) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kSmall) + " --json " + dir + "/s.json --report " + dir + "/s.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(dir + "/s.json"));
  EXPECT_EQ(j["format"], "eaglesim-sweep");
  EXPECT_EQ(j["rows"].size(), 2u * 2 * 4 * 3 * 3 * 2);
  EXPECT_EQ(j["axes"]["draft_models"][0], "llama-3.1-8b-eagle3");  // found beside the model
  std::string html = slurp(dir + "/s.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<script type=\"application/json\" id=\"eaglesim-data\">"), std::string::npos);
  // Self-contained: nothing fetched from the network (the SVG namespace URI is a name, not a fetch).
  const std::string svg_ns = "http://www.w3.org/2000/svg";
  for (std::size_t p; (p = html.find(svg_ns)) != std::string::npos;) html.erase(p, svg_ns.size());
  for (const char* remote : {"http://", "https://", "<link ", "@import", "src=\""}) EXPECT_EQ(html.find(remote), std::string::npos) << remote;
}

// --no-fused-add-norm: every residual add and RMSNorm its own kernel, so every TP1 row is slower
// (its adds and norms are pairs no allreduce absorbs), and the JSON and notes say so.
TEST(SweepCli, NoFusedAddNormIsSweptAndRecorded) {
  const std::string dir = temp_dir();
  const std::string args = "sweep --model llama-3.1-8b --topology 8x-h100-nvswitch --tp 1 --draft-tokens 3 "
                           "--strategy nccl --json ";
  const CliResult fused = run_cli(args + dir + "/f.json");
  const CliResult apart = run_cli(args + dir + "/a.json --no-fused-add-norm");
  ASSERT_EQ(fused.exit_code, 0) << fused.err;
  ASSERT_EQ(apart.exit_code, 0) << apart.err;
  const auto f = nlohmann::json::parse(slurp(dir + "/f.json"));
  const auto a = nlohmann::json::parse(slurp(dir + "/a.json"));
  EXPECT_EQ(f["axes"]["fused_add_norm"], true);
  EXPECT_EQ(a["axes"]["fused_add_norm"], false);
  ASSERT_EQ(f["rows"].size(), a["rows"].size());
  ASSERT_FALSE(f["rows"].empty());
  for (std::size_t i = 0; i < f["rows"].size(); ++i)
    EXPECT_LT(f["rows"][i]["verify_us"].get<double>(), a["rows"][i]["verify_us"].get<double>()) << i;
  EXPECT_EQ(f["notes"].dump().find("--no-fused-add-norm"), std::string::npos);
  EXPECT_NE(a["notes"].dump().find("--no-fused-add-norm"), std::string::npos);
  EXPECT_NE(run_cli("sweep --help").out.find("--no-fused-add-norm"), std::string::npos);
}

TEST(SweepCli, UnknownNamesAndEmptyGlobsExitWithInputError) {
  CliResult r = run_cli("sweep --model no-such-model --topology 8x-h100-nvswitch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--model: no model config \"no-such-model\""), std::string::npos) << r.err;
  r = run_cli("sweep --model llama-3.1-8b --topology no-such-topology");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-topology"), std::string::npos) << r.err;
  r = run_cli("sweep --model llama-3.1-8b --topology '99x-*'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\"99x-*\" matches no topology file"), std::string::npos) << r.err;
  r = run_cli("sweep --model llama-3.1-8b --topology 'tests/data/none/*.json'");
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli("sweep --model llama-3.1-8b --strategy nccl,warp");
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli("sweep --model llama-3.1-8b --tp 0");
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli("sweep --model llama-3.1-8b --accept-rate 1.2");
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli("sweep --model llama-3.1-8b --weight-dtype fp32");
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli("sweep --model llama-3.1-8b --draft glm-4.5");
  EXPECT_EQ(r.exit_code, 2);  // not an EAGLE-3 head
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(SweepCli, NoOutputFilesWhenTheSweepFails) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli("sweep --model llama-3.1-8b --topology no-such-topology -o " + dir + "/s.csv --report " +
                              dir + "/s.html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(file_exists(dir + "/s.csv"));
  EXPECT_FALSE(file_exists(dir + "/s.html"));
  const CliResult w = run_cli("sweep --model llama-3.1-8b -o /no/such/dir/s.csv");
  EXPECT_EQ(w.exit_code, 2);
}

// --best-only keeps the picks, not the rows: the same table, the same streamed CSV, a JSON without
// rows; nothing left beside the outputs.
TEST(SweepCli, BestOnlyStreamsTheCsvAndPrintsTheSameAnswer) {
  const std::string dir = temp_dir();
  const CliResult full = run_cli(std::string(kSmall) + " -o " + dir + "/full.csv --json " + dir + "/full.json");
  const CliResult lean =
      run_cli(std::string(kSmall) + " --best-only -o " + dir + "/lean.csv --json " + dir + "/lean.json");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  ASSERT_EQ(lean.exit_code, 0) << lean.err;
  auto without_timing = [](const std::string& out) { return out.substr(0, out.rfind("\nSwept ")); };
  EXPECT_EQ(without_timing(lean.out), without_timing(full.out));
  EXPECT_EQ(slurp(dir + "/lean.csv"), slurp(dir + "/full.csv"));
  const auto full_json = nlohmann::json::parse(slurp(dir + "/full.json"));
  const auto lean_json = nlohmann::json::parse(slurp(dir + "/lean.json"));
  EXPECT_FALSE(lean_json.contains("rows"));
  EXPECT_EQ(lean_json["best"], full_json["best"]);
  EXPECT_EQ(lean_json["counts"], full_json["counts"]);
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
}

TEST(SweepCli, BestOnlyWithReportIsAnInputError) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(std::string(kSmall) + " --best-only -o " + dir + "/s.csv --report " + dir + "/s.html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--report"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--best-only"), std::string::npos) << r.err;
  EXPECT_FALSE(file_exists(dir + "/s.csv"));
  EXPECT_FALSE(file_exists(dir + "/s.html"));
}

// With measured accept lengths and no rate of the user's, the unmeasured configurations are priced
// at the rate the table implies; every best row shows E and whether it is measured, the fastest
// measured configuration is shown beside a model-priced best, and a line says how the verdicts
// lean on E.
TEST(SweepCli, MeasuredAcceptanceFirstAndEveryEShown) {
  const CliResult r = run_cli(
      "sweep --model llama-3.1-8b --tp 1 --topology 8x-h100-nvswitch --batch 1,8 --speculative-num-steps 2,3,5 "
      "--speculative-eagle-topk 1,4 --speculative-num-draft-tokens 3,4,8 --strategy nccl --acceptance " +
      std::string(EAGLESIM_TEST_DATA) + "/acceptance/measured.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: acceptance: configurations without a measurement are priced by the tree model at a="),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("measured.json's 6 measured entries ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" model ") , std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  best measured:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.40 meas"), std::string::npos) << r.out;  // the (5, 4, 8) entry
  EXPECT_NE(r.out.find("E: every best row's from the acceptance model (model), none measured"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("a=0.70"), std::string::npos) << "the assumed default must not price it:\n" << r.out;
}

// A topology where nothing runs is one line of the per-batch table, and the pay-limit lines read
// as sentences; the report's headline speaks for the fastest box, not for the one that gains most.
TEST(SweepCli, NothingRunsIsOneLineAndTheHeadlineIsTheFastestBox) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "sweep --model kimi-k2-instruct --topology 8x-rtx-pro-6000-pcie5-nop2p,8x-h200-nvswitch,4x-rtx-pro-6000-pcie5 "
      "--tp 4,8 --weight-dtype int4 --batch 1,8 --draft-tokens 1..4 --report " + dir + "/s.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4x-rtx-pro-6000-pcie5        a=0.70    all  nothing runs at any batch (see below)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("speculation nothing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": speculation pays at every batch swept\n"), std::string::npos) << r.out;
  const std::string html = slurp(dir + "/s.html");
  EXPECT_NE(html.find("EAGLE-3 pays off on the fastest box, 8x-h200-nvswitch: "), std::string::npos);
  EXPECT_EQ(html.find("8x-rtx-pro-6000-pcie5-nop2p: "), std::string::npos) << "the slowest box is not the headline";
}

// Context length is an axis: one sweep per length, the tables under a heading each, the CSV with
// every length in its kv_len column; --json and --report describe one sweep, so they take one.
TEST(SweepCli, KvLenIsAnAxis) {
  const std::string dir = temp_dir();
  const std::string base = "sweep --model qwen3-8b --tp 1 --topology 8x-h100-nvswitch --batch 1,32 --strategy nccl";
  const CliResult r = run_cli(base + " --kv-len 1024,8192 -o " + dir + "/kv.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("== context 1024 tokens per request\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("== context 8192 tokens per request\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Swept 32 combinations"), std::string::npos) << r.out;
  const std::string csv = slurp(dir + "/kv.csv");
  EXPECT_EQ(count_lines(csv), 1u + 32);
  EXPECT_NE(csv.find(",tp,ep,dp_attention,batch,kv_len,"), std::string::npos);
  EXPECT_NE(csv.find(",1,1,false,32,8192,"), std::string::npos);
  const CliResult json = run_cli(base + " --kv-len 1024,8192 --json " + dir + "/s.json");
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_NE(json.err.find("--kv-len: 2 context lengths make 2 sweeps"), std::string::npos) << json.err;
  EXPECT_FALSE(file_exists(dir + "/s.json"));
  const CliResult bad = run_cli(base + " --kv-len 1024,lots");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--kv-len: expected integers in [1, 16777216], comma-separated, got 'lots'"), std::string::npos)
      << bad.err;
}

// The page holds what its explorer draws: per setting, draft-token count and strategy the fastest
// num_steps (a setting where nothing runs by one row, for the reason), and every row it names;
// each held row as the --json has it.
TEST(SweepCli, ReportHoldsTheFastestRowOfEachExplorerSetting) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "sweep --model llama-3.1-8b --topology 8x-h100-nvswitch,8x-rtx-pro-6000-pcie5-nop2p --tp 1,2 --batch 1,4 "
      "--speculative-num-steps 1..4 --speculative-eagle-topk 1,2 --speculative-num-draft-tokens 4,8 "
      "--accept-rate 0.7 --strategy nccl,fused --json " + dir + "/s.json --report " + dir + "/s.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  using nlohmann::json;
  const json all = json::parse(slurp(dir + "/s.json"));
  const std::string html = slurp(dir + "/s.html");
  auto embedded = [&](const std::string& id) {
    const std::string open = "id=\"" + id + "\">";
    const std::size_t from = html.find(open) + open.size();
    return json::parse(html.substr(from, html.find("</script>", from) - from));
  };
  const json view = embedded("eaglesim-view");
  const json packed = embedded("eaglesim-data")["rows_packed"];
  const json& columns = packed["columns"];
  std::map<std::size_t, json> held;
  for (const json& v : packed["values"]) {
    json row;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string key = columns[c];
      const bool text = packed["strings"].contains(key) && !v[c].is_null();
      if (!v[c].is_null()) row[key] = text ? packed["strings"][key][v[c].get<std::size_t>()] : v[c];
    }
    held[row["index"].get<std::size_t>()] = row;
  }
  ASSERT_LT(held.size(), all["rows"].size());
  EXPECT_EQ(view["page_rows"]["held"], held.size());
  EXPECT_NE(view["page_rows"]["note"].get<std::string>().find("The CSV and --json have them all"), std::string::npos);
  std::map<std::string, std::pair<double, std::size_t>> fastest;  // per cell: tok/s, row
  for (const json& row : all["rows"]) {
    const std::size_t i = row["index"];
    if (held.count(i)) {
      for (const auto& item : held[i].items()) EXPECT_EQ(item.value(), row[item.key()]) << i << " " << item.key();
    }
    const std::string cell = row["topology"].get<std::string>() + "/" + std::to_string(row["tp"].get<int>()) + "/" +
                             std::to_string(row["batch"].get<int>()) + "/" + std::to_string(row["eagle_topk"].get<int>()) +
                             "/" + std::to_string(row["draft_tokens"].get<int>()) + "/" + row["strategy"].get<std::string>();
    const double tps = row["status"] == "ok" ? row["tokens_per_s"].get<double>() : -1.0;
    auto [it, inserted] = fastest.try_emplace(cell, tps, i);
    if (!inserted && tps > it->second.first) it->second = {tps, i};
  }
  for (const auto& [cell, best] : fastest) EXPECT_TRUE(held.count(best.second)) << cell;
  for (const json& b : all["best"]) {
    if (!b["row"].is_null()) EXPECT_TRUE(held.count(b["row"].get<std::size_t>()));
    if (!b["plain_row"].is_null()) EXPECT_TRUE(held.count(b["plain_row"].get<std::size_t>()));
  }
}
