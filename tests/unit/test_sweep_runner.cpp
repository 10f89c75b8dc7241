#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/errors.hpp"
#include "backend/sim_backend.hpp"
#include "model/generator.hpp"
#include "backend/evaluate.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "sweep/sweep_inputs.hpp"
#include "sweep/sweep_output.hpp"
#include "sweep/sweep_runner.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;
using test::shipped_topology;

namespace {

// llama-3.1-8b + its EAGLE-3 head on an 8-GPU NVSwitch box and a 4-GPU PCIe box.
SweepRequest small_request() {
  SweepRequest rq;
  rq.models.push_back({shipped_model("llama-3.1-8b"), shipped_model("llama-3.1-8b-eagle3")});
  rq.topologies = {shipped_topology("8x-h100-nvswitch"), shipped_topology("4x-rtx-pro-6000-pcie5")};
  rq.layouts = tp_layouts({1, 3, 8});
  rq.draft_tokens = {1, 2, 3};
  rq.acceptances = {{Acceptance::Mode::rate, 0.5}, {Acceptance::Mode::rate, 0.7}};
  rq.strategies = {"nccl", "oneshot", "ideal"};
  rq.threads = 2;
  return rq;
}

const SweepRow& find_row(const SweepResults& res, const std::string& topo, int tp, int n, const std::string& strategy,
                         double accept) {
  for (const SweepRow& r : res.rows)
    if (r.topology == topo && r.tp == tp && r.draft_tokens == n && r.strategy == strategy && r.acceptance.value == accept)
      return r;
  throw std::runtime_error("row not found");
}

}  // namespace

TEST(SweepRunner, EveryCombinationIsARowInGridOrder) {
  const SweepResults res = run_sweep(small_request());
  ASSERT_EQ(res.rows.size(), 1u * 2 * 1 * 3 * 3 * 3 * 2);
  for (std::size_t i = 0; i < res.rows.size(); ++i) ASSERT_EQ(res.rows[i].index, i);
  // Innermost axis: acceptance, then strategy, draft tokens, TP, dtype, topology, model.
  EXPECT_EQ(res.rows[0].acceptance.value, 0.5);
  EXPECT_EQ(res.rows[1].acceptance.value, 0.7);
  EXPECT_EQ(res.rows[2].strategy, "oneshot");
  EXPECT_EQ(res.rows[6].draft_tokens, 2);
  EXPECT_EQ(res.rows[18].tp, 3);
  EXPECT_EQ(res.rows[54].topology, "4x-rtx-pro-6000-pcie5");
  EXPECT_EQ(res.rows[0].draft_model, "llama-3.1-8b-eagle3");
}

TEST(SweepRunner, UnfitCombinationsCarryTheirReason) {
  SweepRequest rq = small_request();
  rq.models.push_back({shipped_model("llama-3.1-70b"), std::nullopt});
  rq.topologies.push_back(shipped_topology("8x-rtx-pro-6000-pcie5-nop2p"));
  rq.layouts = tp_layouts({1, 2, 3, 8});
  const SweepResults res = run_sweep(rq);
  // TP 3 does not divide 32 heads.
  const SweepRow& sharding = find_row(res, "8x-h100-nvswitch", 3, 1, "nccl", 0.5);
  EXPECT_EQ(sharding.unfit, UnfitKind::tp_sharding);
  EXPECT_NE(sharding.reason.find("num_attention_heads (32) is not a multiple of 3"), std::string::npos) << sharding.reason;
  // TP 8 on a 4-GPU machine.
  const SweepRow& gpus = find_row(res, "4x-rtx-pro-6000-pcie5", 8, 2, "oneshot", 0.7);
  EXPECT_EQ(gpus.unfit, UnfitKind::tp_exceeds_gpus);
  EXPECT_EQ(gpus.reason, "TP 8 needs 8 GPUs, 4x-rtx-pro-6000-pcie5 has 4");
  // One-shot needs P2P.
  const SweepRow& p2p = find_row(res, "8x-rtx-pro-6000-pcie5-nop2p", 2, 1, "oneshot", 0.5);
  EXPECT_EQ(p2p.unfit, UnfitKind::strategy);
  EXPECT_NE(p2p.reason.find("P2P"), std::string::npos) << p2p.reason;
  EXPECT_TRUE(find_row(res, "8x-rtx-pro-6000-pcie5-nop2p", 2, 1, "nccl", 0.5).ok());
  // Llama-3.1-70B in bf16 does not fit one 80 GB H100, fits two.
  std::size_t memory_rows = 0;
  for (const SweepRow& r : res.rows) {
    if (r.model != "llama-3.1-70b" || r.topology != "8x-h100-nvswitch") continue;
    if (r.tp == 1) {
      EXPECT_EQ(r.unfit, UnfitKind::memory);
      EXPECT_NE(r.reason.find("needs 142.4 GB per GPU"), std::string::npos) << r.reason;
      EXPECT_NEAR(r.mem_need_gb, 142.45, 0.01);
      ++memory_rows;
    }
    if (r.tp == 2) EXPECT_TRUE(r.ok()) << r.reason;
  }
  EXPECT_EQ(memory_rows, 3u * 3 * 2);  // every N, strategy and acceptance of that TP is listed
  // Priced rows have no reason; unfit ones have no metrics in the outputs.
  for (const SweepRow& r : res.rows) EXPECT_EQ(r.ok(), r.reason.empty()) << r.index;
}

TEST(SweepRunner, RowsMatchTheEngineOnTheSameTrace) {
  const SweepResults res = run_sweep(small_request());
  const SweepRow& row = find_row(res, "4x-rtx-pro-6000-pcie5", 1, 3, "nccl", 0.7);
  ASSERT_TRUE(row.ok()) << row.reason;
  // What `eaglesim gen` + `eaglesim run` would compute for the same combination.
  GenOptions g;
  g.tp = 1;
  g.tokens = 4;
  g.draft = shipped_model("llama-3.1-8b-eagle3");
  const Trace trace = generate_trace(shipped_model("llama-3.1-8b"), g);
  const Topology topo = shipped_topology("4x-rtx-pro-6000-pcie5");
  SimBackend backend;
  EvaluateRequest req;
  req.trace = &trace;
  req.topo = &topo;
  req.strategies = {"nccl"};
  req.acceptance = {Acceptance::Mode::rate, 0.7};
  req.draft_tokens = 3;
  const Report rep = evaluate_strategies(backend, req);
  const StrategyResult& r = rep.results.at(0);
  EXPECT_DOUBLE_EQ(row.verify_us, r.verify_us);
  EXPECT_DOUBLE_EQ(row.draft_us, r.draft_us);
  EXPECT_DOUBLE_EQ(row.decode_us, r.decode_us);
  EXPECT_DOUBLE_EQ(row.tokens_per_s, r.tokens_per_s);
  EXPECT_DOUBLE_EQ(row.speedup_vs_decode, r.speedup_vs_decode);
  ASSERT_TRUE(row.breakeven_accept_rate && r.breakeven_accept_rate);
  EXPECT_DOUBLE_EQ(*row.breakeven_accept_rate, *r.breakeven_accept_rate);
  EXPECT_DOUBLE_EQ(row.verify_compute_us + row.comm_us + row.verify_other_us, row.verify_us);
}

TEST(SweepRunner, AcceptanceOnlyEntersTheArithmetic) {
  const SweepResults res = run_sweep(small_request());
  for (std::size_t i = 0; i + 1 < res.rows.size(); i += 2) {
    const SweepRow& a = res.rows[i];
    const SweepRow& b = res.rows[i + 1];
    ASSERT_EQ(a.acceptance.value, 0.5);
    ASSERT_EQ(b.acceptance.value, 0.7);
    EXPECT_EQ(a.ok(), b.ok());
    if (!a.ok()) continue;
    EXPECT_EQ(a.verify_us, b.verify_us);
    EXPECT_EQ(a.cycle_us, b.cycle_us);
    EXPECT_DOUBLE_EQ(a.tokens_per_s, chain_tokens_per_cycle(0.5, a.draft_tokens) / a.cycle_us * 1e6);
    EXPECT_DOUBLE_EQ(b.tokens_per_s, chain_tokens_per_cycle(0.7, b.draft_tokens) / b.cycle_us * 1e6);
    EXPECT_GT(b.tokens_per_s, a.tokens_per_s);
  }
}

TEST(SweepRunner, DraftAndDecodeStepsAreSimulatedOncePerTopologyAndStrategy) {
  const SweepResults res = run_sweep(small_request());
  // Runnable (topology, TP): h100 TP1, TP8; rtx TP1. Each: 3 verify steps (N = 1..3) + one
  // draft + one decode step, times 3 strategies.
  EXPECT_EQ(res.traces_generated, 2u * 3);  // TP 1 and 8, N = 1..3
  EXPECT_EQ(res.steps_priced, 3u * (3 + 2) * 3);
}

TEST(SweepRunner, OutputIsIdenticalForAnyThreadCount) {
  SweepRequest rq = small_request();
  rq.threads = 1;
  const SweepResults one = run_sweep(rq);
  rq.threads = 4;
  const SweepResults four = run_sweep(rq);
  EXPECT_EQ(sweep_to_csv(one), sweep_to_csv(four));
  EXPECT_EQ(sweep_to_json(one).dump(), sweep_to_json(four).dump());
  EXPECT_EQ(one.threads, 1);
  EXPECT_EQ(four.threads, 4);
}

TEST(SweepRunner, BestIsTheFastestRealStrategyAgainstTheFastestPlainDecoding) {
  const SweepResults res = run_sweep(small_request());
  ASSERT_EQ(res.best.size(), 2u * 2);  // topologies x acceptances
  for (const SweepBest& b : res.best) {
    ASSERT_TRUE(b.row);
    const SweepRow& best = res.rows[*b.row];
    EXPECT_NE(best.strategy, "ideal");  // a lower bound, never "best"
    double fastest = 0, plain = 0;
    for (const SweepRow& r : res.rows) {
      if (!r.ok() || r.topology != b.topology || r.strategy == "ideal") continue;
      plain = std::max(plain, r.decode_tokens_per_s);
      if (r.acceptance.value == b.acceptance.value) fastest = std::max(fastest, r.tokens_per_s);
    }
    EXPECT_EQ(best.tokens_per_s, fastest);
    EXPECT_EQ(b.best_plain_tokens_per_s, plain);
    EXPECT_DOUBLE_EQ(b.speedup_vs_best_plain, fastest / plain);
  }
  ASSERT_EQ(res.waterfalls.size(), 1u);
  EXPECT_FALSE(res.waterfalls[0].timeline.spans.empty());
  EXPECT_EQ(res.waterfalls[0].timeline.ranks, res.rows[res.waterfalls[0].row].tp);
}

TEST(SweepRunner, RejectsEmptyAxesAndUnknownStrategies) {
  SweepRequest rq = small_request();
  rq.layouts.clear();
  EXPECT_THROW(run_sweep(rq), InputError);
  rq = small_request();
  rq.strategies = {"nccl", "warp-drive"};
  EXPECT_THROW(run_sweep(rq), InputError);
  rq = small_request();
  rq.gpu_mem_util = 1.5;
  EXPECT_THROW(run_sweep(rq), InputError);
}

TEST(SweepOutput, CsvHasOneLinePerRowAndEmptyMetricsForUnfitRows) {
  const SweepResults res = run_sweep(small_request());
  const std::string csv = sweep_to_csv(res);
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, res.rows.size() + 1);
  EXPECT_EQ(csv.rfind("index,model,draft_model,topology,", 0), 0u);
  const nlohmann::ordered_json j = sweep_to_json(res);
  EXPECT_EQ(j["format"], "eaglesim-sweep");
  EXPECT_EQ(j["rows"].size(), res.rows.size());
  for (const auto& r : j["rows"]) {
    if (r["status"] == "ok") EXPECT_TRUE(r["tokens_per_s"].is_number());
    else EXPECT_TRUE(!r.contains("tokens_per_s") && !r["reason"].get<std::string>().empty());
  }
  // The --json text is the same document.
  EXPECT_EQ(nlohmann::ordered_json::parse(sweep_json_text(res)), j);
}

// Rows not kept (sweep --best-only): the sink sees every row in grid order, as the kept rows are;
// counts, picks and the rows the picks point at are the same, and the table prints the same.
TEST(SweepRunner, RowsStreamedAndNotKeptGiveTheSameAnswers) {
  SweepRequest rq = small_request();
  rq.batches = {1, 4};
  rq.layouts = tp_layouts({1, 8, 3});  // TP 3 cannot shard the model: unfit rows in the counts
  const SweepResults kept = run_sweep(rq);
  std::vector<std::string> streamed;
  rq.keep_rows = false;
  rq.row_sink = [&](const SweepResults& res, const SweepRow& row) { streamed.push_back(sweep_csv_line(res, row)); };
  const SweepResults lean = run_sweep(rq);

  EXPECT_TRUE(lean.rows.empty());
  EXPECT_FALSE(lean.rows_kept);
  ASSERT_EQ(streamed.size(), kept.rows.size());
  for (std::size_t i = 0; i < kept.rows.size(); ++i) ASSERT_EQ(streamed[i], sweep_csv_line(kept, kept.rows[i])) << i;
  EXPECT_EQ(sweep_csv_header() + [&] {
    std::string all;
    for (const std::string& line : streamed) all += line;
    return all;
  }(), sweep_to_csv(kept));

  EXPECT_EQ(lean.counts.combinations, kept.rows.size());
  std::size_t ok = 0;
  for (const SweepRow& r : kept.rows) ok += r.ok();
  EXPECT_EQ(lean.counts.ok, ok);
  EXPECT_LT(ok, kept.rows.size());
  ASSERT_FALSE(lean.counts.unfit.empty());

  ASSERT_EQ(lean.best.size(), kept.best.size());
  for (std::size_t i = 0; i < kept.best.size(); ++i) {
    EXPECT_EQ(lean.best[i].row, kept.best[i].row);
    EXPECT_EQ(lean.best[i].plain_row, kept.best[i].plain_row);
    if (kept.best[i].row)
      EXPECT_EQ(sweep_csv_line(lean, lean.row(*lean.best[i].row)), sweep_csv_line(kept, kept.rows[*kept.best[i].row]));
  }
  ASSERT_EQ(lean.batch_best.size(), kept.batch_best.size());
  for (std::size_t i = 0; i < kept.batch_best.size(); ++i) EXPECT_EQ(lean.batch_best[i].row, kept.batch_best[i].row);
  EXPECT_EQ(sweep_to_table(lean), sweep_to_table(kept));
  // The JSON keeps the picks and leaves the rows to the CSV.
  EXPECT_FALSE(sweep_to_json(lean).contains("rows"));
  EXPECT_EQ(sweep_to_json(lean)["best"], sweep_to_json(kept)["best"]);
}
