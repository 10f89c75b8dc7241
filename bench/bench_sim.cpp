// Simulator throughput: simulated ops per second (trace ops x ranks walked, reported as
// items_per_second) on the Kimi-K2 verify step and on 10x / 100x longer steps made by
// concatenating it, to show that the cost per op stays flat.
//
//   BM_Simulate:     the event loop alone on an already priced step (what a sweep repeats)
//   BM_PlanAndRun:   pricing (memoised by shape) + event loop, as one `run` strategy costs
//   BM_Timeline:     event loop with timeline spans built (only done for --timeline)
//   BM_SimBackend:   the real "sim" backend (nccl strategy, compute model of the
//                    8x-rtx-pro-6000-pcie5 preset): what one strategy of `eaglesim run` costs
//   BM_SimBackendBatch64Tree: the same backend on a generated Kimi-K2 TP8 verify step of 64
//                    requests verifying SGLang's (5, 4, 8) tree each, with the engine's cycle
//                    (attention over 64 ragged KV caches, 512-row GEMMs and MoE)
//
// The first three use fixed cost functions: they measure the engine, not the cost models.
#include <benchmark/benchmark.h>

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>

#include "backend/event_simulator.hpp"
#include "backend/op_pricing.hpp"
#include "backend/sim_backend.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "model/speculative_flags.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

namespace {

using namespace eaglesim;

class FixedComm : public CommCostModel {
 public:
  std::string name() const override { return "fixed"; }
  CommSupport supports(const Topology&, int, std::int64_t) const override { return {}; }
  CommCost cost(const CommQuery& q) const override { return {20.0 + q.bytes * 1e-5, "fixed"}; }
};

OpCost fixed_cost(const Op& op) {
  if (op.us) return {*op.us, false, false, true};
  return {1.0 + op.flops() * 1e-9 + op.weight_bytes() * 1e-6};
}

// The verify step of $EAGLESIM_BENCH_TRACE, else of the repository's Kimi-K2 trace; otherwise a synthetic step of the same
// shape (61 layers of norm, 6 GEMMs, attention, allreduce, residual, MoE, allreduce, residual).
const Step& base_step() {
  static const Step step = [] {
    const char* env = std::getenv("EAGLESIM_BENCH_TRACE");
    std::string path = env && *env ? env : std::string(EAGLESIM_REPO) + "/traces/kimi-k2_tp8_t4.json";
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) {
      std::fprintf(stderr, "bench_sim: verify step of %s\n", path.c_str());
      return read_trace(path).verify();
    }
    std::fprintf(stderr, "bench_sim: %s not found, using a synthetic 61-layer step\n", path.c_str());
    Step s;
    s.name = "verify";
    for (int l = 0; l < 61; ++l) {
      auto add = [&](OpKind k, const char* name) {
        Op op;
        op.kind = k;
        op.name = name;
        op.layer = l;
        op.m = 4; op.n = 7168; op.k = 1024; op.tokens = 4; op.hidden = 7168; op.bytes = 57344;
        s.ops.push_back(op);
      };
      add(OpKind::rmsnorm, "input_norm");
      for (int g = 0; g < 6; ++g) add(OpKind::gemm, "proj");
      add(OpKind::attention, "attn");
      add(OpKind::allreduce, "attn_ar");
      add(OpKind::residual_add, "res");
      add(OpKind::rmsnorm, "post_norm");
      add(OpKind::grouped_gemm, "experts");
      add(OpKind::act, "act");
      add(OpKind::grouped_gemm, "experts_down");
      add(OpKind::allreduce, "mlp_ar");
      add(OpKind::residual_add, "res");
    }
    return s;
  }();
  return step;
}

Step repeated_step(int times) {
  Step s;
  s.name = "verify";
  const Step& base = base_step();
  s.ops.reserve(base.ops.size() * static_cast<std::size_t>(times));
  for (int t = 0; t < times; ++t) s.ops.insert(s.ops.end(), base.ops.begin(), base.ops.end());
  return s;
}

PricingOptions pricing(const CommCostModel& comm) {
  PricingOptions po;
  po.comm = &comm;
  po.query.ranks = 8;
  po.compute_cost = fixed_cost;
  po.add_norm_cost = fixed_cost;  // the fused residual add + norm kernels, priced by their norm
  po.op_times = OpTimes::model;
  return po;
}

constexpr int kRanks = 8;

void BM_Simulate(benchmark::State& state) {
  FixedComm comm;
  const Step step = repeated_step(static_cast<int>(state.range(0)));
  const StepPlan plan = plan_step(step, pricing(comm));
  SimulationOptions eo;
  eo.ranks = kRanks;
  eo.start_offset_us = {0, 1, 2, 3, 4, 5, 6, 7};
  for (auto _ : state) benchmark::DoNotOptimize(simulate_step(step, plan, eo).step_us);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(step.ops.size()) * kRanks);
  state.counters["trace_ops"] = static_cast<double>(step.ops.size());
  state.counters["trace_ops_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(step.ops.size()), benchmark::Counter::kIsRate);
}

void BM_PlanAndRun(benchmark::State& state) {
  FixedComm comm;
  const Step step = repeated_step(static_cast<int>(state.range(0)));
  SimulationOptions eo;
  eo.ranks = kRanks;
  for (auto _ : state) {
    StepPlan plan = plan_step(step, pricing(comm));
    benchmark::DoNotOptimize(simulate_step(step, plan, eo).step_us);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(step.ops.size()) * kRanks);
  state.counters["trace_ops"] = static_cast<double>(step.ops.size());
  state.counters["trace_ops_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(step.ops.size()), benchmark::Counter::kIsRate);
}

void BM_Timeline(benchmark::State& state) {
  FixedComm comm;
  const Step step = repeated_step(static_cast<int>(state.range(0)));
  const StepPlan plan = plan_step(step, pricing(comm));
  SimulationOptions eo;
  eo.ranks = kRanks;
  eo.want_timeline = true;
  for (auto _ : state) benchmark::DoNotOptimize(simulate_step(step, plan, eo).timeline.spans.size());
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(step.ops.size()) * kRanks);
  state.counters["trace_ops_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(step.ops.size()), benchmark::Counter::kIsRate);
}

void BM_SimBackend(benchmark::State& state) {
  static const Topology topo = read_topology(resolve_topology_path("8x-rtx-pro-6000-pcie5"));
  Trace trace;
  trace.meta.tp = kRanks;
  trace.steps.push_back(repeated_step(static_cast<int>(state.range(0))));
  SimBackend backend;
  RunOptions opts;
  for (auto _ : state)
    benchmark::DoNotOptimize(backend.run_step(trace, trace.steps[0], "nccl", &topo, opts).step_us);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(trace.steps[0].ops.size()) * kRanks);
  state.counters["trace_ops_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(trace.steps[0].ops.size()), benchmark::Counter::kIsRate);
}

void BM_SimBackendBatch64Tree(benchmark::State& state) {
  static const Topology topo = read_topology(resolve_topology_path("8x-rtx-pro-6000-pcie5"));
  const std::string dir = std::string(EAGLESIM_REPO) + "/models/llm/";
  GenOptions g;
  g.tp = kRanks;
  g.batch = 64;
  g.weight_dtype = DType::int4;
  g.draft = read_model_config(dir + "kimi-k2-eagle3.json");
  for (int r = 0; r < g.batch; ++r) g.kv_lens.push_back(512 + 256 * r);
  SpeculativeFlags f;
  f.num_steps = 5;
  f.eagle_topk = 4;
  f.num_draft_tokens = 8;
  g.speculative = resolve_speculative_flags(f).config;
  g.engine_cycle = true;
  const Trace trace = generate_trace(read_model_config(dir + "kimi-k2-instruct.json"), g);
  SimBackend backend;
  RunOptions opts;
  const Step& verify = trace.verify();
  for (auto _ : state) benchmark::DoNotOptimize(backend.run_step(trace, verify, "nccl", &topo, opts).step_us);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(verify.ops.size()) * kRanks);
  state.counters["trace_ops"] = static_cast<double>(verify.ops.size());
  state.counters["trace_ops_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(verify.ops.size()), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Simulate)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlanAndRun)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Timeline)->Arg(1)->Arg(10)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SimBackend)->Arg(1)->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SimBackendBatch64Tree)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
