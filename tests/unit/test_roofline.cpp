// The roofline's inputs and rows: the fewest bytes and the FLOPs per op (hand-computed), and
// what the report makes of a measured step that carries its device's ceilings.
#include <gtest/gtest.h>

#include "domain/roofline.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "backend/evaluate.hpp"
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

Op grouped_gemm(std::int64_t tokens, std::int64_t experts, std::int64_t n, std::int64_t k) {
  Op op;
  op.kind = OpKind::grouped_gemm;
  op.tokens = tokens, op.experts = experts, op.n = n, op.k = k;
  return op;
}

Op gqa(std::int64_t q, std::int64_t kv, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim) {
  Op op;
  op.kind = OpKind::attention;
  op.q_tokens = q, op.kv_len = kv, op.heads = heads, op.kv_heads = kv_heads, op.head_dim = dim;
  return op;
}

Op mla(std::int64_t q, std::int64_t kv, std::int64_t heads, std::int64_t lora, std::int64_t rope) {
  Op op;
  op.kind = OpKind::attention;
  op.variant = AttentionVariant::mla;
  op.q_tokens = q, op.kv_len = kv, op.heads = heads, op.kv_lora_rank = lora, op.rope_dim = rope;
  return op;
}

Op rows(OpKind kind, std::int64_t tokens, std::int64_t hidden) {
  Op op;
  op.kind = kind;
  op.tokens = tokens, op.hidden = hidden;
  return op;
}

struct TrafficCase {
  const char* what;
  Op op;
  double bytes, flops;
};

}  // namespace

TEST(OpTraffic, FewestBytesAndFlopsByHand) {
  Op allreduce;
  allreduce.kind = OpKind::allreduce;
  allreduce.bytes = 32768;
  const std::vector<TrafficCase> cases{
      // 3072·4096·2 weights + 4·4096·2 in + 4·3072·2 out; 2·4·3072·4096
      {"gemm", gemm(4, 3072, 4096), 25165824.0 + 32768.0 + 24576.0, 100663296.0},
      // 8 touched experts' 2048·7168·2 weights + 32 routed rows·(7168 + 2048)·2; 2·32·2048·7168
      {"grouped gemm", grouped_gemm(32, 8, 2048, 7168), 234881024.0 + 589824.0, 939524096.0},
      // KV 4096·8·(128 + 128)·2 + Q and O 4·32·128·2 each; 2·(4·32 rows)·4096·(128 + 128)
      {"gqa attention", gqa(4, 4096, 32, 8, 128), 16777216.0 + 32768.0 + 32768.0, 268435456.0},
      // KV 4096·(512 + 64)·2 + Q 4·16·576·2 + O 4·16·512·2; 2·(4·16 rows)·4096·(576 + 512)
      {"mla attention", mla(4, 4096, 16, 512, 64), 4718592.0 + 73728.0 + 65536.0, 570425344.0},
      // 4·4096·2 B·(1 in + 1 out)
      {"rmsnorm", rows(OpKind::rmsnorm, 4, 4096), 65536.0, 0.0},
      // an allreduce's floor is the links, not HBM
      {"allreduce", allreduce, 0.0, 0.0},
  };
  for (const TrafficCase& c : cases) {
    SCOPED_TRACE(c.what);
    const OpTraffic t = op_traffic(c.op);
    EXPECT_DOUBLE_EQ(t.bytes, c.bytes);
    EXPECT_DOUBLE_EQ(t.flops, c.flops);
  }
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
      "strategy  kind         us       MB   GFLOP  GB/s  TFLOP/s  floor us  % of floor\n"
      "-------------------------------------------------------------------------------\n"
      "nccl      gemm       60.0  240.000   2.000  4000     33.3      60.0       100.0\n"
      "nccl      attention  30.0   30.000  12.000  1000    400.0      15.0        50.0\n\n"
      "best: ";
  EXPECT_NE(table.find(want), std::string::npos) << table;
  EXPECT_LT(table.find("verify us"), table.find("roofline"));
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

namespace {

// Returns what a measuring backend would: its device's ceilings, or none.
class CeilingsBackend final : public Backend {
 public:
  explicit CeilingsBackend(bool measures) : measures_(measures) {}
  std::string name() const override { return "fake"; }
  StepResult run_step(const Trace&, const Step& step, const std::string&, const Topology*, const RunOptions&) override {
    StepResult r;
    r.step = step.name;
    r.step_us = 10;
    if (measures_) r.ceilings = DeviceCeilings{"gpu", 1000, 100};
    return r;
  }

 private:
  bool measures_;
};

Step allreduce_then_norm() {
  Step step;
  step.name = "verify";
  Op ar;
  ar.kind = OpKind::allreduce;
  ar.bytes = 32768;
  ar.layer = 0;
  Op add = rows(OpKind::residual_add, 4, 4096);
  add.layer = 0;
  Op norm = rows(OpKind::rmsnorm, 4, 4096);
  norm.layer = 0;
  Op g = gemm(4, 3072, 4096);
  g.layer = 0;
  step.ops = {g, ar, add, norm};
  return step;
}

}  // namespace

TEST(Roofline, EvaluateCountsTheTrafficOfMeasuredStepsPerKind) {
  const Step step = allreduce_then_norm();
  Trace trace;
  CeilingsBackend measuring(true);
  RunOptions apart;
  apart.fuse_add_norm = false;
  const StepResult r = price_step(measuring, trace, step, "nccl", nullptr, apart).result;
  EXPECT_DOUBLE_EQ(r.kind_traffic[static_cast<int>(OpKind::gemm)].bytes, op_traffic(step.ops[0]).bytes);
  EXPECT_DOUBLE_EQ(r.kind_traffic[static_cast<int>(OpKind::residual_add)].bytes, 98304.0);  // 4·4096·2·3
  EXPECT_DOUBLE_EQ(r.kind_traffic[static_cast<int>(OpKind::rmsnorm)].bytes, 65536.0);
  EXPECT_EQ(r.kind_traffic[static_cast<int>(OpKind::allreduce)].bytes, 0.0);
  // Run as one fused kernel (the default), the add and the norm are that kernel's traffic, under
  // rmsnorm where its time is: x, residual and the weight row in, residual and out written.
  const StepResult f = price_step(measuring, trace, step, "nccl", nullptr, RunOptions{}).result;
  EXPECT_EQ(f.kind_traffic[static_cast<int>(OpKind::residual_add)].bytes, 0.0);
  EXPECT_DOUBLE_EQ(f.kind_traffic[static_cast<int>(OpKind::rmsnorm)].bytes, 4 * 4096 * 2 * 4 + 4096 * 2);
  EXPECT_DOUBLE_EQ(f.kind_traffic[static_cast<int>(OpKind::gemm)].bytes, op_traffic(step.ops[0]).bytes);

  CeilingsBackend simulating(false);
  const StepResult s = price_step(simulating, trace, step, "nccl", nullptr, RunOptions{}).result;
  EXPECT_EQ(s.kind_traffic[static_cast<int>(OpKind::gemm)].bytes, 0.0);
}

TEST(Roofline, OpsAFusingAllreduceAbsorbsCountForNoKind) {
  const Step step = allreduce_then_norm();
  Trace trace;
  CeilingsBackend measuring(true);
  const StepResult r = price_step(measuring, trace, step, "fused", nullptr, RunOptions{}).result;
  EXPECT_GT(r.kind_traffic[static_cast<int>(OpKind::gemm)].bytes, 0.0);
  EXPECT_EQ(r.kind_traffic[static_cast<int>(OpKind::residual_add)].bytes, 0.0);
  EXPECT_EQ(r.kind_traffic[static_cast<int>(OpKind::rmsnorm)].bytes, 0.0);
}
