// eaglesim serve: a request-level simulation of one engine instance under a benchmark's workload,
// plain decoding and EAGLE-3 side by side, with bench_serving's numbers; --slo finds the highest
// load meeting a latency target; --compare puts a measured benchmark result beside the prediction.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.hpp"
#include "comm/all_to_all.hpp"
#include "cli/commands.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "domain/spec_decode_metrics.hpp"
#include "io/atomic_file.hpp"
#include "model/default_eagle3_head.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "model/speculative_flags.hpp"
#include "report/html_report.hpp"
#include "report/serve_output.hpp"
#include "serve/bench_result.hpp"
#include "serve/capacity_search.hpp"
#include "serve/kv_capacity.hpp"
#include "serve/serve_report.hpp"
#include "serve/serving_metrics.hpp"
#include "serve/serving_simulator.hpp"
#include "serve/step_cost_table.hpp"
#include "serve/workload.hpp"
#include "sweep/parallel_layout.hpp"
#include "sweep/sweep_inputs.hpp"
#include "sweep/tree_breakeven.hpp"
#include "topology/topology.hpp"

namespace eaglesim::cli {

namespace {

struct ServeArgs {
  std::string model, draft = "auto", topology, engine = "sglang", weight_dtype, kv_cache_dtype = "auto", strategy;
  std::string tps = "1";
  // The layout, in SGLang's flags: --ep-size, --enable-dp-attention with --dp, the MoE's all-to-all.
  int ep = 1;
  bool dp_attention = false;
  std::optional<int> dp;
  std::string a2a = "auto";
  std::string speculative_algorithm;  // SGLang --speculative-algorithm: EAGLE3, EAGLE or NEXTN
  std::optional<int> num_steps, eagle_topk, num_draft_tokens, num_speculative_tokens;
  std::optional<double> accept_len, accept_rate;
  bool plain_only = false;
  // Workload, with the benchmarks' flag names.
  int num_prompts = 1000;
  std::int64_t input_len = 1024, output_len = 1024;
  double range_ratio = -1;  // unset: the benchmark's default (0)
  std::string dataset_path;
  std::string request_rate = "inf";      // a list: one run per rate
  std::string max_concurrency_list = "0";  // a list: one run per cap
  double burstiness = 1.0;
  std::uint64_t seed = 1;
  // Engine settings.
  std::optional<int> max_running_requests;
  std::optional<std::int64_t> token_budget;
  std::optional<double> mem_fraction;
  // Outputs.
  std::string slo, capacity_axis = "rate", compare, json, csv, timeline, report;
  std::set<std::string> given;  // the workload flags on the command line (--compare fills the others)
  double traffic = 0;
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

// The figures of a measured result beside the prediction, and the workload it was driven with
// for every workload flag the user did not give (so `--compare FILE` simulates the same run).
MeasuredResult apply_bench_result(const std::string& path, ServeArgs& a, std::vector<std::string>& notes) {
  std::vector<std::string> keys;
  for (const auto& kv : metrics_by_key(ServeMetrics{})) keys.push_back(kv.first);
  const BenchResult b = read_bench_result(path, keys);
  const auto free = [&](const char* flag) { return a.given.count(flag) == 0; };
  std::vector<std::string> taken;
  if (b.has_lengths && free("--dataset-path") && free("--random-input-len") && free("--random-output-len")) {
    a.dataset_path = path;
    taken.push_back("its requests' lengths");
  } else {
    if (b.random_input_len && free("--random-input-len")) a.input_len = *b.random_input_len, taken.push_back("input length");
    if (b.random_output_len && free("--random-output-len")) a.output_len = *b.random_output_len, taken.push_back("output length");
    if (b.random_range_ratio && free("--random-range-ratio")) a.range_ratio = *b.random_range_ratio, taken.push_back("range ratio");
  }
  if (b.num_prompts && *b.num_prompts > 0 && free("--num-prompts")) a.num_prompts = *b.num_prompts, taken.push_back("prompts");
  if (b.max_concurrency && free("--max-concurrency"))
    a.max_concurrency_list = std::to_string(*b.max_concurrency), taken.push_back("max concurrency");
  if (b.request_rate && free("--request-rate"))
    a.request_rate = std::isfinite(*b.request_rate) ? fmt::format("{:g}", *b.request_rate) : "inf", taken.push_back("request rate");
  if (b.burstiness && free("--burstiness")) a.burstiness = *b.burstiness, taken.push_back("burstiness");
  if (!taken.empty())
    notes.push_back(fmt::format("workload from {}{}: {}", path, b.line ? fmt::format(" (line {}, its last run)", b.line) : "",
                                fmt::join(taken, ", ")));
  MeasuredResult m;
  m.file = path;
  m.values = b.values;
  return m;
}

// Everything a serve run needs that does not depend on the deployment, resolved and checked once.
struct ServeInputs {
  ServingEngine engine = ServingEngine::sglang;
  std::vector<int> tps;
  std::string model_path;
  ModelConfig target;
  std::vector<Topology> topologies;
  LinearFormats formats = LinearFormats::all(DType::bf16);
  DType kv_dtype = DType::bf16;
  std::optional<SpeculativeConfig> spec;
  std::optional<ModelConfig> draft;   // the EAGLE-3 head; none with `mtp`
  bool mtp = false;                   // the draft is the target's own MTP layer (SGLang NEXTN)
  int ep = 1;
  bool dp_attention = false;
  std::string a2a = "auto";
  double accept_len = 0;
  std::vector<std::string> notes;
  WorkloadSpec workload;                              // the first load's
  std::vector<ServeRequest> requests;                 // the first load's
  std::vector<WorkloadSpec> loads;                    // one per --request-rate / --max-concurrency value
  std::vector<std::vector<ServeRequest>> load_requests;
  bool load_ladder = false;                           // several loads: the summary says where speculation stops paying
  std::optional<MeasuredResult> measured;
  std::vector<SloBound> slo;
  LoadAxis axis = LoadAxis::request_rate;
};

// Whether the draft is the target's own multi-token-prediction layer: SGLang's
// --speculative-algorithm NEXTN (which it runs as EAGLE), EAGLE on a model that ships one with no
// draft given (SGLang loads DeepSeek's MTP layer as EAGLE's draft), or --draft mtp.
bool draft_is_mtp(const ServeArgs& a, const ModelConfig& target, ServingEngine engine) {
  std::string algo = a.speculative_algorithm;
  for (char& c : algo) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!algo.empty() && algo != "EAGLE3" && algo != "EAGLE" && algo != "NEXTN")
    throw InputError(fmt::format("--speculative-algorithm: expected EAGLE3 (an EAGLE-3 head), NEXTN (the model's own "
                                 "MTP layer) or EAGLE, got '{}'", a.speculative_algorithm));
  if (!algo.empty() && engine != ServingEngine::sglang)
    throw InputError("--speculative-algorithm: SGLang's flag; with --engine vllm give --num-speculative-tokens (and "
                     "--draft mtp for the model's MTP layer)");
  if (algo == "EAGLE3" && a.draft == "mtp")
    throw InputError("--draft mtp: the model's MTP layer is SGLang's NEXTN; --speculative-algorithm EAGLE3 takes an "
                     "EAGLE-3 head");
  if (algo == "NEXTN" && a.draft != "auto" && a.draft != "mtp")
    throw InputError(fmt::format("--draft: NEXTN drafts with the model's own MTP layer; give no --draft (got '{}')", a.draft));
  const bool mtp = a.draft == "mtp" || algo == "NEXTN" || (algo == "EAGLE" && a.draft == "auto" && target.mtp_layers > 0);
  if (mtp && target.mtp_layers < 1)
    throw InputError(fmt::format("{}: {} ships no multi-token-prediction layer (num_nextn_predict_layers is {} in {}); "
                                 "draft with an EAGLE-3 head (--speculative-algorithm EAGLE3)",
                                 algo == "NEXTN" ? "--speculative-algorithm NEXTN" : "--draft mtp", target.name,
                                 target.mtp_layers, target.file));
  return mtp;
}

// SGLang's three numbers, or vLLM's chain of k tokens; none without either, unless speculation is
// asked for by --speculative-algorithm or --draft mtp: then SGLang's auto_choose_speculative_params
// (3, 1, 4 for the DeepSeek and gpt-oss architectures, 5, 4, 8 for the others).
std::optional<SpeculativeConfig> speculative_config(const ServeArgs& a, ServeInputs& in) {
  const ServingEngine engine = in.engine;
  std::optional<SpeculativeConfig> spec;
  if (a.num_speculative_tokens) {
    if (a.num_steps || a.eagle_topk || a.num_draft_tokens)
      throw InputError("--num-speculative-tokens: vLLM's chain length; give it or SGLang's --speculative-* flags, not both");
    if (*a.num_speculative_tokens < 1 || *a.num_speculative_tokens > kMaxSpecSteps)
      throw InputError(fmt::format("--num-speculative-tokens: expected 1 to {}, got {}", kMaxSpecSteps, *a.num_speculative_tokens));
    spec = resolve_speculative_flags({a.num_speculative_tokens, 1, *a.num_speculative_tokens + 1}).config;
  } else if (a.num_steps || a.eagle_topk || a.num_draft_tokens) {
    spec = resolve_speculative_flags({a.num_steps, a.eagle_topk, a.num_draft_tokens}).config;
  } else if (!a.speculative_algorithm.empty() || in.mtp) {
    if (engine != ServingEngine::sglang)
      throw InputError("--draft mtp: vLLM's MTP drafts a chain of --num-speculative-tokens; give it");
    const std::string& t = in.target.model_type;
    const bool short_chain = t == "deepseek_v3" || t == "deepseek_v2" || t == "deepseek_v32" || t == "kimi_k2" ||
                             t == "gpt_oss";
    const int steps = short_chain ? 3 : 5, topk = short_chain ? 1 : 4, tokens = short_chain ? 4 : 8;
    spec = resolve_speculative_flags({steps, topk, tokens}).config;
    in.notes.push_back(fmt::format("speculative settings: none given; SGLang's auto_choose_speculative_params for {} "
                                   "gives --speculative-num-steps {} --speculative-eagle-topk {} "
                                   "--speculative-num-draft-tokens {}",
                                   in.target.name, steps, topk, tokens));
  }
  if (spec && engine == ServingEngine::vllm && spec->eagle_topk > 1)
    throw InputError("--speculative-eagle-topk: vLLM's EAGLE-3 drafts a chain (topk 1); use --engine sglang for trees");
  if (!spec && (a.accept_len || a.accept_rate))
    throw InputError("--accept-len/--accept-rate: no speculative configuration given (--speculative-num-steps ... or --num-speculative-tokens)");
  if (a.accept_len && a.accept_rate) throw InputError("--accept-len and --accept-rate: give one");
  return spec;
}

// The EAGLE-3 head (beside the model, derived, or given) and the mean accept length.
void resolve_head_and_acceptance(const ServeArgs& a, ServeInputs& in) {
  if (!in.spec) return;
  if (a.draft == "none") throw InputError("--draft none: speculative decoding needs an EAGLE-3 head (auto derives one)");
  if (in.mtp) {
    // The target's own layer: nothing to read.
  } else if (a.draft == "auto") {
    const std::string beside = find_draft_beside(in.model_path);
    if (!beside.empty()) {
      in.draft = read_model_config(beside);
    } else {
      in.draft = default_eagle3_head(in.target);
      in.notes.push_back(describe_default_head(in.target, *in.draft));
    }
  } else {
    in.draft = read_model_config(resolve_model_path("--draft", a.draft));
    if (!in.draft->is_draft()) throw InputError(fmt::format("--draft: {} is not an EAGLE-3 head", a.draft));
  }
  if (a.accept_len) {
    in.accept_len = *a.accept_len;
    return;
  }
  const double rate = a.accept_rate.value_or(0.7);
  if (!(rate >= 0 && rate <= 1)) throw InputError(fmt::format("--accept-rate: expected a rate in [0, 1], got {}", rate));
  in.accept_len = in.spec->eagle_topk > 1 ? TreeBreakevenCurve(*in.spec).tokens_at(rate)
                                          : chain_tokens_per_cycle(rate, in.spec->num_steps);
  if (!a.accept_rate)
    in.notes.push_back(fmt::format("acceptance: no --accept-len given; the accept length is {:.2f}, the {} at a "
                                   "per-position rate of 0.7 (an assumption: give the accept length your engine prints)",
                                   in.accept_len, in.spec->eagle_topk > 1 ? "tree model" : "chain"));
}

WorkloadSpec workload_spec(const ServeArgs& a, ServingEngine engine) {
  WorkloadSpec w;
  w.num_prompts = a.num_prompts;
  w.input_len = a.input_len;
  w.output_len = a.output_len;
  w.range_rule = engine == ServingEngine::vllm ? RangeRule::vllm : RangeRule::sglang;
  w.range_ratio = a.range_ratio < 0 ? 0.0 : a.range_ratio;
  w.lengths_file = a.dataset_path;
  w.burstiness = a.burstiness;
  w.seed = a.seed;
  return w;
}

// The loads to run: each --request-rate value, or each --max-concurrency value (one of the two may
// list several: a load ladder).
std::vector<WorkloadSpec> load_specs(const ServeArgs& a, const WorkloadSpec& base) {
  std::vector<double> rates;
  for (const std::string& v : split_comma_list("--request-rate", a.request_rate)) rates.push_back(rate_flag(v));
  std::vector<int> caps;
  for (const std::string& v : split_comma_list("--max-concurrency", a.max_concurrency_list)) {
    char* end = nullptr;
    const long c = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || c < 0 || c > 10'000'000)
      throw InputError(fmt::format("--max-concurrency: expected counts >= 0 (0: no cap), comma-separated, got '{}'", v));
    caps.push_back(static_cast<int>(c));
  }
  if (rates.size() > 1 && caps.size() > 1)
    throw InputError("--request-rate and --max-concurrency: one of them may list several loads, not both");
  std::vector<WorkloadSpec> out;
  for (double r : rates)
    for (int c : caps) {
      WorkloadSpec w = base;
      w.request_rate = r;
      w.max_concurrency = c;
      out.push_back(w);
    }
  return out;
}

ServeInputs resolve_inputs(const ServeArgs& given) {
  ServeInputs in;
  ServeArgs a = given;
  if (!a.compare.empty()) in.measured = apply_bench_result(a.compare, a, in.notes);
  const auto engine = parse_serving_engine(a.engine);
  if (!engine || (*engine != ServingEngine::sglang && *engine != ServingEngine::vllm))
    throw InputError(fmt::format("--engine: expected sglang or vllm, got '{}'", a.engine));
  in.engine = *engine;
  in.tps = parse_int_axis("--tp", a.tps, 1, 1024);
  in.model_path = resolve_model_path("--model", a.model);
  in.target = read_model_config(in.model_path);
  if (in.target.is_draft())
    throw InputError(fmt::format("--model: {} is an EAGLE-3 head; give the target model (and the head with --draft)", in.model_path));
  for (const std::string& item : split_comma_list("--topology", a.topology))
    for (const std::string& path : expand_topology_item("--topology", item)) in.topologies.push_back(read_topology(path));
  if (!a.weight_dtype.empty()) in.formats = LinearFormats::all(dtype_flag("--weight-dtype", a.weight_dtype));
  else if (in.target.quantization) in.formats = in.target.quantization->formats;
  if (a.kv_cache_dtype == "fp8") in.kv_dtype = DType::fp8;
  else if (a.kv_cache_dtype == "auto" && in.target.quantization && in.target.quantization->kv_cache)
    in.kv_dtype = *in.target.quantization->kv_cache;
  else if (a.kv_cache_dtype != "bf16" && a.kv_cache_dtype != "auto")
    throw InputError(fmt::format("--kv-cache-dtype: expected auto, bf16 or fp8, got '{}'", a.kv_cache_dtype));
  in.mtp = draft_is_mtp(a, in.target, in.engine);
  in.spec = speculative_config(a, in);
  resolve_head_and_acceptance(a, in);
  // The layout: SGLang's --ep-size, --enable-dp-attention (with --dp = --tp), and the all-to-all.
  if (a.ep < 1) throw InputError(fmt::format("--ep-size: expected a positive count, got {}", a.ep));
  if (a.dp && !a.dp_attention)
    throw InputError(fmt::format("--dp: without --enable-dp-attention SGLang runs {} replicas of the instance; serve "
                                 "simulates one (--traffic counts the instances a load needs)", *a.dp));
  if (a.dp_attention && in.engine != ServingEngine::sglang)
    throw InputError("--enable-dp-attention: SGLang's data-parallel attention; simulate it with --engine sglang");
  check_all_to_all_strategy(a.a2a);
  in.ep = a.ep;
  in.dp_attention = a.dp_attention;
  in.a2a = a.a2a;
  in.loads = load_specs(a, workload_spec(a, in.engine));
  for (const WorkloadSpec& w : in.loads) in.load_requests.push_back(make_workload(w));
  in.workload = in.loads.front();
  in.requests = in.load_requests.front();
  in.load_ladder = in.loads.size() > 1;
  if (!a.slo.empty()) in.slo = parse_slo(a.slo);
  if (a.capacity_axis != "rate" && a.capacity_axis != "concurrency")
    throw InputError(fmt::format("--capacity: expected rate or concurrency, got '{}'", a.capacity_axis));
  in.axis = a.capacity_axis == "rate" ? LoadAxis::request_rate : LoadAxis::concurrency;
  if (a.traffic != 0) {
    if (in.slo.empty()) throw InputError("--traffic: needs --slo (the instances needed are counted at the highest load meeting it)");
    if (!(a.traffic > 0) || !std::isfinite(a.traffic))
      throw InputError(fmt::format("--traffic: expected requests per second > 0, got {}", a.traffic));
  }
  return in;
}

// The engine's scheduler rules on this deployment, the user's engine flags applied, and the KV
// cache they leave.
SchedulerRules engine_rules(const ServeArgs& a, const ServeInputs& in, const Topology& topo, int tp, bool speculative,
                            KvCapacity& kv) {
  const ModelConfig* head = speculative && !in.mtp ? &*in.draft : nullptr;
  SchedulerRules r = default_scheduler_rules(in.engine, topo.gpu.mem_gb, tp, speculative, in.dp_attention ? tp : 1);
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
  // vLLM schedules a running request's verify tokens within the step's budget: a budget below one
  // request's tokens would schedule nothing.
  const std::int64_t per_request = speculative ? in.spec->num_draft_tokens : 1;
  if (r.mixed_batches && r.token_budget < per_request)
    throw InputError(fmt::format("--max-num-batched-tokens: {} is below one request's {} tokens per step (1 + the "
                                 "speculative tokens); vLLM refuses such a budget",
                                 r.token_budget, per_request));
  // With DP attention the instance's limits are split over its ranks' schedulers.
  split_over_dp_ranks(r);
  kv = kv_capacity(in.target, head, RankHolding{tp, in.dp_attention, speculative && in.mtp}, in.formats, in.kv_dtype,
                   topo.gpu, r.mem_fraction);
  r.kv_capacity_tokens = kv.tokens;
  const std::string layout = layout_label({tp, in.ep, in.dp_attention});
  if (kv.tokens <= 0)
    throw InputError(fmt::format("--model: {} at {} does not leave room for a KV cache on {}: weights {:.1f} GB per GPU "
                                 "of {:.1f} GB the engine may use ({:.0f}% of {:.0f} GB)",
                                 in.target.name, layout, topo.gpu.name, kv.weights_gb, topo.gpu.mem_gb * r.mem_fraction,
                                 r.mem_fraction * 100, topo.gpu.mem_gb));
  const std::int64_t longest = longest_request(in.requests);
  if (longest > kv.tokens)
    throw InputError(fmt::format("workload: the longest request needs {} positions of KV cache; {} at {} on {} holds {}{}: "
                                 "shorten the requests or use more GPUs",
                                 longest, in.target.name, layout, topo.name, kv.tokens,
                                 in.dp_attention ? " per DP rank (a request is never split over ranks)" : ""));
  return r;
}

// The step grid one configuration's runs read.
StepCostRequest cost_request(const ServeArgs& a, const ServeInputs& in, const Topology& topo, int tp, const ServeCase& c) {
  StepCostRequest rq;
  rq.target = &in.target;
  rq.draft = c.speculative && !in.mtp ? &*in.draft : nullptr;
  rq.mtp = c.speculative && in.mtp;
  rq.topology = &topo;
  rq.tp = tp;
  rq.ep = in.ep;
  rq.dp_attention = in.dp_attention;
  rq.options.a2a = in.a2a;
  rq.formats = in.formats;
  rq.kv_cache_dtype = in.kv_dtype;
  rq.engine = in.engine;
  rq.strategy = a.strategy;
  if (c.speculative) rq.speculative = in.spec;
  // The largest batch a run can hold: the client's cap (or every prompt), the engine's cap, and
  // with an SLO search any concurrency up to the engine's cap.
  int in_flight = 1;
  for (const WorkloadSpec& w : in.loads)
    in_flight = std::max(in_flight, w.max_concurrency ? std::min(w.max_concurrency, w.num_prompts) : w.num_prompts);
  // With DP attention the grid is indexed by the instance's batch and a forward is priced at the
  // busiest rank's requests on every rank: up to a rank's cap (or every request in flight) x dp.
  const int dp = c.rules.dp;
  const int engine_cap = c.rules.max_running_requests * dp;
  rq.max_batch = dp > 1 ? std::min({c.rules.max_running_requests, in.slo.empty() ? in_flight : engine_cap}) * dp
                        : std::min(engine_cap, in.slo.empty() ? in_flight : engine_cap);
  rq.max_batch = std::max(1, std::min(rq.max_batch, dp > 1 ? kMaxGenBatch : 1024));
  rq.max_kv = longest_request(in.requests);
  rq.max_prefill_tokens = std::min<std::int64_t>(c.rules.token_budget, 16384);
  return rq;
}

// One configuration (plain or EAGLE-3) on one deployment: its engine rules and the step grid its
// runs read, priced once for every load.
struct PricedConfig {
  ServeCase base;  // label, rules, KV, speculative settings, capacity
  std::unique_ptr<StepCostTable> costs;
  ServeSettings settings;
};

PricedConfig price_config(const ServeArgs& a, const ServeInputs& in, const Topology& topo, int tp, bool speculative,
                          ServeReport& timing) {
  PricedConfig p;
  ServeCase& c = p.base;
  c.speculative = speculative;
  c.label = speculative ? fmt::format("{} {}/{}/{}", in.mtp ? "MTP" : "EAGLE-3", in.spec->num_steps, in.spec->eagle_topk,
                                      in.spec->num_draft_tokens)
                        : "plain";
  c.rules = engine_rules(a, in, topo, tp, speculative, c.kv);
  if (speculative) {
    c.num_steps = in.spec->num_steps;
    c.eagle_topk = in.spec->eagle_topk;
    c.num_draft_tokens = in.spec->num_draft_tokens;
    c.accept_len = in.accept_len;
  }
  const auto p0 = std::chrono::steady_clock::now();
  p.costs = std::make_unique<StepCostTable>(cost_request(a, in, topo, tp, c));
  timing.pricing_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
  timing.grid_points += p.costs->points_priced();
  for (const std::string& n : p.costs->notes()) {
    // A plain configuration's traces have no draft step by design; the run's note about it is
    // for traces meant to speculate.
    if (!speculative && n.rfind("the trace has no draft step", 0) == 0) continue;
    if (std::find(timing.notes.begin(), timing.notes.end(), n) == timing.notes.end()) timing.notes.push_back(n);
  }
  p.settings.rules = c.rules;
  if (speculative) {
    p.settings.accept.emplace(in.accept_len, in.spec->num_steps);
    // SGLang check_decode_mem: a cycle needs max(num_steps x topk, num_draft_tokens) free positions per request.
    p.settings.verify_tokens = std::max(in.spec->num_steps * in.spec->eagle_topk, in.spec->num_draft_tokens);
  }
  p.settings.seed = in.workload.seed;
  if (!in.slo.empty()) {
    const auto s0 = std::chrono::steady_clock::now();
    auto at_load = [&](double load) {
      WorkloadSpec w = in.workload;
      if (in.axis == LoadAxis::request_rate) {
        // Open loop: Poisson arrivals at the rate, no client cap.
        w.request_rate = load;
        w.max_concurrency = 0;
      } else {
        w.request_rate = std::numeric_limits<double>::infinity();
        w.max_concurrency = static_cast<int>(load);
      }
      ServeSettings st = p.settings;
      st.max_concurrency = w.max_concurrency;
      return serving_metrics(simulate_serving(make_workload(w), *p.costs, st));
    };
    const double max_load = in.axis == LoadAxis::request_rate
                                ? 1e4
                                : std::min(c.rules.max_running_requests * c.rules.dp * 4, in.workload.num_prompts);
    c.capacity = find_capacity(at_load, in.slo, in.axis, max_load);
    timing.simulation_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
  }
  return p;
}

// The layout at `tp`, as SGLang would refuse it: EP dividing the TP and the routed experts of a
// MoE model, DP attention with EP = TP = --dp.
void check_layout(const ServeArgs& a, const ServeInputs& in, int tp) {
  const ModelConfig& m = in.target;
  if (in.ep > 1 || in.dp_attention) {
    if (in.ep > tp || tp % in.ep != 0)
      throw InputError(fmt::format("--ep-size: {} does not divide --tp {} (the experts are split over EP groups of "
                                   "TP / EP ranks)", in.ep, tp));
    if (!m.is_moe())
      throw InputError(fmt::format("--ep-size{}: {} has no routed experts: expert parallelism needs a MoE model",
                                   in.dp_attention ? "/--enable-dp-attention" : "", m.name));
    if (m.routed_experts % in.ep != 0)
      throw InputError(fmt::format("--ep-size: {} does not divide the {} routed experts of {} (every rank holds as many)",
                                   in.ep, m.routed_experts, m.name));
  }
  if (in.dp_attention) {
    if (tp < 2 || in.ep != tp)
      throw InputError(fmt::format("--enable-dp-attention: needs --ep-size equal to --tp (> 1): every rank's own tokens "
                                   "reach the experts by all-to-all (SGLang's recipe: --tp N --dp N --ep-size N); "
                                   "got --tp {}, --ep-size {}", tp, in.ep));
    if (a.dp && *a.dp != tp)
      throw InputError(fmt::format("--dp: expected {} (= --tp: attention at TP 1 on every rank, the layout serve "
                                   "models), got {}", tp, *a.dp));
  }
  check_tp(m, in.dp_attention ? 1 : tp);
}

// One instance of TP `tp` on `topo`: plain (unless --speculative-only) and EAGLE-3, one report per
// load.
std::vector<ServeReport> simulate_deployment(const ServeArgs& a, const ServeInputs& in, const Topology& topo, int tp) {
  check_layout(a, in, tp);
  if (tp > topo.gpu_count) throw InputError(fmt::format("--tp: {} needs {} GPUs, {} has {}", tp, tp, topo.name, topo.gpu_count));
  ServeReport base;
  base.notes = in.notes;
  std::vector<PricedConfig> configs;
  if (!a.plain_only || !in.spec) configs.push_back(price_config(a, in, topo, tp, false, base));
  if (in.spec) configs.push_back(price_config(a, in, topo, tp, true, base));
  std::vector<ServeReport> reports;
  for (std::size_t l = 0; l < in.loads.size(); ++l) {
    const WorkloadSpec& w = in.loads[l];
    ServeReport r = base;
    r.model = in.target.name;
    r.draft_model = in.mtp ? mtp_draft_name(in.target.name) : in.draft ? in.draft->name : "";
    r.topology = topo.name;
    r.gpu = topo.gpu.name;
    r.engine = to_string(in.engine);
    r.strategy = a.strategy.empty() ? engine_strategy(in.engine) : a.strategy;
    r.tp = tp;
    r.ep = in.ep;
    r.dp_attention = in.dp_attention;
    r.a2a = in.a2a;
    r.weights = in.formats.describe(in.target.is_moe());
    r.workload = w;
    r.workload_text = fmt::format(
        "{} prompts, {}, request rate {}{}, max concurrency {}, seed {}", w.num_prompts,
        w.lengths_file.empty()
            ? fmt::format("random input {} / output {} tokens (range ratio {:g})", w.input_len, w.output_len, w.range_ratio)
            : "lengths from " + w.lengths_file,
        std::isfinite(w.request_rate) ? fmt::format("{:g}", w.request_rate) : "inf",
        w.burstiness != 1 ? fmt::format(" (burstiness {:g})", w.burstiness) : "",
        w.max_concurrency ? std::to_string(w.max_concurrency) : "none", w.seed);
    r.slo = in.slo;
    r.capacity_axis = in.axis;
    r.traffic = a.traffic;
    r.measured = in.measured;
    r.simulation_s = 0;
    for (PricedConfig& p : configs) {
      ServeCase c = p.base;
      ServeSettings st = p.settings;
      st.max_concurrency = w.max_concurrency;
      st.record_iterations = !a.timeline.empty();
      const auto s0 = std::chrono::steady_clock::now();
      c.run = simulate_serving(in.load_requests[l], *p.costs, st);
      c.metrics = serving_metrics(c.run);
      r.simulation_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      r.cases.push_back(std::move(c));
    }
    if (l == 0) r.simulation_s += base.simulation_s;
    reports.push_back(std::move(r));
  }
  return reports;
}

void run_serve(const ServeArgs& a) {
  for (const std::string* p : {&a.json, &a.csv, &a.timeline, &a.report})
    if (!p->empty()) check_writable(*p);
  const ServeInputs in = resolve_inputs(a);
  // Every topology x TP asked for; with several, those that cannot run are listed, not fatal.
  const bool several = in.topologies.size() * in.tps.size() > 1;
  std::vector<ServeReport> reports;
  std::vector<std::string> skipped;
  for (const Topology& topo : in.topologies)
    for (int tp : in.tps) {
      try {
        for (ServeReport& r : simulate_deployment(a, in, topo, tp)) reports.push_back(std::move(r));
      } catch (const InputError& e) {
        if (!several) throw;
        skipped.push_back(fmt::format("{} TP{}: {}", topo.name, tp, e.what()));
      }
    }
  if (reports.empty()) throw InputError(fmt::format("--topology/--tp: no deployment can run: {}", skipped.front()));
  if (!in.slo.empty()) {
    bool any = false;
    for (const ServeReport& r : reports)
      for (const ServeCase& c : r.cases) any = any || (c.capacity && c.capacity->load);
    if (!any)
      throw InputError(fmt::format("--slo: no configuration meets {} even at the lowest load ({}); relax the bounds or "
                                   "change the deployment",
                                   describe(in.slo), reports.front().cases.front().capacity->limit));
  }
  std::string json = a.json.empty() ? "" : serve_to_json(reports, skipped);
  std::string csv = a.csv.empty() ? "" : serve_requests_csv(reports);
  std::string timeline = a.timeline.empty() ? "" : serve_timeline_json(reports);
  std::string html = a.report.empty() ? "" : render_serve_html_report(reports, skipped);
  write_files_atomic({{a.json, json}, {a.csv, csv}, {a.timeline, timeline}, {a.report, html}});
  fmt::print("{}", serve_to_text(reports, skipped));
}

}  // namespace

void add_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Simulate an engine serving a benchmark's requests: bench_serving's numbers, "
                                          "plain and EAGLE-3, and capacity under a latency target");
  cmd->add_option("--model", a->model, "Target model: a name under models/llm or a config.json")->required();
  cmd->add_option("--topology", a->topology,
                  "Topology presets or files, comma-separated (globs and all as in sweep): one engine instance on each")
      ->required();
  cmd->add_option("--tp", a->tps, "Tensor-parallel sizes of the engine instance: list and/or ranges")->capture_default_str();
  cmd->add_option("--ep-size,--ep", a->ep,
                  "SGLang --ep-size: the routed experts over this many groups of TP / EP ranks (MoE models; divides "
                  "--tp and the experts)")
      ->capture_default_str();
  cmd->add_flag("--enable-dp-attention", a->dp_attention,
                "SGLang --enable-dp-attention: every rank runs attention and the dense layers unsharded on its own "
                "requests, one scheduler per rank, the MoE reached by all-to-all (needs --ep-size = --tp)");
  cmd->add_option("--dp,--dp-size", a->dp, "SGLang --dp with --enable-dp-attention: the attention ranks (= --tp; the default)");
  cmd->add_option("--a2a", a->a2a,
                  "The MoE's all-to-all dispatch and combine with --enable-dp-attention, as run --a2a: auto (DeepEP "
                  "low-latency while the tokens fit it, else normal), deepep_ll, deepep_normal, nccl or ideal")
      ->capture_default_str();
  cmd->add_option("--engine", a->engine, "Serving engine whose scheduler and kernels are simulated: sglang or vllm")
      ->capture_default_str();
  cmd->add_option("--draft", a->draft,
                  "EAGLE-3 head: auto (beside the model, else derived from its dimensions) or a config; mtp: the "
                  "model's own MTP layer (as --speculative-algorithm NEXTN)")
      ->capture_default_str();
  cmd->add_option("--speculative-algorithm", a->speculative_algorithm,
                  "SGLang: EAGLE3 (an EAGLE-3 head, --draft), NEXTN (the model's own MTP layer), or EAGLE (the MTP "
                  "layer on a model that ships one); without --speculative-num-steps ..., SGLang's automatic choice");
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
  cmd->add_option("--request-rate", a->request_rate,
                  "Requests per second (Poisson), or inf: all at once; a list runs each (a load ladder)")
      ->capture_default_str();
  cmd->add_option("--burstiness", a->burstiness, "Gamma shape of the gaps between requests (1: Poisson)")->capture_default_str();
  cmd->add_option("--max-concurrency", a->max_concurrency_list,
                  "The client's cap on requests in flight (0: none); a list runs each (a load ladder)")
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
  cmd->add_option("--traffic", a->traffic, "With --slo: requests per second to serve; prints the instances and GPUs needed");
  cmd->add_option("--compare", a->compare,
                  "A measured result (bench_serving --output-file, vllm bench serve --save-result) beside the "
                  "prediction; its workload is simulated wherever the flags above are not given");
  cmd->add_option("--json", a->json, "Write the results as JSON");
  cmd->add_option("--csv", a->csv, "Write one row per simulated request");
  cmd->add_option("--timeline", a->timeline, "Write the engine's iterations as a Chrome/Perfetto trace");
  cmd->add_option("--report", a->report,
                  "Write a self-contained HTML report: the summary per run, latency distributions, requests in flight, capacity");
  cmd->callback([a, cmd] {
    require_single_process("serve", kNoGpuWork);
    for (const char* flag : {"--num-prompts", "--max-concurrency", "--request-rate", "--burstiness", "--random-input-len",
                             "--random-output-len", "--random-range-ratio", "--dataset-path"})
      if (cmd->count(flag) > 0) a->given.insert(flag);
    run_serve(*a);
  });
}

}  // namespace eaglesim::cli
