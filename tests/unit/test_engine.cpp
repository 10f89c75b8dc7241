// The simulator's engine in isolation: fake communicators and a fixed compute-cost function, so
// every expected time below is worked out by hand.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "backend/event_simulator.hpp"
#include "backend/op_pricing.hpp"

namespace eaglesim {
namespace {

// Prices every allreduce at 10 us (+ 1 us per MB), optionally fusing residual_add + rmsnorm.
class FakeComm : public CommCostModel {
 public:
  explicit FakeComm(bool fuses = false) : fuses_(fuses) {}
  std::string name() const override { return fuses_ ? "fake-fused" : "fake"; }
  CommSupport supports(const Topology&, int, std::int64_t) const override { return {}; }
  CommCost cost(const CommQuery& q) const override {
    ++calls;
    return {10.0 + q.bytes / 1e6, fmt_detail(q.ranks), false, false};
  }
  bool fuses_residual_norm() const override { return fuses_; }
  mutable int calls = 0;

 private:
  static std::string fmt_detail(int ranks) { return "fake " + std::to_string(ranks) + " ranks"; }
  bool fuses_;
};

OpCost fixed_cost(const Op& op) {
  switch (op.kind) {
    case OpKind::gemm: return {5.0};
    case OpKind::residual_add: return {0.5};
    case OpKind::rmsnorm: return {1.0};
    case OpKind::other: return {*op.us, false, false, true};
    default: return {2.0};
  }
}

Op make(OpKind kind, int layer, const char* name) {
  Op op;
  op.kind = kind;
  op.layer = layer;
  op.name = name;
  op.tokens = 4;
  op.hidden = 4096;
  op.m = 4;
  op.n = 4096;
  op.k = 4096;
  if (kind == OpKind::allreduce) op.bytes = 32768;
  return op;
}

// G(5) AR(10) R(0.5) N(1) | G(5) AR(10) R(0.5) N(1, final norm)
Step two_layer_step() {
  Step s;
  s.name = "verify";
  s.ops = {make(OpKind::gemm, 0, "o_proj"),         make(OpKind::allreduce, 0, "attn_ar"),
           make(OpKind::residual_add, 0, "residual"), make(OpKind::rmsnorm, 1, "input_norm"),
           make(OpKind::gemm, 1, "down_proj"),      make(OpKind::allreduce, 1, "mlp_ar"),
           make(OpKind::residual_add, 1, "residual"), make(OpKind::rmsnorm, -1, "final_norm")};
  return s;
}

// The fused residual add + norm kernel: 1.2 us, less than its two ops apart (0.5 + 1).
OpCost fused_add_norm_cost(const Op& norm) {
  EXPECT_EQ(norm.kind, OpKind::rmsnorm) << "priced by the pair's norm";
  return {1.2};
}

// The tests worked out by hand on separate ops run them unfused; the fusion tests turn it on.
StepPlan plan(const Step& s, const CommCostModel& comm, OpTimes times = OpTimes::model, bool imported = false,
              bool fuse_add_norm = false) {
  PricingOptions po;
  po.comm = &comm;
  po.query.ranks = 2;
  po.compute_cost = fixed_cost;
  po.add_norm_cost = fused_add_norm_cost;
  po.fuse_add_norm = fuse_add_norm;
  po.op_times = times;
  po.trace_imported = imported;
  return plan_step(s, po);
}

StepPlan fused_plan(const Step& s, const CommCostModel& comm, OpTimes times = OpTimes::model, bool imported = false) {
  return plan(s, comm, times, imported, true);
}

TEST(Engine, NoSkewIsSumOfOps) {
  FakeComm comm;
  Step s = two_layer_step();
  SimulationOptions eo;
  eo.ranks = 2;
  StepResult r = simulate_step(s, plan(s, comm), eo);
  // 5 + 10.032768 + 0.5 + 1 + 5 + 10.032768 + 0.5 + 1
  EXPECT_NEAR(r.step_us, 33.065536, 1e-9);
  EXPECT_NEAR(r.comm_us, 20.065536, 1e-9);
  EXPECT_NEAR(r.compute_us, 13.0, 1e-12);
  EXPECT_EQ(r.allreduce_count, 2);
  EXPECT_NEAR(r.allreduce_mean_us, 10.032768, 1e-9);
  EXPECT_NEAR(r.kind_us[static_cast<int>(OpKind::gemm)], 10.0, 1e-12);
  EXPECT_NEAR(r.kind_us[static_cast<int>(OpKind::rmsnorm)], 2.0, 1e-12);
  EXPECT_EQ(comm.calls, 1) << "one distinct allreduce size is priced once";
  EXPECT_TRUE(r.timeline.spans.empty()) << "spans only on request";
}

// Every distinct allreduce size is priced once, however many a step carries, and each op gets
// its own size's cost.
TEST(Engine, ManyAllreduceSizesArePricedOncePerSize) {
  FakeComm comm;
  Step s;
  s.name = "verify";
  for (int round = 0; round < 3; ++round)
    for (int size = 1; size <= 20; ++size) {
      Op ar = make(OpKind::allreduce, 0, "ar");
      ar.bytes = size * 1000000;
      s.ops.push_back(ar);
    }
  const StepPlan p = plan(s, comm);
  EXPECT_EQ(comm.calls, 20);
  ASSERT_EQ(p.ops.size(), 60u);
  for (std::size_t i = 0; i < p.ops.size(); ++i) EXPECT_DOUBLE_EQ(p.ops[i].us, 10.0 + static_cast<double>(i % 20 + 1)) << i;
}

TEST(Engine, RendezvousWithStartSkew) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;  // AR = exactly 10 us
  SimulationOptions eo;
  eo.ranks = 2;
  eo.start_offset_us = {0, 3};
  eo.want_timeline = true;
  StepResult r = simulate_step(s, plan(s, comm), eo);
  // rank0: G 0..5, rank1: G 3..8; AR: last arrival 8 -> both leave at 18 (rank 0 waited 3);
  // R 18.5, N 19.5, G 24.5, AR 34.5, R 35, N 36.
  EXPECT_DOUBLE_EQ(r.step_us, 36.0);
  EXPECT_EQ(r.critical_rank, 0) << "ties go to the rank that waited";
  ASSERT_EQ(r.rank_wait_us.size(), 2u);
  EXPECT_DOUBLE_EQ(r.rank_wait_us[0], 3.0);
  EXPECT_DOUBLE_EQ(r.rank_wait_us[1], 0.0);
  EXPECT_DOUBLE_EQ(r.comm_us, 23.0);
  EXPECT_DOUBLE_EQ(r.compute_us, 13.0);
  // The first allreduce span on each rank.
  int seen = 0;
  for (const Span& sp : r.timeline.spans) {
    if (sp.kind != OpKind::allreduce || sp.layer != 0) continue;
    ++seen;
    EXPECT_DOUBLE_EQ(sp.end_us, 18.0);
    EXPECT_DOUBLE_EQ(sp.start_us, sp.rank == 0 ? 5.0 : 8.0);
    EXPECT_DOUBLE_EQ(sp.wait_us, sp.rank == 0 ? 3.0 : 0.0);
    EXPECT_EQ(sp.bytes, 0);
  }
  EXPECT_EQ(seen, 2);
  EXPECT_EQ(r.timeline.spans.size(), 16u);
}

// Ranks with the same start and slowdown walk the same clock: four ranks paired up report, rank
// by rank and span by span, what the two distinct ranks report alone.
TEST(Engine, RanksThatStartTogetherMatchTheirPeers) {
  FakeComm comm;
  Step s = two_layer_step();
  SimulationOptions two;
  two.ranks = 2;
  two.start_offset_us = {3, 0};
  two.compute_scale = {1, 1.5};
  two.want_timeline = true;
  SimulationOptions four = two;
  four.ranks = 4;
  four.start_offset_us = {3, 0, 3, 0};
  four.compute_scale = {1, 1.5, 1, 1.5};
  const StepPlan p = plan(s, comm);
  const StepResult a = simulate_step(s, p, two);
  const StepResult b = simulate_step(s, p, four);
  EXPECT_EQ(b.step_us, a.step_us);
  EXPECT_EQ(b.critical_rank, a.critical_rank);
  EXPECT_EQ(b.comm_us, a.comm_us);
  EXPECT_EQ(b.compute_us, a.compute_us);
  EXPECT_EQ(b.kind_us, a.kind_us);
  ASSERT_EQ(b.rank_wait_us.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(b.rank_wait_us[r], a.rank_wait_us[r % 2]) << "rank " << r;
  EXPECT_GT(a.rank_wait_us[0] + a.rank_wait_us[1], 0.0) << "the ranks differ";
  ASSERT_EQ(b.timeline.spans.size(), 2 * a.timeline.spans.size());
  for (std::size_t i = 0; i < b.timeline.spans.size(); ++i) {
    const Span& x = b.timeline.spans[i];
    const Span& y = a.timeline.spans[i / 4 * 2 + i % 2];
    EXPECT_EQ(x.rank, static_cast<int>(i % 4)) << "spans of an op in rank order";
    EXPECT_EQ(x.op_index, y.op_index);
    EXPECT_EQ(x.start_us, y.start_us) << "span " << i;
    EXPECT_EQ(x.end_us, y.end_us) << "span " << i;
    EXPECT_EQ(x.wait_us, y.wait_us) << "span " << i;
  }
  SimulationOptions one_differs = four;
  one_differs.compute_scale = {1, 1.5, 1, 1.25};
  EXPECT_NE(simulate_step(s, p, one_differs).rank_wait_us[3], b.rank_wait_us[3]) << "a rank of its own";
}

TEST(Engine, OffsetsAreRelativeToTheEarliestRank) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;
  SimulationOptions eo;
  eo.ranks = 2;
  eo.start_offset_us = {100, 103};
  EXPECT_DOUBLE_EQ(simulate_step(s, plan(s, comm), eo).step_us, 36.0);
}

TEST(Engine, ComputeSlowdownMakesTheSlowRankCritical) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;
  SimulationOptions eo;
  eo.ranks = 2;
  eo.compute_scale = {1, 2};
  StepResult r = simulate_step(s, plan(s, comm), eo);
  // rank1 G 0..10; AR 10..20; R 21; N 23; G 33; AR 33..43; R 44; N 46. rank0 finishes at 44.5.
  EXPECT_DOUBLE_EQ(r.step_us, 46.0);
  EXPECT_EQ(r.critical_rank, 1);
  EXPECT_DOUBLE_EQ(r.compute_us, 26.0);
  EXPECT_DOUBLE_EQ(r.comm_us, 20.0);
  EXPECT_DOUBLE_EQ(r.rank_wait_us[0], 5.0 + 6.5);
  EXPECT_DOUBLE_EQ(r.rank_wait_us[1], 0.0);
}

TEST(Engine, FusedStrategyAbsorbsResidualAndNorm) {
  FakeComm fused(true);
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;
  StepPlan p = plan(s, fused);
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.ops[1].absorbed, 2);
  EXPECT_EQ(p.ops[3].absorbed, 2);
  SimulationOptions eo;
  eo.ranks = 2;
  eo.want_timeline = true;
  StepResult r = simulate_step(s, p, eo);
  EXPECT_DOUBLE_EQ(r.step_us, 30.0);  // G 5 + AR 10 + G 5 + AR 10: residual and norms are gone
  EXPECT_DOUBLE_EQ(r.compute_us, 10.0);
  EXPECT_EQ(r.allreduce_count, 2);
  for (const Span& sp : r.timeline.spans) {
    EXPECT_NE(sp.kind, OpKind::residual_add);
    EXPECT_NE(sp.kind, OpKind::rmsnorm);
    if (sp.kind == OpKind::allreduce) {
      EXPECT_NE(sp.detail.find("residual_add rmsnorm"), std::string::npos) << sp.detail;
    }
  }
  EXPECT_EQ(r.timeline.spans.size(), 8u);
}

TEST(Engine, FusionNeedsANormRightAfter) {
  std::vector<Op> ops = {make(OpKind::allreduce, 3, "ar"), make(OpKind::residual_add, 3, "res"),
                         make(OpKind::gemm, 3, "g")};
  EXPECT_EQ(fusable_followers(ops, 0), 0) << "residual alone: no fused kernel";
  ops = {make(OpKind::allreduce, 3, "ar"), make(OpKind::rmsnorm, 5, "norm")};
  EXPECT_EQ(fusable_followers(ops, 0), 0) << "norm two layers later is not the next layer's input norm";
  ops = {make(OpKind::allreduce, 3, "ar"), make(OpKind::rmsnorm, 4, "norm")};
  EXPECT_EQ(fusable_followers(ops, 0), 1) << "fused_add_rms_norm as one op";
  ops = {make(OpKind::allreduce, 3, "ar"), make(OpKind::residual_add, 3, "r"), make(OpKind::rmsnorm, 3, "n")};
  EXPECT_EQ(fusable_followers(ops, 0), 2);
  ops = {make(OpKind::allreduce, 3, "ar"), make(OpKind::gemm, 3, "g"), make(OpKind::rmsnorm, 3, "n")};
  EXPECT_EQ(fusable_followers(ops, 0), 0) << "only immediately following ops fuse";
}

TEST(Engine, NonFusingStrategyKeepsEveryOp) {
  FakeComm comm;
  Step s = two_layer_step();
  EXPECT_EQ(plan(s, comm).ops.size(), s.ops.size());
}

TEST(Engine, Deterministic) {
  FakeComm comm;
  Step s = two_layer_step();
  SimulationOptions eo;
  eo.ranks = 4;
  eo.start_offset_us = {1.5, 0, 7.25, 3};
  eo.compute_scale = {1, 1.1, 0.9, 1.3};
  eo.want_timeline = true;
  StepResult a = simulate_step(s, plan(s, comm), eo);
  StepResult b = simulate_step(s, plan(s, comm), eo);
  EXPECT_EQ(a.step_us, b.step_us);
  EXPECT_EQ(a.kind_us, b.kind_us);
  EXPECT_EQ(a.rank_wait_us, b.rank_wait_us);
  ASSERT_EQ(a.timeline.spans.size(), b.timeline.spans.size());
  for (std::size_t i = 0; i < a.timeline.spans.size(); ++i) {
    EXPECT_EQ(a.timeline.spans[i].start_us, b.timeline.spans[i].start_us);
    EXPECT_EQ(a.timeline.spans[i].end_us, b.timeline.spans[i].end_us);
    EXPECT_EQ(a.timeline.spans[i].rank, b.timeline.spans[i].rank);
  }
}

TEST(Engine, OpTimesSelectMeasuredOrModel) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.us = 100.0;  // measured times, including the allreduces
  // model: measured times ignored.
  EXPECT_DOUBLE_EQ(plan(s, comm, OpTimes::model, true).ops[0].us, 5.0);
  // auto on a generated trace: model; on an imported trace: measured.
  EXPECT_DOUBLE_EQ(plan(s, comm, OpTimes::automatic, false).ops[0].us, 5.0);
  StepPlan imported = plan(s, comm, OpTimes::automatic, true);
  EXPECT_DOUBLE_EQ(imported.ops[0].us, 100.0);
  // Allreduces are always priced by the strategy, never by their recorded duration.
  EXPECT_NEAR(imported.ops[1].us, 10.032768, 1e-9);
  EXPECT_NEAR(plan(s, comm, OpTimes::measured).ops[1].us, 10.032768, 1e-9);
  // measured: required on every compute op.
  s.ops[4].us.reset();
  EXPECT_THROW(plan(s, comm, OpTimes::measured), InputError);
  // auto on an imported trace falls back to the model for the op without a time, and says so.
  StepPlan mixed = plan(s, comm, OpTimes::automatic, true);
  EXPECT_DOUBLE_EQ(mixed.ops[4].us, 5.0);
  EXPECT_FALSE(mixed.notes.empty());
}

// SGLang and vLLM run a residual add and the RMSNorm after it as one fused_add_rmsnorm kernel.
// G(5) AR(10) [R N](1.2) | G(5) AR(10) [R N](1.2): the MLP's add with the final norm fuses too.
TEST(Engine, ResidualAddAndNormRunAsOneKernel) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;
  const StepPlan p = fused_plan(s, comm);
  ASSERT_EQ(p.ops.size(), 6u);
  for (int i : {2, 5}) {
    const PricedOp& f = p.ops[static_cast<std::size_t>(i)];
    EXPECT_EQ(s.ops[static_cast<std::size_t>(f.op_index)].kind, OpKind::residual_add) << "the kernel takes the add's place";
    EXPECT_EQ(f.absorbed, 1);
    EXPECT_EQ(f.kind, OpKind::rmsnorm) << "reported as the norm";
    EXPECT_FALSE(f.collective);
    EXPECT_DOUBLE_EQ(f.us, 1.2);
  }
  EXPECT_EQ(p.ops[2].op_index, 2);
  EXPECT_EQ(p.ops[3].op_index, 4) << "the norm is not priced again";
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes.back().find("verify: 2 residual_add + rmsnorm pairs run as one fused kernel each"),
            std::string::npos) << p.notes.back();
  EXPECT_NE(p.notes.back().find("unfused_add_norm"), std::string::npos);

  SimulationOptions eo;
  eo.ranks = 2;
  eo.want_timeline = true;
  const StepResult r = simulate_step(s, p, eo);
  EXPECT_NEAR(r.step_us, 32.4, 1e-12);  // 0.3 us less per pair than 33: 5 + 10 + 1.2 + 5 + 10 + 1.2
  EXPECT_NEAR(r.compute_us, 12.4, 1e-12);
  EXPECT_NEAR(r.kind_us[static_cast<int>(OpKind::rmsnorm)], 2.4, 1e-12);
  EXPECT_DOUBLE_EQ(r.kind_us[static_cast<int>(OpKind::residual_add)], 0.0);
  double kinds = 0;
  for (double k : r.kind_us) kinds += k;
  EXPECT_NEAR(kinds, r.step_us, 1e-12) << "the per-kind split still adds up to the step";
  ASSERT_EQ(r.timeline.spans.size(), 12u);
  const Span& fused = r.timeline.spans[4];  // rank 0 runs op 0, 1, then the fused kernel (2 ranks each)
  EXPECT_EQ(fused.kind, OpKind::rmsnorm);
  EXPECT_EQ(fused.name, "residual+input_norm");
  EXPECT_EQ(fused.op_index, 2);
  EXPECT_EQ(fused.layer, 0);
  EXPECT_NE(fused.detail.find("fused: residual_add + rmsnorm"), std::string::npos) << fused.detail;
  EXPECT_DOUBLE_EQ(fused.start_us, 15.0);
  EXPECT_NEAR(fused.end_us, 16.2, 1e-12);
  EXPECT_NEAR(r.timeline.spans[6].start_us, 16.2, 1e-12) << "the next op starts after the fused kernel";
}

TEST(Engine, OnlyAnAddRightBeforeANormOfItsShapeFuses) {
  FakeComm comm;
  Step s;
  s.name = "verify";
  // Another hidden size: no fused kernel adds one width and normalises another.
  Op wide = make(OpKind::rmsnorm, 0, "norm");
  wide.hidden = 8192;
  s.ops = {make(OpKind::residual_add, 0, "res"), wide};
  EXPECT_EQ(fused_plan(s, comm).ops.size(), 2u);
  EXPECT_FALSE(fusable_add_norm(s.ops, 0));
  Op fewer = make(OpKind::rmsnorm, 0, "norm");
  fewer.tokens = 1;
  s.ops = {make(OpKind::residual_add, 0, "res"), fewer};
  EXPECT_EQ(fused_plan(s, comm).ops.size(), 2u);
  // Another op between them: the add's output is not the norm's input in one kernel.
  s.ops = {make(OpKind::residual_add, 0, "res"), make(OpKind::gemm, 0, "g"), make(OpKind::rmsnorm, 0, "norm")};
  EXPECT_EQ(fused_plan(s, comm).ops.size(), 3u);
  // A norm before the add, an add alone, a norm alone: nothing to fuse.
  s.ops = {make(OpKind::rmsnorm, 0, "norm"), make(OpKind::residual_add, 0, "res")};
  const StepPlan p = fused_plan(s, comm);
  EXPECT_EQ(p.ops.size(), 2u);
  for (const auto& n : p.notes) EXPECT_EQ(n.find("fused kernel"), std::string::npos) << n;
  EXPECT_FALSE(fusable_add_norm(s.ops, 1)) << "the last op has no op after it";
  s.ops = {make(OpKind::residual_add, 0, "res"), make(OpKind::rmsnorm, 0, "norm")};
  EXPECT_TRUE(fusable_add_norm(s.ops, 0));
  EXPECT_EQ(fused_plan(s, comm).ops.size(), 1u);
}

TEST(Engine, AFusedAllreduceKeepsTheAddAndNormItAbsorbs) {
  FakeComm fused(true);
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;
  const StepPlan p = fused_plan(s, fused);
  ASSERT_EQ(p.ops.size(), 4u);  // G AR(+R N) G AR(+R N): nothing left for an add+norm kernel
  EXPECT_EQ(p.ops[1].absorbed, 2);
  EXPECT_EQ(p.ops[3].absorbed, 2);
  for (const auto& n : p.notes) EXPECT_EQ(n.find("residual_add + rmsnorm"), std::string::npos) << n;
  // An allreduce that absorbs only a norm in its own or the next layer leaves a later pair alone;
  // a pair it cannot absorb (the norm two layers on) fuses on its own.
  s.ops = {make(OpKind::gemm, 0, "g"), make(OpKind::allreduce, 0, "ar"), make(OpKind::residual_add, 0, "res"),
           make(OpKind::rmsnorm, 2, "norm")};
  const StepPlan apart = fused_plan(s, fused);
  ASSERT_EQ(apart.ops.size(), 3u);
  EXPECT_EQ(apart.ops[1].absorbed, 0);
  EXPECT_EQ(apart.ops[2].absorbed, 1);
  EXPECT_EQ(apart.ops[2].kind, OpKind::rmsnorm);
}

TEST(Engine, NoFusedAddNormRunsThePairAsTwoKernels) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.bytes = 0;
  const StepPlan apart = plan(s, comm, OpTimes::model, false, false);
  EXPECT_EQ(apart.ops.size(), s.ops.size());
  for (const PricedOp& p : apart.ops) EXPECT_EQ(p.absorbed, 0);
  for (const auto& n : apart.notes) EXPECT_EQ(n.find("residual_add + rmsnorm"), std::string::npos) << n;
  SimulationOptions eo;
  eo.ranks = 2;
  EXPECT_DOUBLE_EQ(simulate_step(s, apart, eo).step_us, 33.0);
  EXPECT_NEAR(simulate_step(s, fused_plan(s, comm), eo).step_us, 32.4, 1e-12);
}

// Measured times are the kernels the recording ran: a pair with them stays two ops.
TEST(Engine, MeasuredAddAndNormKeepTheirRecordedKernels) {
  FakeComm comm;
  Step s = two_layer_step();
  for (Op& op : s.ops) op.us = 3.0;
  EXPECT_EQ(fused_plan(s, comm, OpTimes::measured).ops.size(), s.ops.size());
  EXPECT_EQ(fused_plan(s, comm, OpTimes::automatic, true).ops.size(), s.ops.size());
  // One of the two without a time (the model prices it, the other is recorded): still apart.
  s.ops[3].us.reset();
  EXPECT_EQ(fused_plan(s, comm, OpTimes::automatic, true).ops.size(), s.ops.size());
  // Both without: the model prices both, as one kernel.
  s.ops[2].us.reset();
  const StepPlan p = fused_plan(s, comm, OpTimes::automatic, true);
  EXPECT_EQ(p.ops.size(), s.ops.size() - 1);
  EXPECT_DOUBLE_EQ(p.ops[2].us, 1.2);
  // A generated trace's recorded times are not used: the model fuses.
  EXPECT_EQ(fused_plan(s, comm, OpTimes::automatic, false).ops.size(), s.ops.size() - 2);
}

TEST(Engine, AFusedPairNeedsTheFusedKernelsCost) {
  FakeComm comm;
  Step s = two_layer_step();
  PricingOptions po;
  po.comm = &comm;
  po.compute_cost = fixed_cost;
  po.op_times = OpTimes::model;
  EXPECT_THROW(plan_step(s, po), InputError);
  po.fuse_add_norm = false;
  EXPECT_EQ(plan_step(s, po).ops.size(), s.ops.size());
}

TEST(Engine, OpTimesByName) {
  EXPECT_EQ(op_times_named("auto"), OpTimes::automatic);
  EXPECT_EQ(op_times_named("measured"), OpTimes::measured);
  EXPECT_EQ(op_times_named("fast"), std::nullopt);
  for (OpTimes t : {OpTimes::automatic, OpTimes::model, OpTimes::measured}) EXPECT_EQ(op_times_named(to_string(t)), t);
}

TEST(Engine, RejectsPerRankVectorsOfTheWrongLength) {
  FakeComm comm;
  Step s = two_layer_step();
  SimulationOptions eo;
  eo.ranks = 2;
  eo.start_offset_us = {0, 1, 2};
  EXPECT_THROW(simulate_step(s, plan(s, comm), eo), InputError);
  eo.start_offset_us = {0, -1};
  EXPECT_THROW(simulate_step(s, plan(s, comm), eo), InputError);
  eo.start_offset_us.clear();
  eo.compute_scale = {1, 0};
  EXPECT_THROW(simulate_step(s, plan(s, comm), eo), InputError);
}

TEST(Engine, AllreduceWithoutStrategyIsAnError) {
  Step s = two_layer_step();
  PricingOptions po;
  po.compute_cost = fixed_cost;
  EXPECT_THROW(plan_step(s, po), InputError);
}

// The engine is not tied to one stream: ops on a second stream overlap with the first unless
// they depend on it, and a collective waits for its own stream only.
TEST(Engine, SecondStreamOverlapsAndDependenciesOrder) {
  Step s;
  s.name = "verify";
  s.ops = {make(OpKind::gemm, 0, "a"), make(OpKind::gemm, 0, "b"), make(OpKind::gemm, 0, "c")};
  StepPlan p;
  p.step = "verify";
  p.stream_names = {"compute", "side"};
  p.ops.resize(3);
  for (int i = 0; i < 3; ++i) {
    p.ops[i].op_index = i;
    p.ops[i].kind = OpKind::gemm;
  }
  p.ops[0].us = 5;                        // stream 0: 0..5
  p.ops[1].us = 3; p.ops[1].stream = 1;   // stream 1: 0..3, overlaps
  p.ops[2].us = 2; p.ops[2].stream = 1;   // stream 1, waits for op 0: 5..7
  p.ops[2].depends_on = 0;
  p.has_dependencies = true;
  SimulationOptions eo;
  eo.ranks = 1;
  eo.want_timeline = true;
  StepResult r = simulate_step(s, p, eo);
  EXPECT_DOUBLE_EQ(r.step_us, 7.0);
  ASSERT_EQ(r.timeline.spans.size(), 3u);
  EXPECT_DOUBLE_EQ(r.timeline.spans[1].start_us, 0.0);
  EXPECT_DOUBLE_EQ(r.timeline.spans[2].start_us, 5.0);
  EXPECT_EQ(r.timeline.spans[2].stream, 1);
}

}  // namespace
}  // namespace eaglesim
