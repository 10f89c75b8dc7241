// `serve` on SGLang's parallel layouts: expert parallelism, data-parallel attention (one scheduler
// per attention rank, each with its own KV pool) and the model's own MTP layer as the draft. The
// KV capacity against a hand computation, the step grid against gen + run of the same layout, and
// the DP-attention scheduler against hand-computable runs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backend/evaluate.hpp"
#include "backend/sim_backend.hpp"
#include "core/errors.hpp"
#include "model/generator.hpp"
#include "model/speculative_flags.hpp"
#include "serve/kv_capacity.hpp"
#include "serve/scheduler_rules.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/serving_simulator.hpp"
#include "serve/step_cost_table.hpp"
#include "trace/speculative.hpp"
#include "shipped_files.hpp"

using namespace eaglesim;
using test::shipped_model;
using test::shipped_topology;

namespace {

// SGLang's --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4.
SpeculativeConfig chain314() { return resolve_speculative_flags({3, 1, 4}).config; }

// Costs by formula: decode `decode` µs plus `per_request` per request of the instance's batch,
// prefill `prefill_per_token` per token of the forward.
struct FormulaCosts : IterationCosts {
  double decode = 10000, per_request = 0, prefill_per_token = 500;
  mutable std::vector<int> decode_batches;
  double decode_us(int batch, double) const override {
    decode_batches.push_back(batch);
    return decode + per_request * batch;
  }
  double cycle_us(int batch, double kv) const override { return decode_us(batch, kv) * 1.5; }
  double prefill_us(const std::vector<PrefillChunk>& chunks, bool) const override {
    double t = 0;
    for (const PrefillChunk& c : chunks) t += static_cast<double>(c.tokens);
    return t * prefill_per_token;
  }
};

ServeSettings sglang(int dp) {
  ServeSettings s;
  s.rules.engine = ServingEngine::sglang;
  s.rules.dp = dp;
  s.rules.kv_capacity_tokens = 1'000'000;
  s.rules.max_running_requests = 256;
  s.rules.token_budget = 8192;
  return s;
}

std::vector<ServeRequest> same(int n, std::int64_t in, std::int64_t out) {
  return std::vector<ServeRequest>(static_cast<std::size_t>(n), ServeRequest{in, out, 0});
}

}  // namespace

// With DP attention a rank holds every weight but the routed experts unsharded and each position's
// KV at attention TP 1: Qwen3-235B-A22B's 4 KV heads x 128 dims x K and V x bf16 x 94 layers,
// where TP8 would hold one head's.
TEST(ServeLayouts, DpAttentionKvCapacityIsTheHandComputation) {
  const ModelConfig m = shipped_model("qwen3-235b-a22b");
  const Topology topo = shipped_topology("8x-h200-nvswitch");
  const LinearFormats fp8 = LinearFormats::all(DType::fp8);
  const double frac = 0.8;
  const KvCapacity dpa = kv_capacity(m, nullptr, RankHolding{8, true, false}, fp8, DType::bf16, topo.gpu, frac);
  const double bytes = 4.0 * 128 * 2 * 2 * 94;
  EXPECT_DOUBLE_EQ(dpa.bytes_per_token, bytes);
  EXPECT_DOUBLE_EQ(dpa.weights_gb, weight_bytes_per_rank(m, 8, fp8, true) / 1e9);
  EXPECT_EQ(dpa.tokens, static_cast<std::int64_t>(std::floor((topo.gpu.mem_gb * frac - dpa.weights_gb) * 1e9 / bytes)));
  // Plain TP8: one KV head per rank, a quarter of the bytes, and a rank's share of every weight.
  const KvCapacity tp8 = kv_capacity(m, nullptr, RankHolding{8, false, false}, fp8, DType::bf16, topo.gpu, frac);
  EXPECT_DOUBLE_EQ(tp8.bytes_per_token, bytes / 4);
  EXPECT_LT(tp8.weights_gb, dpa.weights_gb);
  // fp8 KV halves the bytes per position.
  EXPECT_DOUBLE_EQ(kv_capacity(m, nullptr, RankHolding{8, true, false}, fp8, DType::fp8, topo.gpu, frac).bytes_per_token,
                   bytes / 2);
}

// The MTP draft is one decoder layer more: its weights and its KV (DeepSeek-V3's MLA: 512 + 64
// latent dims x bf16 per layer, 61 layers, 62 with the MTP layer), the sweep's RankHolding.
TEST(ServeLayouts, MtpDraftCountsItsLayersWeightsAndKv) {
  const ModelConfig m = shipped_model("deepseek-v3");
  const Topology topo = shipped_topology("2x8-h200-nvswitch-ib400");
  const LinearFormats fp8 = LinearFormats::all(DType::fp8);
  const KvCapacity plain = kv_capacity(m, nullptr, RankHolding{16, true, false}, fp8, DType::bf16, topo.gpu, 0.8);
  const KvCapacity mtp = kv_capacity(m, nullptr, RankHolding{16, true, true}, fp8, DType::bf16, topo.gpu, 0.8);
  EXPECT_DOUBLE_EQ(plain.bytes_per_token, 576.0 * 2 * 61);
  EXPECT_DOUBLE_EQ(mtp.bytes_per_token, 576.0 * 2 * 62);
  const MemoryNeed need = memory_needed(m, nullptr, RankHolding{16, true, true}, fp8, {1});
  EXPECT_NEAR(mtp.weights_gb - plain.weights_gb, need.draft_weight_bytes / 1e9, 1e-9);
  EXPECT_GT(need.draft_weight_bytes, 0.0);
  EXPECT_LT(mtp.tokens, plain.tokens);
}

// The step grid at TP16 EP16 with DP attention and the MTP draft: each grid point is what gen
// (engine cycle, the instance's batch) and run give for the same layout.
TEST(ServeLayouts, StepTableAtDpAttentionIsGenAndRun) {
  const ModelConfig m = shipped_model("deepseek-v3");
  const Topology topo = shipped_topology("2x8-h200-nvswitch-ib400");
  StepCostRequest rq;
  rq.target = &m;
  rq.topology = &topo;
  rq.tp = 16;
  rq.ep = 16;
  rq.dp_attention = true;
  rq.mtp = true;
  rq.speculative = chain314();
  rq.weight_dtype = DType::fp8;
  rq.strategy = "nccl";
  rq.options.a2a = "auto";
  rq.max_batch = 32;
  rq.max_kv = 2048;
  rq.max_prefill_tokens = 256;
  const StepCostTable table(rq);
  StepCostRequest plain_rq = rq;
  plain_rq.mtp = false;
  plain_rq.speculative.reset();
  const StepCostTable plain(plain_rq);

  SimBackend backend;
  for (const bool speculative : {false, true}) {
    GenOptions g;
    g.tp = 16;
    g.ep = 16;
    g.dp_attention = true;
    g.weight_dtype = DType::fp8;
    g.batch = 32;
    g.kv_len = 2048;
    g.engine_cycle = true;
    if (speculative) {
      g.mtp_draft = true;
      g.speculative = chain314();
      g.tokens = 4;
    }
    const Trace trace = generate_trace(m, g);
    EvaluateRequest er;
    er.trace = &trace;
    er.topo = &topo;
    er.strategies = {"nccl"};
    er.options.a2a = "auto";
    const StrategyResult r = evaluate_strategies(backend, er).results.at(0);
    ASSERT_TRUE(r.supported) << r.reason;
    if (speculative) EXPECT_DOUBLE_EQ(table.cycle_us(32, 2048), r.cycle_us);
    else EXPECT_DOUBLE_EQ(plain.decode_us(32, 2048), r.decode ? r.decode_us : r.verify_us);
  }
  // The MTP cycle (extend, three draft forwards of one layer, a verify of 4 tokens) costs more
  // than a decode forward and less than four of them.
  EXPECT_GT(table.cycle_us(32, 2048), plain.decode_us(32, 2048));
  EXPECT_LT(table.cycle_us(32, 2048), 4 * plain.decode_us(32, 2048));
  // Up to 16 requests every rank holds one: the same forward.
  EXPECT_DOUBLE_EQ(plain.decode_us(1, 2048), plain.decode_us(16, 2048));
  // The MTP layer's extend over a prompt: one decoder layer more.
  const std::vector<PrefillChunk> chunk{{256, 0}};
  EXPECT_NEAR(table.prefill_us(chunk, true), plain.prefill_us(chunk, false) * (1.0 + 1.0 / m.layers), 1e-6);
}

// Two requests on two DP ranks prefill in one forward (each rank its own 100 tokens: 50 ms), then
// decode together; one scheduler prefills both in one forward of 200 tokens (100 ms).
TEST(ServeLayouts, DpRanksPrefillTheirOwnRequestsInOneForward) {
  FormulaCosts c;
  const ServeMetrics dp2 = serving_metrics(simulate_serving(same(2, 100, 11), c, sglang(2)));
  EXPECT_NEAR(dp2.ttft.mean_ms, 50.0, 1e-9);
  EXPECT_NEAR(dp2.e2e.mean_ms, 150.0, 1e-9);
  const ServeMetrics one = serving_metrics(simulate_serving(same(2, 100, 11), c, sglang(1)));
  EXPECT_NEAR(one.ttft.mean_ms, 100.0, 1e-9);
}

// Round robin: 3 requests on 2 ranks put 2 on rank 0 and 1 on rank 1; a decode forward is priced
// at the busiest rank's batch on every rank (2 x 2 = 4), and the iteration records 3 decoding.
TEST(ServeLayouts, DecodeIsPricedAtTheBusiestRank) {
  FormulaCosts c;
  ServeSettings s = sglang(2);
  s.record_iterations = true;
  const ServeRun run = simulate_serving(same(3, 10, 3), c, s);
  ASSERT_FALSE(c.decode_batches.empty());
  EXPECT_EQ(c.decode_batches.front(), 4);
  int decode_iterations = 0;
  for (const IterationRecord& it : run.iterations)
    if (it.kind == IterationKind::decode) {
      EXPECT_EQ(it.decode_requests, 3);
      ++decode_iterations;
    }
  EXPECT_EQ(decode_iterations, 2);
  EXPECT_EQ(run.peak_running, 3);
}

// A rank decodes while another prefills in the same forward (a mixed iteration): the forward
// lasts as long as the longer part.
TEST(ServeLayouts, OneRankPrefillsWhileAnotherDecodes) {
  FormulaCosts c;
  c.prefill_per_token = 100;  // 1000 tokens: 100 ms, against a 10 ms decode
  ServeSettings s = sglang(2);
  s.record_iterations = true;
  std::vector<ServeRequest> w = {{10, 50, 0}, {1000, 2, 0.02}};
  const ServeRun run = simulate_serving(w, c, s);
  bool mixed = false;
  for (const IterationRecord& it : run.iterations)
    if (it.kind == IterationKind::mixed) {
      mixed = true;
      EXPECT_NEAR(it.end_s - it.start_s, 0.1, 1e-9);
      EXPECT_EQ(it.decode_requests, 1);
      EXPECT_EQ(it.prefill_requests, 1);
    }
  EXPECT_TRUE(mixed);
  EXPECT_EQ(run.mixed_forwards, 1u);
}

// Each rank's KV pool holds its own requests: a request needing more than a rank's pool is
// refused, though the instance's pools together would hold it.
TEST(ServeLayouts, KvPoolIsPerRank) {
  FormulaCosts c;
  ServeSettings s = sglang(4);
  s.rules.kv_capacity_tokens = 1000;
  EXPECT_THROW(simulate_serving(same(1, 900, 200), c, s), InputError);
  EXPECT_NO_THROW(simulate_serving(same(8, 500, 100), c, s));
}

// SGLang's rules with DP attention: the instance's limits split over the ranks, a more eager
// admission ratio and more memory kept back for the CUDA graphs.
TEST(ServeLayouts, SglangRulesWithDpAttention) {
  const SchedulerRules plain = default_scheduler_rules(ServingEngine::sglang, 141.0, 16, true);
  SchedulerRules dpa = default_scheduler_rules(ServingEngine::sglang, 141.0, 16, true, 16);
  EXPECT_EQ(dpa.dp, 16);
  EXPECT_LT(dpa.mem_fraction, plain.mem_fraction);
  EXPECT_NEAR(dpa.new_token_ratio_init, 0.7 * 0.3, 1e-12);
  EXPECT_EQ(dpa.max_running_requests, 48);
  split_over_dp_ranks(dpa);
  EXPECT_EQ(dpa.max_running_requests, 3);  // 48 // 16
  EXPECT_EQ(dpa.token_budget, 8192 / 16);
  SchedulerRules one = plain;
  split_over_dp_ranks(one);
  EXPECT_EQ(one.max_running_requests, plain.max_running_requests);
  EXPECT_EQ(one.token_budget, plain.token_budget);
}
