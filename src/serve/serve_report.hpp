#pragma once
// What `eaglesim serve` found: the deployment and the engine's rules it simulated, the workload,
// per configuration (plain decoding, then EAGLE-3) the benchmark's summary and the simulated run,
// the capacity under an SLO when asked, and a measured benchmark result beside the prediction
// when given. The printers (report/serve_output.hpp) read it.
#include <optional>
#include <string>
#include <vector>

#include "serve/capacity_search.hpp"
#include "serve/kv_capacity.hpp"
#include "serve/scheduler_rules.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/serving_simulator.hpp"
#include "serve/workload.hpp"

namespace eaglesim {

struct ServeCase {
  std::string label;              // "plain" or "EAGLE-3 3/1/4"
  bool speculative = false;
  int num_steps = 0, eagle_topk = 0, num_draft_tokens = 0;
  double accept_len = 0;          // the mean the sampler was given (speculative)
  SchedulerRules rules;
  KvCapacity kv;
  ServeMetrics metrics;
  ServeRun run;
  std::optional<CapacityResult> capacity;
};

// A benchmark result file's figures (bench_serving --output-file or vllm bench serve
// --save-result), by the benchmarks' keys.
struct MeasuredResult {
  std::string file;
  std::vector<std::pair<std::string, double>> values;  // in the file's order of the keys we compare
};

struct ServeReport {
  std::string model, draft_model, topology, gpu, engine, strategy;
  int tp = 1;
  int ep = 1;                       // expert-parallel groups (SGLang --ep-size)
  bool dp_attention = false;        // SGLang --enable-dp-attention (--dp = tp)
  std::string a2a;                  // the MoE all-to-all strategy (--a2a), with DP attention
  std::string weights;              // the target's linear-layer formats, in words
  WorkloadSpec workload;
  std::string workload_text;        // in words
  std::vector<ServeCase> cases;
  std::vector<SloBound> slo;
  LoadAxis capacity_axis = LoadAxis::request_rate;
  double traffic = 0;               // requests/s to serve (--traffic): instances needed per configuration
  std::optional<MeasuredResult> measured;
  std::size_t grid_points = 0;
  double pricing_s = 0, simulation_s = 0;
  std::vector<std::string> notes;
};

}  // namespace eaglesim
