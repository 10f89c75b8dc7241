// The cost model of the per-cycle ops (top-k selection, tree building, sampling, host
// synchronisation) and of attention over a batch of requests, checked against the documented
// formulas (src/cost/compute_model.cpp) on the 2 x H200 preset, and the simulator's pricing
// keeping ops apart that differ only in their batch.
#include <gtest/gtest.h>

#include <algorithm>

#include "cost/compute_model.hpp"
#include "backend/op_pricing.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;

namespace {

// The preset's datasheet model: its H200 calibration (fitted models, launch gap) set aside.
Topology h200() {
  Topology t = read_topology(std::string(EAGLESIM_REPO) + "/models/topologies/2x-h200-nvlink.json");
  t.calibration = Calibration{};
  return t;
}

constexpr double kH200Bw = 4800e3 * 0.78;  // B/us at the bandwidth ceiling

Op cycle_op(OpKind kind, std::int64_t rows, std::int64_t vocab, std::int64_t topk = 0) {
  Op op;
  op.kind = kind;
  op.name = to_string(kind);
  op.rows = rows;
  op.vocab = vocab;
  op.topk = topk;
  return op;
}

Op attention(std::int64_t batch, std::int64_t q, std::int64_t kv, std::vector<std::int64_t> kv_lens = {}) {
  Op op;
  op.kind = OpKind::attention;
  op.name = "attn";
  op.q_tokens = q;
  op.kv_len = kv;
  op.heads = 32;
  op.kv_heads = 8;
  op.head_dim = 128;
  op.batch = batch;
  op.kv_lens = std::move(kv_lens);
  if (!op.kv_lens.empty()) op.kv_len = *std::max_element(op.kv_lens.begin(), op.kv_lens.end());
  return op;
}

}  // namespace

TEST(CycleOpCost, SamplingStreamsTheLogitsOnceThenOneKernel) {
  const Topology t = h200();
  const double gap = t.gpu.launch_gap_us;
  // 64 rows x 128256 fp32 logits = 32.8 MB, read once by the argmax.
  const Op s = cycle_op(OpKind::sampling, 64, 128256);
  EXPECT_NEAR(compute_cost(s, t).us, 4.0 * 64 * 128256 / kH200Bw + gap, 1e-9);
  // One row: the read is under the launch gap.
  EXPECT_DOUBLE_EQ(compute_cost(cycle_op(OpKind::sampling, 1, 32000), t).us, 2 * gap);
  // 2048 rows (batch 64 x 32 draft tokens) of Llama's vocabulary: 1.05 GB of logits, ~280 us.
  EXPECT_GT(compute_cost(cycle_op(OpKind::sampling, 2048, 128256), t).us, 250.0);
}

TEST(CycleOpCost, TopkSelectIsSoftmaxThenTopk) {
  const Topology t = h200();
  const Op k = cycle_op(OpKind::topk_select, 512, 32000, 8);
  const double logits = 4.0 * 512 * 32000;
  EXPECT_NEAR(compute_cost(k, t).us, 2 * logits / kH200Bw + (logits + 12.0 * 512 * 8) / kH200Bw, 1e-9);
  EXPECT_DOUBLE_EQ(compute_cost(cycle_op(OpKind::topk_select, 1, 32000, 1), t).us, 2 * t.gpu.launch_gap_us);
}

TEST(CycleOpCost, TreeBuildIsFiveSmallKernelsAndHostSyncAFixedRoundTrip) {
  const Topology t = h200();
  Op tree;
  tree.kind = OpKind::tree_build;
  tree.name = "tree_build";
  tree.batch = 8;
  tree.candidates = 68;
  tree.tokens = 8;
  EXPECT_DOUBLE_EQ(compute_cost(tree, t).us, 5 * t.gpu.launch_gap_us);
  Op sync;
  sync.kind = OpKind::host_sync;
  sync.name = "host_sync";
  EXPECT_DOUBLE_EQ(compute_cost(sync, t).us, 6.0 + t.gpu.launch_gap_us);
  Topology cal = t;  // a calibrated launch gap, when present, is the one used
  cal.calibration.launch_gap_us = 1.0;
  EXPECT_DOUBLE_EQ(compute_cost(sync, cal).us, 7.0);
}

TEST(CycleOpCost, BatchedAttentionReadsEveryRequestsKvOnce) {
  const Topology t = h200();
  // Eight requests of 4096 positions cost what one kernel over their 32768 positions does.
  const double eight = compute_cost(attention(8, 4, 4096), t).us;
  const double one = compute_cost(attention(1, 4, 4096), t).us;
  EXPECT_GT(eight, 4 * one);
  EXPECT_LT(eight, 8 * one);  // one launch and one ramp, not eight
  // Ragged lengths count by their sum.
  const double ragged = compute_cost(attention(2, 4, 0, {1024, 7168}), t).us;
  EXPECT_DOUBLE_EQ(ragged, compute_cost(attention(2, 4, 4096), t).us);
}

TEST(CycleOpCost, CalibratedAttentionTableIsReadAtTheBatchsKvPositions) {
  Topology t = h200();
  t.calibration.attention["gqa:32:8:128"] = {{1024, 20.0}, {8192, 48.0}, {65536, 300.0}};
  const OpCost batched = compute_cost(attention(4, 4, 2048), t);  // 8192 positions in all
  EXPECT_TRUE(batched.calibrated);
  EXPECT_NEAR(batched.us, 48.0, 1e-9);
}

TEST(CycleOpCost, PricingKeepsOpsThatDifferOnlyInTheirBatchApart) {
  const Topology t = h200();
  Step s;
  s.name = "verify";
  s.ops = {attention(1, 4, 4096), attention(8, 4, 4096), attention(2, 4, 0, {1024, 7168}),
           attention(2, 4, 0, {4096, 4096})};
  PricingOptions opts;
  opts.compute_cost = [&](const Op& op) { return compute_cost(op, t); };
  const StepPlan plan = plan_step(s, opts);
  ASSERT_EQ(plan.ops.size(), 4u);
  EXPECT_NE(plan.ops[0].us, plan.ops[1].us);
  EXPECT_DOUBLE_EQ(plan.ops[2].us, plan.ops[3].us);  // the same KV positions in all
  EXPECT_DOUBLE_EQ(plan.ops[1].us, compute_cost(s.ops[1], t).us);
}
