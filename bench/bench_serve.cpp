// Serving simulation speed: a 10,000-request benchmark run at concurrency 64 through the
// request-level simulation on one core, with the engine's step costs priced beforehand (the cost
// grid is built once per deployment; BM_ServeCostGrid times that part).
//   BM_ServeSglangPlain / BM_ServeSglangEagle3: Llama-3.1-70B TP8 on 8 x H100, SGLang's scheduler,
//     random 1024 in / 1024 out (bench_serving's default range), --max-concurrency 64;
//     target: <= 1 s per run
//   BM_ServeVllmEagle3: the same on vLLM's mixed scheduler with a chain of 3
//   BM_ServeCostGrid: pricing the grid of engine steps the runs read
#include <benchmark/benchmark.h>

#include <string>

#include "model/model_config.hpp"
#include "serve/kv_capacity.hpp"
#include "serve/serving_simulator.hpp"
#include "serve/step_cost_table.hpp"
#include "serve/workload.hpp"
#include "topology/topology.hpp"

using namespace eaglesim;

namespace {

ModelConfig config(const std::string& name) {
  return read_model_config(std::string(EAGLESIM_REPO) + "/models/llm/" + name + ".json");
}

struct Deployment {
  ModelConfig target = config("llama-3.1-70b");
  ModelConfig draft = config("llama-3.1-70b-eagle3");
  Topology topo = read_topology(resolve_topology_path("8x-h100-nvswitch"));
  SpeculativeConfig spec;
  Deployment() {
    spec.num_steps = 3;
    spec.eagle_topk = 1;
    spec.num_draft_tokens = 4;
  }
  StepCostRequest request(ServingEngine engine, bool speculative) const {
    StepCostRequest rq;
    rq.target = &target;
    rq.draft = speculative ? &draft : nullptr;
    rq.topology = &topo;
    rq.tp = 8;
    rq.formats = LinearFormats::all(DType::bf16);
    rq.engine = engine;
    if (speculative) rq.speculative = spec;
    rq.max_batch = 64;
    rq.max_kv = 2048;
    return rq;
  }
};

const Deployment& deployment() {
  static const Deployment d;
  return d;
}

std::vector<ServeRequest> workload() {
  WorkloadSpec w;
  w.num_prompts = 10000;
  w.input_len = 1024;
  w.output_len = 1024;
  w.max_concurrency = 64;
  return make_workload(w);
}

void run(benchmark::State& state, ServingEngine engine, bool speculative) {
  const Deployment& d = deployment();
  const StepCostTable costs(d.request(engine, speculative));
  const std::vector<ServeRequest> requests = workload();
  ServeSettings s;
  s.rules = default_scheduler_rules(engine, d.topo.gpu.mem_gb, 8, speculative);
  s.rules.max_running_requests = 64;
  s.rules.kv_capacity_tokens = kv_capacity(d.target, speculative ? &d.draft : nullptr, 8, LinearFormats::all(DType::bf16),
                                           DType::bf16, d.topo.gpu, s.rules.mem_fraction)
                                   .tokens;
  if (speculative) {
    s.accept.emplace(2.8, 3);
    s.verify_tokens = 4;
  }
  s.max_concurrency = 64;
  std::size_t iterations = 0;
  for (auto _ : state) {
    const ServeRun r = simulate_serving(requests, costs, s);
    iterations = r.prefill_forwards + r.decode_forwards + r.mixed_forwards;
    benchmark::DoNotOptimize(r.requests.data());
  }
  state.counters["requests"] = static_cast<double>(requests.size());
  state.counters["engine_iterations"] = static_cast<double>(iterations);
}

void BM_ServeSglangPlain(benchmark::State& state) { run(state, ServingEngine::sglang, false); }
void BM_ServeSglangEagle3(benchmark::State& state) { run(state, ServingEngine::sglang, true); }
void BM_ServeVllmEagle3(benchmark::State& state) { run(state, ServingEngine::vllm, true); }

void BM_ServeCostGrid(benchmark::State& state) {
  const Deployment& d = deployment();
  for (auto _ : state) {
    const StepCostTable costs(d.request(ServingEngine::sglang, true));
    benchmark::DoNotOptimize(costs.points_priced());
  }
}

}  // namespace

BENCHMARK(BM_ServeSglangPlain)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ServeSglangEagle3)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ServeVllmEagle3)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_ServeCostGrid)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK_MAIN();
