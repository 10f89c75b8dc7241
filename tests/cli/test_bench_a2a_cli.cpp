// bench-comm --a2a end to end: the all-to-all strategies priced over token counts on a two-node
// topology, with the table a DeepEP user reads (tokens, dispatch and combine us and GB/s), what a
// strategy cannot run listed with its reason, auto's pick per count, and the same in JSON and CSV.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"

namespace eaglesim::test {
namespace {

void expect_contains(const std::string& text, const std::string& fragment) {
  EXPECT_NE(text.find(fragment), std::string::npos) << "missing: " << fragment << "\nin:\n" << text;
}

}  // namespace

TEST(BenchCommA2aCli, PricesDispatchAndCombineOverTokenCounts) {
  const std::string dir = temp_dir();
  const CliResult r = run_cli(
      "bench-comm --a2a deepep_ll,deepep_normal,nccl,auto --tokens 1,8,32,128,512,4096 --hidden 7168 --topk 8 "
      "--experts 256 --ranks 16 --topology 2x8-h200-nvswitch-ib400 --json " + dir + "/a.json --csv " + dir + "/a.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_contains(r.out, "EP16 over 2 nodes");
  expect_contains(r.out, "tokens  strategy       runs_as         dispatch_us");
  // Over its 128-token buffer the low-latency kernels cannot run; auto runs the normal ones there.
  expect_contains(r.out, "deepep_ll at 512..4096 tokens: cannot run: tokens: expected at most 128 a rank");
  expect_contains(r.out, "     512  auto           deepep_normal");
  expect_contains(r.out, "       8  auto           deepep_ll");
  expect_contains(r.out, "# fastest (dispatch + combine):");

  const nlohmann::json j = nlohmann::json::parse(slurp(dir + "/a.json"));
  EXPECT_EQ(j["collective"], "all_to_all");
  EXPECT_EQ(j["ranks"], 16);
  EXPECT_EQ(j["nodes"], 2);
  ASSERT_EQ(j["rows"].size(), 6u);
  const auto& last = j["rows"][5];
  EXPECT_EQ(last["tokens"], 4096);
  EXPECT_EQ(last["strategies"]["deepep_ll"]["supported"], false);
  EXPECT_EQ(last["strategies"]["auto"]["runs_as"], "deepep_normal");
  const auto& normal = last["strategies"]["deepep_normal"];
  EXPECT_EQ(normal["counted_as"], "RDMA");
  EXPECT_GT(normal["combine"]["us"].get<double>(), normal["dispatch"]["us"].get<double>());  // bf16 vs fp8
  // The NICs bound it: tens of GB/s counted as DeepEP's internode test counts them.
  EXPECT_GT(normal["dispatch"]["gbs"].get<double>(), 30.0);
  EXPECT_LT(normal["dispatch"]["gbs"].get<double>(), 120.0);

  const std::string csv = slurp(dir + "/a.csv");
  expect_contains(csv, "tokens,strategy,runs_as,supported,dispatch_us,dispatch_gbs,combine_us,combine_gbs");
  expect_contains(csv, "4096,deepep_ll,deepep_ll,false,,,,");
}

TEST(BenchCommA2aCli, OneNodeCountsTheNormalKernelsOverNvlink) {
  const CliResult r = run_cli("bench-comm --a2a all --tokens 4096 --topology 8x-h200-nvswitch");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_contains(r.out, "EP8 over 1 node;");
  expect_contains(r.out, "NVLink");
}

}  // namespace eaglesim::test
