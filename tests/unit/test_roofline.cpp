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
      "floor = max(bytes / read, FLOPs / bf16); ops moving >= 16 MB each by their share of their floor, smaller "
      "ones by their us over it per op):\n"
      "strategy  kind         us       MB   GFLOP  GB/s  TFLOP/s  floor us  % of floor  >=16MB ops  "
      ">=16MB % of floor  <16MB ops  <16MB us over floor/op\n"
      "------------------------------------------------------------------------------------------------"
      "-------------------------------------------------\n"
      "nccl      gemm       60.0  240.000   2.000  4000     33.3      60.0       100.0           -                  "
      "-          -                       -\n"
      "nccl      attention  30.0   30.000  12.000  1000    400.0      15.0        50.0           -                  "
      "-          -                       -\n\n"
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
  // A result without its ops' traffic (made by hand) has no split by op size.
  EXPECT_FALSE(r["verify_roofline"][1].contains("large"));
  EXPECT_FALSE(r["verify_roofline"][1].contains("small"));
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

Op named(Op op, const char* name, int layer = 0) {
  op.name = name;
  op.layer = layer;
  return op;
}

Op allreduce_of(double bytes) {
  Op ar;
  ar.kind = OpKind::allreduce;
  ar.bytes = bytes;
  return ar;
}

Step allreduce_then_norm() {
  Step step;
  step.name = "verify";
  step.ops = {named(gemm(4, 3072, 4096), ""), named(allreduce_of(32768), ""),
              named(rows(OpKind::residual_add, 4, 4096), ""), named(rows(OpKind::rmsnorm, 4, 4096), "")};
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

// The split of each kind by op size: which ops are large (their own traffic, as the time reported
// for them counts it), and their share of the kind's time from the critical rank's spans.
namespace {

// A layer's ops with known traffic (read 4000 GB/s: 4e6 B per µs):
//   0 gemm 4x4096x4096   33,619,968 B  large, floor 8.404992 µs
//   1 allreduce          (no floor)
//   2 residual_add 4x4096 + 3 rmsnorm 4x4096: one fused kernel, 4·4096·2·4 + 4096·2 = 139,264 B
//     under rmsnorm, small, floor 0.034816 µs
//   4 gemm 4x1024x4096    8,429,568 B  small, floor 2.107392 µs
//   5 gemm 4x4096x4096   33,619,968 B  large, floor 8.404992 µs
//   6 attention gqa q4 kv4096 32/8 heads d128: 16,842,752 B  large, floor 4.210688 µs
Step sized_step() {
  Step step;
  step.name = "verify";
  step.ops = {named(gemm(4, 4096, 4096), "o_proj"),
              named(allreduce_of(32768), "allreduce"),
              named(rows(OpKind::residual_add, 4, 4096), "add"),
              named(rows(OpKind::rmsnorm, 4, 4096), "norm", 1),
              named(gemm(4, 1024, 4096), "q_proj", 1),
              named(gemm(4, 4096, 4096), "up", 1),
              named(gqa(4, 4096, 32, 8, 128), "attn", 1)};
  return step;
}

// What the CUDA backend returns for it on 2 ranks, rank 1 critical: spans in op order, the
// fused add + norm one span at the add's index and none for the norm, spans that sum to 80 µs
// against a 68 µs step (2 µs of event-node overhead on each of the 6 spans), and the per-kind
// split fitted as the replay fits it: gemm 18 + 6 + 20, allreduce 8, rmsnorm 3, attention 13.
// Rank 0's spans are 10 µs each: not the critical rank's, so not used.
class SizedBackend final : public Backend {
 public:
  std::string name() const override { return "fake"; }
  StepResult run_step(const Trace&, const Step& step, const std::string&, const Topology*, const RunOptions&) override {
    StepResult r;
    r.step = step.name;
    r.step_us = 68;
    r.critical_rank = 1;
    r.kind_us[static_cast<int>(OpKind::gemm)] = 44;
    r.kind_us[static_cast<int>(OpKind::allreduce)] = 8;
    r.kind_us[static_cast<int>(OpKind::rmsnorm)] = 3;
    r.kind_us[static_cast<int>(OpKind::attention)] = 13;
    r.ceilings = DeviceCeilings{"NVIDIA H200", 4000, 800};
    r.timeline.step = step.name;
    r.timeline.ranks = 2;
    const std::vector<std::pair<int, double>> critical{{0, 20}, {1, 10}, {2, 5}, {4, 8}, {5, 22}, {6, 15}};
    for (int rank = 0; rank < 2; ++rank) {
      double t = 0;
      for (const auto& [op, us] : critical) {
        Span s;
        s.rank = rank;
        s.op_index = op;
        s.kind = op == 2 ? OpKind::rmsnorm : step.ops[static_cast<std::size_t>(op)].kind;
        s.start_us = t;
        s.end_us = t + (rank == 1 ? us : 10.0);
        t = s.end_us;
        r.timeline.spans.push_back(s);
      }
    }
    return r;
  }
};

StepResult sized_result(const std::string& strategy = "nccl") {
  Trace trace;
  SizedBackend backend;
  return price_step(backend, trace, sized_step(), strategy, nullptr, RunOptions{}).result;
}

const RooflineRow& row_of(const std::vector<RooflineRow>& rows, OpKind kind) {
  for (const RooflineRow& r : rows)
    if (r.kind == kind) return r;
  throw std::logic_error(std::string("no row for ") + to_string(kind));
}

}  // namespace

TEST(Roofline, UnitTrafficIsPerOpIndexAndSumsToTheKindTraffic) {
  const Step step = sized_step();
  const double fused_norm = 4 * 4096 * 2 * 4 + 4096 * 2;  // x, residual, weight row in; residual, out written
  // The add and its norm as one kernel (the default): its traffic at the add's index, under
  // rmsnorm; the norm counted for nothing.
  const std::vector<UnitTraffic> fused = step_unit_traffic(step, false, true);
  ASSERT_EQ(fused.size(), step.ops.size());
  EXPECT_TRUE(fused[2].counted);
  EXPECT_EQ(fused[2].kind, OpKind::rmsnorm);
  EXPECT_DOUBLE_EQ(fused[2].traffic.bytes, fused_norm);
  EXPECT_FALSE(fused[3].counted);
  EXPECT_EQ(fused[0].kind, OpKind::gemm);
  EXPECT_DOUBLE_EQ(fused[0].traffic.bytes, 33619968.0);
  EXPECT_DOUBLE_EQ(fused[4].traffic.bytes, 8429568.0);
  EXPECT_DOUBLE_EQ(fused[6].traffic.bytes, 16842752.0);
  EXPECT_TRUE(fused[1].counted);
  EXPECT_EQ(fused[1].traffic.bytes, 0.0);
  // Apart: each op its own traffic under its kind.
  const std::vector<UnitTraffic> apart = step_unit_traffic(step, false, false);
  EXPECT_EQ(apart[2].kind, OpKind::residual_add);
  EXPECT_DOUBLE_EQ(apart[2].traffic.bytes, 98304.0);
  EXPECT_TRUE(apart[3].counted);
  EXPECT_DOUBLE_EQ(apart[3].traffic.bytes, 65536.0);
  // A fusing allreduce absorbs both: counted for no kind.
  const std::vector<UnitTraffic> absorbed = step_unit_traffic(step, true, true);
  EXPECT_TRUE(absorbed[1].counted);
  EXPECT_FALSE(absorbed[2].counted);
  EXPECT_FALSE(absorbed[3].counted);
  EXPECT_TRUE(absorbed[4].counted);
  // The per-kind traffic price_step sets is their sum.
  const StepResult r = sized_result();
  ASSERT_EQ(r.unit_traffic.size(), step.ops.size());
  EXPECT_DOUBLE_EQ(r.kind_traffic[static_cast<int>(OpKind::gemm)].bytes, 2 * 33619968.0 + 8429568.0);
  EXPECT_DOUBLE_EQ(r.kind_traffic[static_cast<int>(OpKind::rmsnorm)].bytes, fused_norm);
  EXPECT_EQ(r.kind_traffic[static_cast<int>(OpKind::residual_add)].bytes, 0.0);
  const KindTraffic sum = sum_kind_traffic(absorbed);
  EXPECT_EQ(sum[static_cast<int>(OpKind::rmsnorm)].bytes, 0.0);
  EXPECT_EQ(sum[static_cast<int>(OpKind::residual_add)].bytes, 0.0);
}

TEST(Roofline, EachKindSplitsIntoLargeAndSmallOps) {
  const std::vector<RooflineRow> rows = roofline_rows(sized_result());
  ASSERT_EQ(rows.size(), 3u);  // gemm, attention, rmsnorm: the allreduce has no floor

  // gemm: 44 µs; the spans less 2 µs each are 18 + 20 (large) and 6 (small).
  const RooflineRow& g = row_of(rows, OpKind::gemm);
  EXPECT_DOUBLE_EQ(g.us, 44);
  EXPECT_DOUBLE_EQ(g.floor_us, (2 * 33619968.0 + 8429568.0) / 4e6);  // the aggregate, as before
  ASSERT_TRUE(g.by_size);
  EXPECT_EQ(g.large.ops, 2);
  EXPECT_DOUBLE_EQ(g.large.us, 38);
  EXPECT_DOUBLE_EQ(g.large.bytes, 2 * 33619968.0);
  EXPECT_DOUBLE_EQ(g.large.flops, 2 * 2.0 * 4 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(g.large.floor_us, 2 * 8.404992);
  EXPECT_NEAR(*g.large.pct_of_floor, 100.0 * 16.809984 / 38, 1e-9);
  EXPECT_EQ(g.small.ops, 1);
  EXPECT_DOUBLE_EQ(g.small.us, 6);
  EXPECT_DOUBLE_EQ(g.small.bytes, 8429568.0);
  EXPECT_DOUBLE_EQ(g.small.floor_us, 2.107392);
  EXPECT_NEAR(*g.small.excess_us_per_op, 6 - 2.107392, 1e-9);
  EXPECT_DOUBLE_EQ(g.large.us + g.small.us, g.us);

  // attention: one large op, no small one.
  const RooflineRow& a = row_of(rows, OpKind::attention);
  ASSERT_TRUE(a.by_size);
  EXPECT_EQ(a.large.ops, 1);
  EXPECT_DOUBLE_EQ(a.large.us, 13);
  EXPECT_DOUBLE_EQ(a.large.floor_us, 4.210688);  // max(16,842,752 B / 4000 GB/s, 268 MFLOP / 800 TFLOP/s)
  EXPECT_EQ(a.small.ops, 0);
  EXPECT_EQ(a.small.us, 0);
  EXPECT_FALSE(a.small.excess_us_per_op);

  // rmsnorm: the fused add + norm kernel, one small op at the add's index with its 3 µs.
  const RooflineRow& n = row_of(rows, OpKind::rmsnorm);
  ASSERT_TRUE(n.by_size);
  EXPECT_EQ(n.large.ops, 0);
  EXPECT_FALSE(n.large.pct_of_floor);
  EXPECT_EQ(n.small.ops, 1);
  EXPECT_DOUBLE_EQ(n.small.us, 3);
  EXPECT_DOUBLE_EQ(n.small.bytes, 139264.0);
  EXPECT_NEAR(*n.small.excess_us_per_op, 3 - 0.034816, 1e-12);
}

TEST(Roofline, SizesShareTheKindsFittedTimeInProportionToTheirOps) {
  // The per-kind split from another (median) replay than the spans: each size gets the kind's
  // time in proportion to its ops' fitted span time (38 : 6 of gemm's).
  StepResult r = sized_result();
  r.kind_us[static_cast<int>(OpKind::gemm)] = 55;
  const std::vector<RooflineRow> rows = roofline_rows(r);
  const RooflineRow& g = row_of(rows, OpKind::gemm);
  EXPECT_DOUBLE_EQ(g.large.us, 55 * 38.0 / 44);
  EXPECT_DOUBLE_EQ(g.small.us, 55 * 6.0 / 44);
  // Without the critical rank's spans there is no split; the aggregate stays.
  r.critical_rank = 3;
  const std::vector<RooflineRow> unsplit = roofline_rows(r);
  const RooflineRow& none = row_of(unsplit, OpKind::gemm);
  EXPECT_FALSE(none.by_size);
  EXPECT_DOUBLE_EQ(none.us, 55);
}

TEST(Roofline, AFusingAllreducesAbsorbedOpsAreInNoSize) {
  // Under `fused` the add and the norm are the allreduce's: no rmsnorm row, the rest as before.
  const std::vector<RooflineRow> rows = roofline_rows(sized_result("fused"));
  for (const RooflineRow& r : rows) EXPECT_NE(r.kind, OpKind::rmsnorm);
  EXPECT_EQ(row_of(rows, OpKind::gemm).large.ops, 2);
}

TEST(Roofline, TableAndJsonCarryTheSplitBySize) {
  const Report report = one_strategy_report(sized_result());
  const std::string table = report_to_table(report);
  const std::string want =
      "strategy  kind         us      MB  GFLOP  GB/s  TFLOP/s  floor us  % of floor  >=16MB ops  >=16MB % of floor  "
      "<16MB ops  <16MB us over floor/op\n"
      "------------------------------------------------------------------------------------------------------------"
      "-----------------------------------\n"
      "nccl      gemm       44.0  75.670  0.302  1720      6.9      18.9        43.0           2               44.2  "
      "        1                    3.89\n"
      "nccl      attention  13.0  16.843  0.268  1296     20.6       4.2        32.4           1               32.4  "
      "        0                       -\n"
      "nccl      rmsnorm     3.0   0.139  0.000    46      0.0       0.0         1.2           0                  -  "
      "        1                    2.97\n";
  EXPECT_NE(table.find(want), std::string::npos) << table;

  const nlohmann::ordered_json j = report_to_json(report);
  const auto& rows = j["results"][0]["verify_roofline"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["kind"], "gemm");
  EXPECT_EQ(rows[0]["large"]["ops"], 2);
  EXPECT_EQ(rows[0]["large"]["us"], 38.0);
  EXPECT_EQ(rows[0]["large"]["bytes"], 2 * 33619968.0);
  EXPECT_NEAR(rows[0]["large"]["pct_of_floor"].get<double>(), 44.236800, 1e-6);
  EXPECT_EQ(rows[0]["small"]["ops"], 1);
  EXPECT_EQ(rows[0]["small"]["us"], 6.0);
  EXPECT_NEAR(rows[0]["small"]["excess_us_per_op"].get<double>(), 3.892608, 1e-9);
  EXPECT_TRUE(rows[1]["small"]["excess_us_per_op"].is_null());  // attention: no small op
  EXPECT_TRUE(rows[2]["large"]["pct_of_floor"].is_null());      // rmsnorm: no large op
  EXPECT_EQ(rows[2]["small"].size(), 6u);  // ops, us, bytes, flops, floor_us, excess_us_per_op
}
