// Sweep throughput: Kimi-K2 scenarios priced per second on one core. A scenario is one priced
// row (topology, TP, batch, speculative configuration, strategy, acceptance), as `eaglesim
// sweep` does it: one trace per (TP, batch, configuration), each distinct step simulated once per
// topology and strategy, acceptance applied in the arithmetic only.
//   BM_SweepKimiK2:      the chain axis only (--draft-tokens 1..8), batch 1
//   BM_SweepKimiK2Batch: the batch and SGLang axes, batch 1..64 x (steps, topk, draft tokens);
//                        target: at least 25,000 scenarios/s per core (10^6 in 20 s on 2 cores)
// The other benchmarks split the cost into its parts.
#include <benchmark/benchmark.h>

#include <ctime>
#include <string>

#include "comm/cost_model.hpp"
#include "backend/sim_backend.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "sweep/spec_axis.hpp"
#include "sweep/sweep_inputs.hpp"
#include "sweep/sweep_runner.hpp"

using namespace eaglesim;

namespace {

ModelConfig config(const std::string& name) {
  return read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/" + name + ".json");
}

std::vector<Topology> all_presets() {
  std::vector<Topology> out;
  for (const std::string& name : preset_names("topologies")) out.push_back(read_topology(resolve_topology_path(name)));
  return out;
}

SweepRequest kimi_request() {
  SweepRequest rq;
  rq.models.push_back({config("kimi-k2-instruct"), config("kimi-k2-eagle3")});
  rq.topologies = all_presets();
  rq.weight_dtypes = {DType::fp8, DType::int4};
  rq.layouts = tp_layouts({1, 2, 4, 8});
  rq.draft_tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  rq.acceptances = {{Acceptance::Mode::rate, 0.5}, {Acceptance::Mode::rate, 0.7}};
  rq.strategies = parse_strategy_list("all");
  rq.threads = 1;
  rq.waterfalls = false;
  return rq;
}

// Batch 1..64 x steps 1..6 x topk 1,2,4,8 x draft tokens 2..32 (SGLang-valid combinations), two
// rates and per-rank probabilities, int4 weights, TP 4 and 8, every preset and strategy.
SweepRequest kimi_batch_request() {
  SweepRequest rq = kimi_request();
  rq.weight_dtypes = {DType::int4};
  rq.layouts = tp_layouts({4, 8});
  rq.batches = {1, 2, 4, 8, 16, 32, 64};
  rq.draft_tokens.clear();
  SpecAxisLists lists;
  lists.num_steps = {1, 2, 3, 4, 5, 6};
  lists.eagle_topk = {1, 2, 4, 8};
  lists.num_draft_tokens = {2, 4, 6, 8, 12, 16, 24, 32};
  SpecAxis axis = build_spec_axis(lists);
  rq.spec_configs = axis.configs;
  rq.skipped_configs = axis.skipped;
  rq.accept_probs = RankAcceptance({{0.7, 0.15, 0.05}, {0.6, 0.15, 0.05}}, "bench");
  return rq;
}

// CPU seconds of this process: on a shared machine wall time measures the neighbours, CPU time
// what one core spends.
double process_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void run_sweep_benchmark(benchmark::State& state, const SweepRequest& rq) {
  std::size_t priced = 0, combos = 0, steps = 0, traces = 0;
  const double cpu0 = process_cpu_s();
  for (auto _ : state) {
    const SweepResults res = run_sweep(rq);
    priced = 0;
    for (const SweepRow& r : res.rows) priced += r.ok();
    combos = res.rows.size();
    steps = res.steps_priced;
    traces = res.traces_generated;
    benchmark::DoNotOptimize(res.rows.data());
  }
  state.counters["scenarios"] = static_cast<double>(priced);
  state.counters["combinations"] = static_cast<double>(combos);
  state.counters["step_sims"] = static_cast<double>(steps);
  state.counters["traces"] = static_cast<double>(traces);
  const double cpu = process_cpu_s() - cpu0;
  const double n = static_cast<double>(state.iterations());
  state.counters["scenarios_per_s"] = benchmark::Counter(static_cast<double>(priced) * n, benchmark::Counter::kIsRate);
  state.counters["scenarios_per_cpu_s"] = static_cast<double>(priced) * n / cpu;
  state.counters["combinations_per_cpu_s"] = static_cast<double>(combos) * n / cpu;
}
void BM_SweepKimiK2(benchmark::State& state) { run_sweep_benchmark(state, kimi_request()); }
BENCHMARK(BM_SweepKimiK2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SweepKimiK2Batch(benchmark::State& state) { run_sweep_benchmark(state, kimi_batch_request()); }
BENCHMARK(BM_SweepKimiK2Batch)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// One simulated Kimi-K2 verify step (TP8, 4 tokens) per strategy on the first preset with 8 GPUs.
void BM_SimulateKimiVerify(benchmark::State& state) {
  const std::vector<std::string> strategies = parse_strategy_list("all");
  const std::string strategy = strategies.at(static_cast<std::size_t>(state.range(0)));
  Topology topo;
  for (const Topology& t : all_presets())
    if (t.gpu_count >= 8) {
      topo = t;
      break;
    }
  GenOptions g;
  g.tp = 8;
  g.tokens = 4;
  g.weight_dtype = DType::int4;
  const Trace trace = generate_trace(config("kimi-k2-instruct"), g);
  SimBackend backend;
  RunOptions opts;
  opts.ranks = 8;
  for (auto _ : state) {
    try {
      StepResult r = backend.run_step(trace, trace.verify(), strategy, &topo, opts);
      benchmark::DoNotOptimize(r.step_us);
    } catch (const StrategyUnsupported&) {
      state.SkipWithError("strategy unsupported on this topology");
      break;
    }
  }
  state.SetLabel(strategy + " on " + topo.name + ", " + std::to_string(trace.verify().ops.size()) + " ops x 8 ranks");
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(trace.verify().ops.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimulateKimiVerify)->DenseRange(0, 6)->Unit(benchmark::kMicrosecond);

void BM_GenerateKimiTrace(benchmark::State& state) {
  const ModelConfig m = config("kimi-k2-instruct");
  const ModelConfig d = config("kimi-k2-eagle3");
  GenOptions g;
  g.tp = 8;
  g.tokens = 4;
  g.draft = d;
  for (auto _ : state) {
    Trace t = generate_trace(m, g);
    benchmark::DoNotOptimize(t.steps.data());
  }
}
BENCHMARK(BM_GenerateKimiTrace)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
