// The roofline's inputs and rows: the fewest bytes and the FLOPs per op (hand-computed), and
// what the report makes of a measured step that carries its device's ceilings.
#include <gtest/gtest.h>

#include "domain/roofline.hpp"
#include "domain/speculative.hpp"
#include "report/printers.hpp"
#include "trace/op_traffic.hpp"

using namespace eaglesim;

namespace {

Op gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  Op op;
  op.kind = OpKind::gemm;
  op.m = m, op.n = n, op.k = k;
  return op;
}

}  // namespace

TEST(OpTraffic, GemmReadsWeightsOnceAndActivationsInAndOut) {
  const OpTraffic t = op_traffic(gemm(4, 3072, 4096));
  // 3072·4096·2 weights + 4·4096·2 in + 4·3072·2 out
  EXPECT_DOUBLE_EQ(t.bytes, 25165824.0 + 32768.0 + 24576.0);
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 4 * 3072 * 4096);  // 100663296
}

TEST(OpTraffic, GroupedGemmReadsTheTouchedExpertsOnce) {
  Op op;
  op.kind = OpKind::grouped_gemm;
  op.tokens = 32, op.experts = 8, op.n = 2048, op.k = 7168;
  const OpTraffic t = op_traffic(op);
  // 8·2048·7168·2 weights + 32 routed rows·(7168 + 2048)·2
  EXPECT_DOUBLE_EQ(t.bytes, 234881024.0 + 589824.0);
  EXPECT_DOUBLE_EQ(t.flops, 939524096.0);  // 2·32·2048·7168
}

TEST(OpTraffic, GqaAttentionReadsEachKvHeadOnce) {
  Op op;
  op.kind = OpKind::attention;
  op.q_tokens = 4, op.kv_len = 4096, op.heads = 32, op.kv_heads = 8, op.head_dim = 128;
  const OpTraffic t = op_traffic(op);
  // KV 4096·8·(128 + 128)·2 + Q 4·32·128·2 + O 4·32·128·2
  EXPECT_DOUBLE_EQ(t.bytes, 16777216.0 + 32768.0 + 32768.0);
  EXPECT_DOUBLE_EQ(t.flops, 268435456.0);  // 2·(4·32 rows)·4096·(128 + 128)
}

TEST(OpTraffic, MlaAttentionReadsTheLatentCacheOnce) {
  Op op;
  op.kind = OpKind::attention;
  op.variant = AttentionVariant::mla;
  op.q_tokens = 4, op.kv_len = 4096, op.heads = 16, op.kv_lora_rank = 512, op.rope_dim = 64;
  const OpTraffic t = op_traffic(op);
  // KV 4096·(512 + 64)·2 + Q 4·16·576·2 + O 4·16·512·2
  EXPECT_DOUBLE_EQ(t.bytes, 4718592.0 + 73728.0 + 65536.0);
  EXPECT_DOUBLE_EQ(t.flops, 570425344.0);  // 2·(4·16 rows)·4096·(576 + 512)
}

TEST(OpTraffic, RmsNormReadsAndWritesItsRowsOnce) {
  Op op;
  op.kind = OpKind::rmsnorm;
  op.tokens = 4, op.hidden = 4096;
  const OpTraffic t = op_traffic(op);
  EXPECT_DOUBLE_EQ(t.bytes, 65536.0);  // 4·4096·2 B·(1 in + 1 out)
  EXPECT_DOUBLE_EQ(t.flops, 0.0);
}

TEST(OpTraffic, AllreducesHaveNoHbmFloor) {
  Op op;
  op.kind = OpKind::allreduce;
  op.bytes = 32768;
  const OpTraffic t = op_traffic(op);
  EXPECT_EQ(t.bytes, 0.0);
  EXPECT_EQ(t.flops, 0.0);
}

namespace {

// 100 µs: GEMMs at the read floor, attention at half its compute floor, a norm under 1 % and
// allreduces (no floor) left out.
StepResult measured_step() {
  StepResult s;
  s.step = "verify";
  s.step_us = 100;
  s.kind_us[static_cast<int>(OpKind::gemm)] = 60;
  s.kind_us[static_cast<int>(OpKind::attention)] = 30;
  s.kind_us[static_cast<int>(OpKind::rmsnorm)] = 0.5;
  s.kind_us[static_cast<int>(OpKind::allreduce)] = 9.5;
  s.kind_traffic[static_cast<int>(OpKind::gemm)] = {240e6, 2e9};
  s.kind_traffic[static_cast<int>(OpKind::attention)] = {30e6, 12e9};
  s.kind_traffic[static_cast<int>(OpKind::rmsnorm)] = {1e6, 0};
  s.ceilings = DeviceCeilings{"NVIDIA H200", 4000, 800};
  return s;
}

Report one_strategy_report(const StepResult& verify) {
  Report report;
  report.scenario.model = "m";
  report.scenario.topology = "this machine";
  report.scenario.backend = "cuda";
  StrategyResult r;
  r.strategy = "nccl";
  r.verify = verify;
  r.verify_us = verify.step_us;
  derive_strategy_metrics(r, report.scenario.acceptance, report.scenario.draft_tokens);
  report.results.push_back(r);
  return report;
}

}  // namespace

TEST(Roofline, RowsPerKindAgainstTheDevicesFloor) {
  const std::vector<RooflineRow> rows = roofline_rows(measured_step());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kind, OpKind::gemm);
  EXPECT_DOUBLE_EQ(rows[0].us, 60);
  EXPECT_DOUBLE_EQ(rows[0].gbps, 4000);         // 240 MB in 60 µs
  EXPECT_NEAR(rows[0].tflops, 33.333, 1e-3);    // 2 GFLOP in 60 µs
  EXPECT_DOUBLE_EQ(rows[0].floor_us, 60);       // max(240e6 / 4000 GB/s, 2e9 / 800 TFLOP/s = 2.5)
  EXPECT_DOUBLE_EQ(rows[0].pct_of_floor, 100);
  EXPECT_EQ(rows[1].kind, OpKind::attention);
  EXPECT_DOUBLE_EQ(rows[1].gbps, 1000);
  EXPECT_DOUBLE_EQ(rows[1].tflops, 400);
  EXPECT_DOUBLE_EQ(rows[1].floor_us, 15);       // max(7.5 memory, 15 compute)
  EXPECT_DOUBLE_EQ(rows[1].pct_of_floor, 50);
}

TEST(Roofline, NoRowsWithoutCeilings) {
  StepResult s = measured_step();
  s.ceilings.reset();
  EXPECT_TRUE(roofline_rows(s).empty());
}

TEST(Roofline, TablePrintsTheBlockAfterTheAbTable) {
  const std::string table = report_to_table(one_strategy_report(measured_step()));
  const std::string want =
      "\nroofline (verify step, op kinds with >= 1% of it; NVIDIA H200: read 4000 GB/s, bf16 800 TFLOP/s; "
      "floor = max(bytes / read, FLOPs / bf16)):\n"
      "strategy  kind          us       MB   GFLOP  GB/s  TFLOP/s  floor us  % of floor\n"
      "--------------------------------------------------------------------------------\n"
      "nccl      gemm        60.0  240.000   2.000  4000     33.3      60.0       100.0\n"
      "nccl      attention   30.0   30.000  12.000  1000    400.0      15.0        50.0\n";
  EXPECT_NE(table.find(want), std::string::npos) << table;
  EXPECT_LT(table.find("strategy  ok"), table.find("roofline"));
}

TEST(Roofline, JsonCarriesCeilingsAndRowsUnderTheResult) {
  const nlohmann::ordered_json j = report_to_json(one_strategy_report(measured_step()));
  const auto& r = j["results"][0];
  EXPECT_EQ(r["verify_ceilings"]["device"], "NVIDIA H200");
  EXPECT_EQ(r["verify_ceilings"]["read_gbps"], 4000.0);
  ASSERT_EQ(r["verify_roofline"].size(), 2u);
  EXPECT_EQ(r["verify_roofline"][1]["kind"], "attention");
  EXPECT_EQ(r["verify_roofline"][1]["floor_us"], 15.0);
  EXPECT_EQ(r["verify_roofline"][1]["pct_of_floor"], 50.0);
}

TEST(Roofline, WithoutCeilingsTheReportHasNoRoofline) {
  StepResult s = measured_step();
  s.ceilings.reset();
  const Report report = one_strategy_report(s);
  EXPECT_EQ(report_to_table(report).find("roofline"), std::string::npos);
  EXPECT_FALSE(report_to_json(report)["results"][0].contains("verify_roofline"));
  EXPECT_FALSE(report_to_json(report)["results"][0].contains("verify_ceilings"));
}
