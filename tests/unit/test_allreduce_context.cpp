// Allreduces calibrated in their trace context: which (op before, allreduce, op after) cases
// calibrate asks the GPUs for, how they become topology entries, that the topology file carries
// them (and rejects bad ones), and that the simulator prices exactly those allreduces with them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration_table_rejects.hpp"
#include "sim_step.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

using namespace eaglesim;

namespace {

Trace llama8b_tp2() { return read_trace(std::string(EAGLESIM_REPO) + "/traces/llama-3.1-8b_tp2_t4.json"); }
Topology h200() {
  return read_topology(resolve_topology_path(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json"));
}

CalibrationRequest plan(const std::vector<Trace>& traces, std::vector<std::string> strategies) {
  CalibrationPlanOptions o;
  o.ranks = 2;
  o.strategies = std::move(strategies);
  return plan_calibration(traces, o);
}

// Each allreduce of the verify step with the compute ops around it (after the fused ops for fused).
struct Site {
  std::size_t index;
  const Op* before;
  const Op* after;
};
std::vector<Site> sites(const Step& step, bool fused) {
  std::vector<Site> out;
  for (std::size_t i = 0; i < step.ops.size(); ++i) {
    if (!step.ops[i].is_comm()) continue;
    const Op* before = nullptr;
    for (std::size_t j = i; j-- > 0;)
      if (!step.ops[j].is_comm()) { before = &step.ops[j]; break; }
    std::size_t from = i + 1;
    if (fused) {
      if (from < step.ops.size() && step.ops[from].kind == OpKind::residual_add) ++from;
      if (from < step.ops.size() && step.ops[from].kind == OpKind::rmsnorm) ++from;
    }
    const Op* after = nullptr;
    for (std::size_t j = from; j < step.ops.size(); ++j)
      if (!step.ops[j].is_comm()) { after = &step.ops[j]; break; }
    out.push_back({i, before, after});
  }
  return out;
}

}  // namespace

TEST(AllreduceContext, KeysNameStrategySizeAndBothNeighbours) {
  Op gemm;
  gemm.kind = OpKind::gemm;
  gemm.m = 4, gemm.n = 4096, gemm.k = 2048;
  Op add;
  add.kind = OpKind::residual_add;
  add.tokens = 4, add.hidden = 4096;
  const std::string key = allreduce_context_key("oneshot", 32768, gemm, add);
  EXPECT_EQ(key, "oneshot:32768@gemm:4096:2048:bf16>residual_add:4096");
  EXPECT_TRUE(valid_allreduce_context_key(key));
  EXPECT_TRUE(valid_allreduce_context_key("fused:65536@gemm:8192:14336:bf16>gemm:5120:8192:bf16"));
  for (const char* bad : {"", "oneshot", "oneshot:32768", "oneshot:32768@", "oneshot:32768@gemm>residual_add",
                          "oneshot:32768@gemm:4096:2048:bf16", ":32768@gemm:1:1:bf16>act:4",
                          "oneshot:@gemm:1:1:bf16>act:4", "oneshot:0@gemm:1:1:bf16>act:4",
                          "oneshot:-5@gemm:1:1:bf16>act:4", "One-Shot:32768@gemm:1:1:bf16>act:4",
                          "oneshot:32768@allreduce:1>act:4", "oneshot:32768@gemm:1:1:bf16>other:4",
                          "oneshot:3x@gemm:1:1:bf16>act:4", "oneshot:123456789012345678901@gemm:1:1:bf16>act:4",
                          // Strategies with no measured table: free, a selector, or unknown.
                          "ideal:32768@gemm:1:1:bf16>act:4", "auto:32768@gemm:1:1:bf16>act:4",
                          "one_shot:32768@gemm:1:1:bf16>act:4"})
    EXPECT_FALSE(valid_allreduce_context_key(bad)) << bad;
}

TEST(AllreduceContext, PlanAsksForEachSiteOfTheFirstLayerPerStrategy) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"nccl", "fused"});
  ASSERT_FALSE(q.allreduce_contexts.empty());
  std::set<std::string> keys;
  for (const auto& c : q.allreduce_contexts) {
    EXPECT_TRUE(valid_allreduce_context_key(c.key)) << c.key;
    EXPECT_TRUE(keys.insert(c.key).second) << "duplicate " << c.key;
    EXPECT_FALSE(c.before.is_comm());
    EXPECT_FALSE(c.after.is_comm());
    EXPECT_FALSE(c.before.us.has_value());
    EXPECT_EQ(c.key, allreduce_context_key(c.allreduce.strategy, c.allreduce.bytes, c.before, c.after));
    if (c.allreduce.strategy == "fused") {
      // Measured up to the op after the residual add + RMSNorm it absorbs, with those rows.
      EXPECT_NE(c.after.kind, OpKind::residual_add);
      EXPECT_NE(c.after.kind, OpKind::rmsnorm);
      EXPECT_EQ(c.allreduce.tokens * c.allreduce.hidden * 2, c.allreduce.bytes);
    } else {
      EXPECT_EQ(c.after.kind, OpKind::residual_add);
    }
  }
  // Every allreduce site of the verify step's first decoder layer is asked for, for both.
  int first = -1;
  for (const Op& op : t.verify().ops)
    if (op.layer >= 0 && (first < 0 || op.layer < first)) first = op.layer;
  for (bool fused : {false, true})
    for (const Site& s : sites(t.verify(), fused)) {
      if (t.verify().ops[s.index].layer != first) continue;
      const std::string key =
          allreduce_context_key(fused ? "fused" : "nccl", t.verify().ops[s.index].bytes, *s.before, *s.after);
      EXPECT_TRUE(keys.count(key)) << key;
    }
  // One rank: no allreduce is measured at all.
  EXPECT_TRUE(plan_calibration({t}, CalibrationPlanOptions{}).allreduce_contexts.empty());
  // Deduplicated across traces.
  EXPECT_EQ(plan({t, t}, {"nccl", "fused"}).allreduce_contexts.size(), q.allreduce_contexts.size());
}

TEST(AllreduceContext, MeasurementsBecomeEntriesAndUnmeasuredOnesDoNot) {
  const Trace t = llama8b_tp2();
  const CalibrationRequest q = plan({t}, {"nccl", "oneshot"});
  ASSERT_GE(q.allreduce_contexts.size(), 2u);
  CalibrationMeasurements m;
  m.ranks = 2;
  m.compute_us.assign(q.compute.size(), 5.0);
  m.allreduce_us.assign(q.allreduce.size(), 7.0);
  for (std::size_t i = 0; i < q.allreduce_contexts.size(); ++i)
    m.allreduce_context_us.push_back(i == 0 ? std::numeric_limits<double>::quiet_NaN() : 4.0 + 0.5 * i);
  const Calibration cal = build_calibration(q, m, {t});
  EXPECT_EQ(cal.allreduce_context_us.size(), q.allreduce_contexts.size() - 1);
  EXPECT_FALSE(cal.allreduce_context_us.count(q.allreduce_contexts[0].key));  // NaN: not measured
  for (std::size_t i = 1; i < q.allreduce_contexts.size(); ++i)
    EXPECT_DOUBLE_EQ(cal.allreduce_context_us.at(q.allreduce_contexts[i].key), 4.0 + 0.5 * i);
  m.allreduce_context_us.push_back(1.0);  // does not match the request: a programming error
  EXPECT_THROW(build_calibration(q, m, {t}), std::invalid_argument);
}

TEST(AllreduceContext, SimulatorPricesExactlyTheAllreducesBetweenTheMeasuredOps) {
  const Trace t = llama8b_tp2();
  const Step& verify = t.verify();
  // Pick the context of the first decoder layer's first allreduce and count its sites.
  const std::vector<Site> all = sites(verify, false);
  const Site* first = nullptr;
  for (const Site& s : all)
    if (verify.ops[s.index].layer >= 0 && s.before && s.after) { first = &s; break; }
  ASSERT_NE(first, nullptr);
  const std::int64_t bytes = verify.ops[first->index].bytes;
  const std::string key = allreduce_context_key("nccl", bytes, *first->before, *first->after);
  int matching = 0;
  for (const Site& s : all)
    if (s.before && s.after && verify.ops[s.index].bytes == bytes &&
        allreduce_context_key("nccl", bytes, *s.before, *s.after) == key)
      ++matching;
  ASSERT_GT(matching, 0);
  ASSERT_LT(matching, static_cast<int>(all.size()));  // the other site must keep its table price

  Topology plain = h200();
  plain.calibration.ranks = 2;
  plain.calibration.allreduce["nccl"] = {{1024, 10.0}, {1 << 20, 40.0}};
  Topology with = plain;
  const double table_us = 10.0 * std::pow(double(bytes) / 1024.0, std::log(4.0) / std::log(1024.0));
  with.calibration.allreduce_context_us[key] = 3.0;
  const StepResult a = test_support::simulate_verify(t, plain, "nccl");
  const StepResult b = test_support::simulate_verify(t, with, "nccl");
  EXPECT_NEAR(b.step_us - a.step_us, matching * (3.0 - table_us), 1e-6 * a.step_us);
  bool noted = false;
  for (const auto& n : b.notes) noted |= n.find("in context") != std::string::npos;
  EXPECT_TRUE(noted);
  // Another strategy's entry, or an entry measured on another rank count, changes nothing.
  Topology other = plain;
  other.calibration.allreduce_context_us[allreduce_context_key("oneshot", bytes, *first->before, *first->after)] = 3.0;
  EXPECT_DOUBLE_EQ(test_support::simulate_verify(t, other, "nccl").step_us, a.step_us);
  Topology one_rank = with;
  one_rank.calibration.ranks = 1;
  EXPECT_DOUBLE_EQ(test_support::simulate_verify(t, one_rank, "nccl").step_us,
                   test_support::simulate_verify(t, [&] { Topology p = plain; p.calibration.ranks = 1; return p; }(),
                                                 "nccl").step_us);
}

TEST(AllreduceContext, TopologyFileCarriesThemAndRejectsBadOnes) {
  Topology topo = h200();
  topo.calibration.ranks = 2;
  topo.calibration.allreduce_context_us = {{"oneshot:32768@gemm:4096:2048:bf16>residual_add:4096", 4.25},
                                           {"fused:32768@gemm:4096:7168:bf16>gemm:6144:4096:bf16", 6.5}};
  const std::string text = topology_to_string(topo);
  ASSERT_NE(text.find("\"allreduce_context_us\""), std::string::npos);
  const Topology back = parse_topology(nlohmann::json::parse(text), "cal.json");
  EXPECT_EQ(back.calibration.allreduce_context_us, topo.calibration.allreduce_context_us);

  auto rejects = [&](const char* key, const nlohmann::json& value, const char* says) {
    test_support::expect_calibration_table_rejects(text, "allreduce_context_us", key, value, says);
  };
  rejects("oneshot@gemm>residual_add", 4.0, "STRATEGY:BYTES@FROM>TO");
  rejects("auto:32768@gemm:4096:2048:bf16>residual_add:4096", 4.0, "one of nccl, oneshot, twoshot, fused, quant");
  rejects("oneshot:32768@gemm:4096:2048:bf16>residual_add:4096", 1e12, "oneshot:32768");
  rejects("oneshot:32768@gemm:4096:2048:bf16>residual_add:4096", "slow", "oneshot:32768");
  nlohmann::json j = nlohmann::json::parse(text);
  j["calibration"]["allreduce_context_us"] = 3;
  EXPECT_THROW(parse_topology(j, "cal.json"), InputError);
}
