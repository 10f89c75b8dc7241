// eaglesim serve: a request-level simulation of one engine instance under a benchmark's workload,
// plain decoding and EAGLE-3 side by side, with bench_serving's numbers; --slo finds the highest
// load meeting a latency target; --compare puts a measured benchmark result beside the prediction.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "io/atomic_file.hpp"
#include "model/default_eagle3_head.hpp"
#include "model/model_config.hpp"
#include "model/speculative_flags.hpp"
#include "report/serve_output.hpp"
#include "serve/capacity_search.hpp"
#include "serve/kv_capacity.hpp"
#include "serve/serve_report.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/serving_simulator.hpp"
#include "serve/step_cost_table.hpp"
#include "serve/workload.hpp"
#include "sweep/sweep_inputs.hpp"
#include "sweep/tree_breakeven.hpp"
#include "topology/topology.hpp"

namespace eaglesim::cli {

namespace {

struct ServeArgs {
  std::string model, draft = "auto", topology, engine = "sglang", weight_dtype, kv_cache_dtype = "auto", strategy;
  int tp = 1;
  std::optional<int> num_steps, eagle_topk, num_draft_tokens, num_speculative_tokens;
  std::optional<double> accept_len, accept_rate;
  bool plain_only = false;
  // Workload, with the benchmarks' flag names.
  int num_prompts = 1000;
  std::int64_t input_len = 1024, output_len = 1024;
  double range_ratio = -1;  // unset: the benchmark's default (0)
  std::string dataset_path;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int max_concurrency = 0;
  std::uint64_t seed = 1;
  // Engine settings.
  std::optional<int> max_running_requests;
  std::optional<std::int64_t> token_budget;
  std::optional<double> mem_fraction;
  // Outputs.
  std::string slo, capacity_axis = "rate", compare, json, csv, timeline;
};

DType dtype_flag(const std::string& flag, const std::string& v) {
  DType d = DType::bf16;
  if (!parse_dtype(v, d) || (d != DType::bf16 && d != DType::fp8 && d != DType::int4))
    throw InputError(fmt::format("{}: expected bf16, fp8 or int4, got '{}'", flag, v));
  return d;
}

double rate_flag(const std::string& v) {
  if (v == "inf") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double r = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(r > 0) || !std::isfinite(r))
    throw InputError(fmt::format("--request-rate: expected requests per second > 0 or inf, got '{}'", v));
  return r;
}

// bench_serving's --output-file or vllm bench serve's --save-result: the summary keys we print.
MeasuredResult read_measured(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError::at(path, "", fmt::format("not JSON: {}", e.what()));
  }
  if (!doc.is_object()) throw InputError::at(path, "", "expected a benchmark result object");
  MeasuredResult m;
  m.file = path;
  for (const auto& [key, value] : metrics_by_key(ServeMetrics{})) {
    (void)value;
    // vLLM names the total throughput total_token_throughput.
    const std::string alias = key == "total_throughput" ? "total_token_throughput" : key;
    for (const std::string& k : {key, alias})
      if (doc.contains(k) && doc[k].is_number()) {
        m.values.emplace_back(key, doc[k].get<double>());
        break;
      }
  }
  if (m.values.empty())
    throw InputError::at(path, "", "no benchmark figures: expected keys such as output_throughput and mean_ttft_ms "
                                   "(bench_serving --output-file or vllm bench serve --save-result)");
  return m;
}

void run_serve(const ServeArgs& a) {
  for (const std::string* p : {&a.json, &a.csv, &a.timeline})
    if (!p->empty()) check_writable(*p);
  const auto engine = parse_serving_engine(a.engine);
  if (!engine || (*engine != ServingEngine::sglang && *engine != ServingEngine::vllm))
    throw InputError(fmt::format("--engine: expected sglang or vllm, got '{}'", a.engine));
  if (a.tp < 1 || a.tp > 1024) throw InputError(fmt::format("--tp: expected 1 to 1024, got {}", a.tp));

  const std::string model_path = resolve_model_path("--model", a.model);
  const ModelConfig target = read_model_config(model_path);
  if (target.is_draft())
    throw InputError(fmt::format("--model: {} is an EAGLE-3 head; give the target model (and the head with --draft)", model_path));
  check_tp(target, a.tp);
  const Topology topo = read_topology(resolve_topology_path(a.topology));
  if (a.tp > topo.gpu_count)
    throw InputError(fmt::format("--tp: {} needs {} GPUs, {} has {}", a.tp, a.tp, topo.name, topo.gpu_count));

  LinearFormats formats = LinearFormats::all(DType::bf16);
  if (!a.weight_dtype.empty()) formats = LinearFormats::all(dtype_flag("--weight-dtype", a.weight_dtype));
  else if (target.quantization) formats = target.quantization->formats;
  DType kv_dtype = DType::bf16;
  if (a.kv_cache_dtype == "fp8") kv_dtype = DType::fp8;
  else if (a.kv_cache_dtype == "auto") kv_dtype = target.quantization && target.quantization->kv_cache ? *target.quantization->kv_cache : DType::bf16;
  else if (a.kv_cache_dtype != "bf16") throw InputError(fmt::format("--kv-cache-dtype: expected auto, bf16 or fp8, got '{}'", a.kv_cache_dtype));

  // Speculative configuration: SGLang's three numbers, or vLLM's chain of k tokens.
  std::optional<SpeculativeConfig> spec;
  if (a.num_speculative_tokens) {
    if (a.num_steps || a.eagle_topk || a.num_draft_tokens)
      throw InputError("--num-speculative-tokens: vLLM's chain length; give it or SGLang's --speculative-* flags, not both");
    if (*a.num_speculative_tokens < 1 || *a.num_speculative_tokens > kMaxSpecSteps)
      throw InputError(fmt::format("--num-speculative-tokens: expected 1 to {}, got {}", kMaxSpecSteps, *a.num_speculative_tokens));
    spec = resolve_speculative_flags({a.num_speculative_tokens, 1, *a.num_speculative_tokens + 1}).config;
  } else if (a.num_steps || a.eagle_topk || a.num_draft_tokens) {
    spec = resolve_speculative_flags({a.num_steps, a.eagle_topk, a.num_draft_tokens}).config;
  }
  if (spec && *engine == ServingEngine::vllm && spec->eagle_topk > 1)
    throw InputError("--speculative-eagle-topk: vLLM's EAGLE-3 drafts a chain (topk 1); use --engine sglang for trees");
  if (!spec && (a.accept_len || a.accept_rate))
    throw InputError("--accept-len/--accept-rate: no speculative configuration given (--speculative-num-steps ... or --num-speculative-tokens)");
  if (a.accept_len && a.accept_rate) throw InputError("--accept-len and --accept-rate: give one");

  ServeReport report;
  std::optional<ModelConfig> draft;
  if (spec) {
    if (a.draft == "none") throw InputError("--draft none: speculative decoding needs an EAGLE-3 head (auto derives one)");
    if (a.draft == "auto") {
      const std::string beside = find_draft_beside(model_path);
      if (!beside.empty()) draft = read_model_config(beside);
      else {
        draft = default_eagle3_head(target);
        report.notes.push_back(describe_default_head(target, *draft));
      }
    } else {
      draft = read_model_config(resolve_model_path("--draft", a.draft));
      if (!draft->is_draft()) throw InputError(fmt::format("--draft: {} is not an EAGLE-3 head", a.draft));
    }
  }
  double accept_len = 0;
  if (spec) {
    if (a.accept_len) accept_len = *a.accept_len;
    else {
      const double rate = a.accept_rate.value_or(0.7);
      if (!(rate >= 0 && rate <= 1)) throw InputError(fmt::format("--accept-rate: expected a rate in [0, 1], got {}", rate));
      accept_len = spec->eagle_topk > 1 ? TreeBreakevenCurve(*spec).tokens_at(rate) : chain_tokens_per_cycle(rate, spec->num_steps);
      if (!a.accept_rate)
        report.notes.push_back(fmt::format("acceptance: no --accept-len given; the accept length is {:.2f}, the {} at a "
                                           "per-position rate of 0.7 (an assumption: give the accept length your "
                                           "engine prints)", accept_len, spec->eagle_topk > 1 ? "tree model" : "chain"));
    }
  }

  WorkloadSpec w;
  w.num_prompts = a.num_prompts;
  w.input_len = a.input_len;
  w.output_len = a.output_len;
  w.range_rule = *engine == ServingEngine::vllm ? RangeRule::vllm : RangeRule::sglang;
  w.range_ratio = a.range_ratio < 0 ? 0.0 : a.range_ratio;
  w.lengths_file = a.dataset_path;
  w.request_rate = rate_flag(a.request_rate);
  w.burstiness = a.burstiness;
  w.max_concurrency = a.max_concurrency;
  w.seed = a.seed;
  const std::vector<ServeRequest> requests = make_workload(w);
  std::optional<MeasuredResult> measured;
  if (!a.compare.empty()) measured = read_measured(a.compare);
  std::vector<SloBound> slo;
  if (!a.slo.empty()) slo = parse_slo(a.slo);
  if (a.capacity_axis != "rate" && a.capacity_axis != "concurrency")
    throw InputError(fmt::format("--capacity: expected rate or concurrency, got '{}'", a.capacity_axis));
  const LoadAxis axis = a.capacity_axis == "rate" ? LoadAxis::request_rate : LoadAxis::concurrency;

  // The engine's rules for each configuration.
  auto rules_for = [&](bool speculative, const ModelConfig* head, KvCapacity& kv) {
    SchedulerRules r = default_scheduler_rules(*engine, topo.gpu.mem_gb, a.tp, speculative);
    if (a.max_running_requests) {
      if (*a.max_running_requests < 1) throw InputError("--max-running-requests: expected a positive count");
      r.max_running_requests = *a.max_running_requests;
    }
    if (a.token_budget) {
      if (*a.token_budget < 1) throw InputError("--chunked-prefill-size/--max-num-batched-tokens: expected a positive token count");
      r.token_budget = *a.token_budget;
    }
    if (a.mem_fraction) {
      if (!(*a.mem_fraction > 0 && *a.mem_fraction <= 1)) throw InputError("--mem-fraction: expected a fraction in (0, 1]");
      r.mem_fraction = *a.mem_fraction;
    }
    kv = kv_capacity(target, head, a.tp, formats, kv_dtype, topo.gpu, r.mem_fraction);
    r.kv_capacity_tokens = kv.tokens;
    if (kv.tokens <= 0)
      throw InputError(fmt::format("--model: {} at TP{} does not leave room for a KV cache on {}: weights {:.1f} GB per GPU "
                                   "of {:.1f} GB the engine may use ({:.0f}% of {:.0f} GB)",
                                   target.name, a.tp, topo.gpu.name, kv.weights_gb, topo.gpu.mem_gb * r.mem_fraction,
                                   r.mem_fraction * 100, topo.gpu.mem_gb));
    return r;
  };

  report.model = target.name;
  report.draft_model = draft ? draft->name : "";
  report.topology = topo.name;
  report.gpu = topo.gpu.name;
  report.engine = to_string(*engine);
  report.strategy = a.strategy.empty() ? engine_strategy(*engine) : a.strategy;
  report.tp = a.tp;
  report.weights = formats.describe(target.is_moe());
  report.workload = w;
  report.workload_text = fmt::format(
      "{} prompts, {}, request rate {}{}, max concurrency {}, seed {}", w.num_prompts,
      w.lengths_file.empty() ? fmt::format("random input {} / output {} tokens (range ratio {:g})", w.input_len, w.output_len, w.range_ratio)
                             : "lengths from " + w.lengths_file,
      a.request_rate, w.burstiness != 1 ? fmt::format(" (burstiness {:g})", w.burstiness) : "",
      w.max_concurrency ? std::to_string(w.max_concurrency) : "none", w.seed);
  report.slo = slo;
  report.capacity_axis = axis;
  report.measured = measured;

  struct Config {
    bool speculative;
    std::string label;
  };
  std::vector<Config> configs;
  if (!a.plain_only || !spec) configs.push_back({false, "plain"});
  if (spec)
    configs.push_back({true, fmt::format("EAGLE-3 {}/{}/{}", spec->num_steps, spec->eagle_topk, spec->num_draft_tokens)});

  const auto t0 = std::chrono::steady_clock::now();
  double pricing = 0, simulating = 0;
  for (const Config& c : configs) {
    ServeCase sc;
    sc.label = c.label;
    sc.speculative = c.speculative;
    sc.rules = rules_for(c.speculative, c.speculative ? &*draft : nullptr, sc.kv);
    if (requests.size() && longest_request(requests) > sc.rules.kv_capacity_tokens)
      throw InputError(fmt::format("workload: the longest request needs {} positions of KV cache; {} at TP{} on {} holds "
                                   "{} ({}): shorten the requests or use more GPUs",
                                   longest_request(requests), target.name, a.tp, topo.name, sc.rules.kv_capacity_tokens, c.label));
    if (c.speculative) {
      sc.num_steps = spec->num_steps;
      sc.eagle_topk = spec->eagle_topk;
      sc.num_draft_tokens = spec->num_draft_tokens;
      sc.accept_len = accept_len;
    }
    StepCostRequest rq;
    rq.target = &target;
    rq.draft = c.speculative ? &*draft : nullptr;
    rq.topology = &topo;
    rq.tp = a.tp;
    rq.formats = formats;
    rq.kv_cache_dtype = kv_dtype;
    rq.engine = *engine;
    rq.strategy = a.strategy;
    if (c.speculative) rq.speculative = spec;
    const int in_flight = w.max_concurrency ? std::min(w.max_concurrency, w.num_prompts) : w.num_prompts;
    rq.max_batch = std::max(1, std::min(sc.rules.max_running_requests, slo.empty() ? in_flight : sc.rules.max_running_requests));
    rq.max_batch = std::min(rq.max_batch, 1024);
    rq.max_kv = longest_request(requests);
    rq.max_prefill_tokens = std::min<std::int64_t>(sc.rules.token_budget, 16384);
    const auto p0 = std::chrono::steady_clock::now();
    const StepCostTable costs(rq);
    pricing += std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
    report.grid_points += costs.points_priced();

    ServeSettings settings;
    settings.rules = sc.rules;
    if (c.speculative) {
      settings.accept.emplace(accept_len, spec->num_steps);
      // SGLang check_decode_mem: a cycle needs max(num_steps x topk, num_draft_tokens) free positions per request.
      settings.verify_tokens = std::max(spec->num_steps * spec->eagle_topk, spec->num_draft_tokens);
    }
    settings.max_concurrency = w.max_concurrency;
    settings.seed = w.seed;
    settings.record_iterations = !a.timeline.empty();
    const auto s0 = std::chrono::steady_clock::now();
    sc.run = simulate_serving(requests, costs, settings);
    sc.metrics = serving_metrics(sc.run);
    if (!slo.empty()) {
      ServeSettings quiet = settings;
      quiet.record_iterations = false;
      WorkloadSpec load_spec = w;
      auto simulate = [&](double load) {
        WorkloadSpec ls = load_spec;
        if (axis == LoadAxis::request_rate) ls.request_rate = load;
        else {
          ls.request_rate = std::numeric_limits<double>::infinity();
          ls.max_concurrency = static_cast<int>(load);
        }
        ServeSettings st = quiet;
        st.max_concurrency = ls.max_concurrency;
        return serving_metrics(simulate_serving(make_workload(ls), costs, st));
      };
      const double max_load = axis == LoadAxis::request_rate ? 1e4 : std::min(sc.rules.max_running_requests * 4, w.num_prompts);
      sc.capacity = find_capacity(simulate, slo, axis, max_load);
    }
    simulating += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    for (const std::string& n : costs.notes())
      if (std::find(report.notes.begin(), report.notes.end(), n) == report.notes.end()) report.notes.push_back(n);
    report.cases.push_back(std::move(sc));
  }
  (void)t0;
  report.pricing_s = pricing;
  report.simulation_s = simulating;
  if (!slo.empty()) {
    bool any = false;
    for (const ServeCase& c : report.cases) any = any || (c.capacity && c.capacity->load);
    if (!any)
      throw InputError(fmt::format("--slo: no configuration meets {} even at the lowest load ({}); relax the bounds or "
                                   "change the deployment",
                                   describe(slo), report.cases.front().capacity->limit));
  }

  std::string json = a.json.empty() ? "" : serve_to_json(report);
  std::string csv = a.csv.empty() ? "" : serve_requests_csv(report);
  std::string timeline = a.timeline.empty() ? "" : serve_timeline_json(report);
  write_files_atomic({{a.json, json}, {a.csv, csv}, {a.timeline, timeline}});
  fmt::print("{}", serve_to_text(report));
}

}  // namespace

void add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Simulate an engine serving a benchmark's requests: bench_serving's numbers, "
                                          "plain and EAGLE-3, and capacity under a latency target");
  cmd->add_option("--model", a->model, "Target model: a name under models/llm or a config.json")->required();
  cmd->add_option("--topology", a->topology, "Topology preset or file")->required();
  cmd->add_option("--tp", a->tp, "Tensor-parallel size of the engine instance")->capture_default_str();
  cmd->add_option("--engine", a->engine, "Serving engine whose scheduler and kernels are simulated: sglang or vllm")
      ->capture_default_str();
  cmd->add_option("--draft", a->draft, "EAGLE-3 head: auto (beside the model, else derived from its dimensions) or a config")
      ->capture_default_str();
  cmd->add_option("--weight-dtype", a->weight_dtype, "Target weights: bf16, fp8 or int4 (default: the checkpoint's)");
  cmd->add_option("--kv-cache-dtype", a->kv_cache_dtype, "KV cache: auto, bf16 or fp8")->capture_default_str();
  cmd->add_option("--strategy", a->strategy, "Allreduce strategy (default: the engine's own dispatch)");
  cmd->add_option("--speculative-num-steps", a->num_steps, "SGLang: draft steps per cycle");
  cmd->add_option("--speculative-eagle-topk", a->eagle_topk, "SGLang: candidates per expanded node");
  cmd->add_option("--speculative-num-draft-tokens", a->num_draft_tokens, "SGLang: tokens verified per request");
  cmd->add_option("--num-speculative-tokens", a->num_speculative_tokens, "vLLM: the chain's draft tokens k");
  cmd->add_option("--accept-len", a->accept_len, "Mean accept length (tokens per request per cycle, as the engine prints it)");
  cmd->add_option("--accept-rate", a->accept_rate, "Per-position acceptance rate (the chain or tree model gives the accept length)");
  cmd->add_flag("--speculative-only", a->plain_only, "Simulate only the speculative configuration (no plain baseline)");
  cmd->add_option("--num-prompts", a->num_prompts, "Requests in the benchmark")->capture_default_str();
  cmd->add_option("--random-input-len", a->input_len, "Random dataset: input tokens")->capture_default_str();
  cmd->add_option("--random-output-len", a->output_len, "Random dataset: output tokens")->capture_default_str();
  cmd->add_option("--random-range-ratio", a->range_ratio,
                  "Random dataset: length spread (SGLang: uniform in [L*r, L]; vLLM: [L(1-r), L(1+r)]; default 0)");
  cmd->add_option("--dataset-path", a->dataset_path,
                  "Request lengths instead of the random dataset: JSON Lines {input_len, output_len}, a CSV with those "
                  "columns, or a benchmark result with input_lens/output_lens");
  cmd->add_option("--request-rate", a->request_rate, "Requests per second (Poisson), or inf: all at once")
      ->capture_default_str();
  cmd->add_option("--burstiness", a->burstiness, "Gamma shape of the gaps between requests (1: Poisson)")->capture_default_str();
  cmd->add_option("--max-concurrency", a->max_concurrency, "The client's cap on requests in flight (0: none)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Random seed of the lengths, arrivals and acceptance")->capture_default_str();
  cmd->add_option("--max-running-requests,--max-num-seqs", a->max_running_requests,
                  "The engine's cap on running requests (SGLang --max-running-requests, vLLM --max-num-seqs)");
  cmd->add_option("--chunked-prefill-size,--max-num-batched-tokens", a->token_budget,
                  "SGLang: new tokens per prefill forward; vLLM: tokens per step");
  cmd->add_option("--mem-fraction,--mem-fraction-static,--gpu-memory-utilization", a->mem_fraction,
                  "Fraction of GPU memory for weights and KV cache");
  cmd->add_option("--slo", a->slo, "Latency target, e.g. mean_tpot_ms=50,p99_ttft_ms=2000: find the highest load meeting it");
  cmd->add_option("--capacity", a->capacity_axis, "What --slo searches: rate (Poisson request rate) or concurrency")
      ->capture_default_str();
  cmd->add_option("--compare", a->compare, "A measured benchmark result JSON to print beside the prediction");
  cmd->add_option("--json", a->json, "Write the results as JSON");
  cmd->add_option("--csv", a->csv, "Write one row per simulated request");
  cmd->add_option("--timeline", a->timeline, "Write the engine's iterations as a Chrome/Perfetto trace");
  cmd->callback([a] {
    require_single_process("serve", kNoGpuWork);
    run_serve(*a);
  });
}

}  // namespace eaglesim::cli
