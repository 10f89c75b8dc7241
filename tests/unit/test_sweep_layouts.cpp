// The sweep's parallel-layout axis (TP, EP, data-parallel attention) and MTP drafts: the axis
// itself, rows against gen + run of the same layout, the memory check against run's, and the
// per-layout comparison.
#include <gtest/gtest.h>

#include <string>

#include "backend/evaluate.hpp"
#include "backend/sim_backend.hpp"
#include "core/errors.hpp"
#include "model/generator.hpp"
#include "sweep/parallel_layout.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/trace_memory_check.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;
using test::shipped_topology;

namespace {

// DeepSeek-V3 with its MTP layer as the draft, on two nodes of 8 H200, fp8 weights, three layouts.
SweepRequest two_node_request() {
  SweepRequest rq;
  SweepModel m{shipped_model("deepseek-v3"), std::nullopt};
  m.mtp = true;
  rq.models.push_back(std::move(m));
  rq.topologies = {shipped_topology("2x8-h200-nvswitch-ib400")};
  rq.weight_dtypes = {DType::fp8};
  rq.layouts = {{16, 1, false}, {16, 2, false}, {16, 16, true}};
  rq.batches = {8, 64};
  rq.draft_tokens = {3};
  rq.acceptances = {{Acceptance::Mode::rate, 0.7}};
  rq.strategies = {"nccl"};
  rq.threads = 2;
  return rq;
}

const SweepRow& find_row(const SweepResults& res, int ep, bool dp, int batch) {
  for (const SweepRow& r : res.rows)
    if (r.ep == ep && r.dp_attention == dp && r.batch == batch) return r;
  throw std::runtime_error("row not found");
}

}  // namespace

TEST(ParallelLayout, AxisKeepsLayoutsAndSaysWhyTheRestAreNot) {
  const LayoutAxis axis = build_layout_axis({8, 16}, {1, 2, 16}, {false, true});
  std::vector<std::string> labels;
  for (const ParallelLayout& l : axis.layouts) labels.push_back(layout_label(l));
  EXPECT_EQ(labels, (std::vector<std::string>{"TP8", "TP8 EP2", "TP16", "TP16 EP2", "TP16 EP16", "TP16 EP16 DPA"}));
  ASSERT_EQ(axis.skipped.size(), 6u);
  bool ep_over_tp = false, dp_needs_ep = false;
  for (const SkippedLayout& k : axis.skipped) {
    ep_over_tp = ep_over_tp || k.reason.find("EP 16 does not divide TP 8") != std::string::npos;
    dp_needs_ep = dp_needs_ep || k.reason.find("needs EP = TP") != std::string::npos;
  }
  EXPECT_TRUE(ep_over_tp);
  EXPECT_TRUE(dp_needs_ep);
  EXPECT_THROW(build_layout_axis({8}, {3}, {false}), InputError);
  EXPECT_THROW(build_layout_axis({1}, {1}, {true}), InputError);
}

TEST(ParallelLayout, ModelsThatCannotTakeALayoutSayWhy) {
  EXPECT_EQ(layout_problem(shipped_model("deepseek-v3"), {16, 16, true}), "");
  EXPECT_NE(layout_problem(shipped_model("llama-3.1-8b"), {8, 2, false}).find("no routed experts"), std::string::npos);
  // 256 experts: EP 3 does not divide them (the axis only checks EP against TP).
  EXPECT_NE(layout_problem(shipped_model("deepseek-v3"), {3, 3, false}).find("does not divide the 256"), std::string::npos);
}

TEST(SweepLayouts, RowsMatchGenAndRunOfTheSameLayout) {
  const SweepResults res = run_sweep(two_node_request());
  ASSERT_EQ(res.rows.size(), 3u * 2);
  for (const auto& [ep, dp] : {std::pair<int, bool>{2, false}, {16, true}}) {
    const SweepRow& row = find_row(res, ep, dp, 64);
    ASSERT_TRUE(row.ok()) << row.reason;
    EXPECT_EQ(row.draft_model, mtp_draft_name("deepseek-v3"));
    GenOptions g;
    g.tp = 16;
    g.ep = ep;
    g.dp_attention = dp;
    g.batch = 64;
    g.tokens = 4;
    g.mtp_draft = true;
    g.weight_dtype = DType::fp8;
    const Trace trace = generate_trace(shipped_model("deepseek-v3"), g);
    const Topology topo = shipped_topology("2x8-h200-nvswitch-ib400");
    SimBackend backend;
    EvaluateRequest req;
    req.trace = &trace;
    req.topo = &topo;
    req.strategies = {"nccl"};
    req.options.a2a = "auto";
    req.acceptance = {Acceptance::Mode::rate, 0.7};
    req.draft_tokens = 3;
    const StrategyResult r = evaluate_strategies(backend, req).results.at(0);
    EXPECT_DOUBLE_EQ(row.verify_us, r.verify_us) << layout_label({16, ep, dp});
    EXPECT_DOUBLE_EQ(row.draft_us, r.draft_us);
    EXPECT_DOUBLE_EQ(row.decode_us, r.decode_us);
    EXPECT_DOUBLE_EQ(row.total_tokens_per_s, r.total_tokens_per_s);
    // The sweep's memory check is run's on the same trace.
    const TraceMemoryCheck mem = check_trace_memory(trace, topo, 0.9);
    ASSERT_TRUE(mem.verdict) << mem.unchecked_why;
    EXPECT_NEAR(row.mem_need_gb, mem.verdict->need_gb, 1e-9);
  }
  // Data-parallel attention holds every attention weight unsharded: more memory per GPU.
  EXPECT_GT(find_row(res, 16, true, 8).mem_need_gb, find_row(res, 2, false, 8).mem_need_gb);
}

TEST(SweepLayouts, DenseModelsGetLayoutRowsWithTheReason) {
  SweepRequest rq = two_node_request();
  rq.models.push_back({shipped_model("llama-3.1-70b"), std::nullopt});
  const SweepResults res = run_sweep(rq);
  int layout_rows = 0, ok_tp16 = 0;
  for (const SweepRow& r : res.rows) {
    if (r.model != "llama-3.1-70b") continue;
    if (r.ep > 1) {
      EXPECT_EQ(r.unfit, UnfitKind::layout);
      EXPECT_NE(r.reason.find("no routed experts"), std::string::npos) << r.reason;
      ++layout_rows;
    } else {
      ok_tp16 += r.ok();
    }
  }
  EXPECT_EQ(layout_rows, 4);
  EXPECT_EQ(ok_tp16, 2);
}

TEST(SweepLayouts, PerLayoutBestIsEachLayoutsFastestRow) {
  SweepRequest rq = two_node_request();
  rq.draft_tokens = {1, 3};
  const SweepResults res = run_sweep(rq);
  ASSERT_EQ(res.layout_best.size(), 2u * 3);  // batches x layouts
  for (const SweepLayoutBest& e : res.layout_best) {
    const ParallelLayout& l = res.axes.layouts[e.layout];
    double fastest = 0, plain = 0;
    for (const SweepRow& r : res.rows)
      if (r.ok() && r.batch == e.batch && r.ep == l.ep && r.dp_attention == l.dp_attention) {
        fastest = std::max(fastest, r.total_tokens_per_s);
        plain = std::max(plain, r.decode_total_tokens_per_s);
      }
    ASSERT_TRUE(e.row && e.plain_row);
    EXPECT_DOUBLE_EQ(e.total_tokens_per_s, fastest) << layout_label(l) << " batch " << e.batch;
    EXPECT_DOUBLE_EQ(e.plain_total_tokens_per_s, plain);
  }
  // Plain TP layouts only: the tables above already compare them.
  rq.layouts = tp_layouts({8, 16});
  EXPECT_TRUE(run_sweep(rq).layout_best.empty());
}

TEST(SweepLayouts, DraftingNamesTheMtpLayerOrTheEagleHead) {
  const SweepResults res = run_sweep(two_node_request());
  EXPECT_EQ(res.axes.drafting(0), "MTP");
  EXPECT_EQ(res.axes.drafting(), "MTP");
  SweepAxes mixed;
  mixed.models = {"deepseek-v3", "llama-3.1-8b", "qwen3-8b"};
  mixed.draft_models = {mtp_draft_name("deepseek-v3"), "llama-3.1-8b-eagle3", ""};
  EXPECT_EQ(mixed.drafting(0), "MTP");
  EXPECT_EQ(mixed.drafting(1), "EAGLE-3");
  EXPECT_EQ(mixed.drafting(2), "EAGLE-3");  // no head given: the cycle is still EAGLE's
  EXPECT_EQ(mixed.drafting(), "speculation");
  mixed.models.resize(2);
  mixed.draft_models = {"a-eagle3", ""};
  EXPECT_EQ(mixed.drafting(), "EAGLE-3");
}
