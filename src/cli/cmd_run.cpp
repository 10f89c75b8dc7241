// eaglesim run [TRACE]: one trace, one or more allreduce strategies, the A/B report.
// With no arguments it runs the seed scenario (Kimi-K2 at TP=8 on 8 x RTX PRO 6000 over PCIe 5)
// and says which defaults it used.

#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/accept_probs_flag.hpp"
#include "cli/add_norm_flag.hpp"
#include "cli/commands.hpp"
#include "cli/engine_flags.hpp"
#include "cli/op_times_flag.hpp"
#include "cli/replay_flags.hpp"
#include "comm/all_to_all.hpp"
#include "comm/cost_model.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "domain/acceptance_fit.hpp"
#include "domain/acceptance_resolution.hpp"
#include "backend/backend.hpp"
#include "backend/evaluate.hpp"
#include "io/atomic_file.hpp"
#include "io/data_paths.hpp"
#include "report/html_report.hpp"
#include "report/printers.hpp"
#include "topology/topology.hpp"
#include "sweep/trace_memory_check.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim::cli {

namespace {

constexpr const char* kDefaultTrace = "traces/kimi-k2_tp8_t4.json";
constexpr const char* kDefaultTopology = "8x-rtx-pro-6000-pcie5";
constexpr const char* kDefaultStrategies = "nccl,oneshot,twoshot,fused,quant,ideal";
// Default per-position acceptance of the chain draft. EAGLE-3 (Li et al., "EAGLE-3: Scaling up
// Inference Acceleration of Large Language Models via Training-Time Test", arXiv:2503.01840)
// reports per-position acceptance rates (its n-alpha metric) of roughly 0.7-0.8 on MT-bench for
// its chat targets; 0.7, the low end, is the default because third-party draft heads for large
// MoE targets rarely do better. Override with --accept-rate or --accept-len.
constexpr double kDefaultAcceptRate = 0.7;

struct RunArgs {
  std::string trace;
  std::string topology;
  std::string strategies;
  bool strategies_given = false;  // --strategy passed (an empty list is then an error, not the defaults)
  std::string backend = "sim";
  std::optional<double> accept_rate;
  std::optional<double> accept_len;
  std::string acceptance_file;  // --acceptance: measured accept lengths per configuration
  std::string accept_probs;     // --accept-probs: per-rank acceptance for the tree model
  int draft_tokens = 0;
  int ranks = 0;
  std::string nccl_algo, nccl_proto;
  std::string a2a = "auto";
  int nccl_channels = 0;
  std::string skew_us, rank_slowdown;
  std::string op_times = "auto";
  std::string engine_options;  // --engine-option: the engine strategies' launch options
  bool no_fused_add_norm = false;
  bool ignore_memory = false;
  bool allow_lossy = false;
  bool verbose = false;
  double gpu_mem_util = 0.9;
  ReplayFlags replay;
  std::string json_out, csv_out, timeline_out;
  std::string report_out;  // --report (sweep branch): self-contained HTML report
};

// Default inputs are product data, found where presets are (io/data_paths.hpp).
std::string resolve_repo_file(const std::string& rel) {
  return find_data_file(rel).value_or(rel);  // read_trace names a missing file
}

// A comma-separated list of numbers; `expected` completes "FLAG: expected ..., got 'ITEM'".
std::vector<double> parse_numbers(const std::string& list, const std::string& flag, const char* expected) {
  std::vector<double> out;
  for (const std::string& item : split_comma_list(flag, list)) {
    try {
      std::size_t used = 0;
      double v = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw InputError(fmt::format("{}: expected {}, got '{}'", flag, expected, item));
    }
  }
  return out;
}

std::vector<double> parse_per_rank(const std::string& list, const char* flag) {
  return parse_numbers(list, flag, "comma-separated numbers (one per rank)");
}

void run(const RunArgs& a) {
  std::vector<std::string> defaults_used;
  // Validate outputs first: a run that cannot write its results must fail before doing work.
  for (const std::string* out : {&a.json_out, &a.csv_out, &a.timeline_out, &a.report_out})
    if (!out->empty()) check_writable(*out);

  std::string trace_path = a.trace;
  if (trace_path.empty()) {
    trace_path = resolve_repo_file(kDefaultTrace);
    defaults_used.push_back(fmt::format("trace {}", kDefaultTrace));
  }
  std::string strategy_list = a.strategies;
  if (a.strategies_given && strategy_list.empty())
    throw InputError("--strategy: expected a comma-separated list of strategies or 'all', got an empty string");
  if (strategy_list.empty()) {
    strategy_list = kDefaultStrategies;
    defaults_used.push_back(fmt::format("strategies {}", kDefaultStrategies));
  }
  const std::vector<std::string> strategies = parse_strategy_list(strategy_list);

  if (a.accept_rate && !(*a.accept_rate >= 0 && *a.accept_rate <= 1))
    throw InputError(fmt::format("--accept-rate: expected a number in [0, 1], got {}", *a.accept_rate));
  AcceptanceInputs acceptance_in;
  acceptance_in.accept_len = a.accept_len;
  acceptance_in.accept_rate = a.accept_rate;
  acceptance_in.default_rate = kDefaultAcceptRate;
  if (!a.accept_probs.empty()) acceptance_in.rank_probabilities = parse_accept_probs_flag(a.accept_probs);
  std::optional<AcceptanceTable> acceptance_table;
  std::optional<FittedAcceptanceRate> fitted_rate;
  if (!a.acceptance_file.empty()) {
    acceptance_table = read_acceptance_table(a.acceptance_file);
    acceptance_in.table = &*acceptance_table;
    // A configuration the table does not measure is priced at the rate its entries imply.
    fitted_rate = fit_acceptance_rate(*acceptance_table);
    if (fitted_rate) {
      acceptance_in.default_rate = fitted_rate->rate;
      acceptance_in.default_rate_label = "fitted to " + acceptance_table->file;
    }
  }
  // Whether the default rate is used is known once the trace gives the configuration; it is
  // listed in this place among the defaults.
  const std::size_t accept_default_at = defaults_used.size();

  if (a.backend != "cuda") require_single_process("run --backend " + a.backend, kNoGpuWork);
  std::unique_ptr<Backend> backend = make_backend(a.backend);
  std::optional<Topology> topo;
  if (!a.topology.empty()) {
    topo = read_topology(resolve_topology_path(a.topology));
  } else if (a.backend != "cuda") {
    topo = read_topology(resolve_topology_path(kDefaultTopology));
    defaults_used.push_back(fmt::format("topology {}", kDefaultTopology));
  }

  const Trace trace = read_trace(trace_path);

  // Flags that would change the step's shape are refused: the trace's ops are one shape, and
  // pricing another configuration or rank count on them would answer a different question.
  if (a.draft_tokens > 0 && a.draft_tokens + 1 != trace.meta.tokens)
    throw InputError(fmt::format(
        "--draft-tokens {}: {} verifies {} tokens per request (N = {}); a chain of {} drafts verifies {}: generate "
        "that step (eaglesim gen --model {} --tp {} --tokens {} ...) and run it",
        a.draft_tokens, trace_path, trace.meta.tokens, trace.meta.tokens - 1, a.draft_tokens, a.draft_tokens + 1,
        trace.meta.model, trace.meta.tp, a.draft_tokens + 1));
  if (a.ranks > 0 && a.ranks != trace.meta.tp && a.backend != "cuda")
    throw InputError(fmt::format(
        "--ranks {}: {} holds one rank's share of TP{} (its GEMM, attention and allreduce shapes); TP{} has other "
        "shapes: generate them (eaglesim gen --model {} --tp {} ...) and run that trace",
        a.ranks, trace_path, trace.meta.tp, a.ranks, trace.meta.model, a.ranks));
  if (!(a.gpu_mem_util > 0 && a.gpu_mem_util <= 1))
    throw InputError(fmt::format("--gpu-mem-util: expected a fraction in (0, 1], got {}", a.gpu_mem_util));

  // Where the model cannot be loaded there is nothing to price, unless asked to.
  std::vector<std::string> scenario_notes;
  if (topo) {
    const TraceMemoryCheck mem = check_trace_memory(trace, *topo, a.gpu_mem_util);
    if (mem.verdict && !mem.verdict->fits) {
      if (!a.ignore_memory)
        throw InputError(fmt::format("--topology {}: {} at TP{} does not fit: {}; --ignore-memory prices it anyway",
                                     topo->name, trace.meta.model, trace.meta.tp, mem.verdict->reason));
      scenario_notes.push_back(fmt::format("memory: {} at TP{} does not fit: {}; priced anyway (--ignore-memory)",
                                           trace.meta.model, trace.meta.tp, mem.verdict->reason));
    } else if (!mem.verdict && trace.meta.source == "generated") {
      scenario_notes.push_back("memory: not checked (" + mem.unchecked_why + ")");
    }
  }

  // A v2 trace names its speculative configuration and batch (SGLang's terms); a v1 trace is one
  // request with a chain of N drafts: num_steps N, eagle_topk 1, num_draft_tokens N + 1. An
  // explicit --draft-tokens asks for that chain.
  acceptance_in.batch = trace.meta.batch_size();
  SpecConfig spec = chain_config(scenario_draft_tokens(trace, a.draft_tokens));
  if (const auto& sp = trace.meta.speculative; sp && sp->method != SpecMethod::none && a.draft_tokens == 0)
    spec = SpecConfig{sp->num_steps, sp->eagle_topk, sp->num_draft_tokens};
  const ResolvedAcceptance acceptance = resolve_acceptance(spec, acceptance_in);
  if (acceptance.default_rate)
    defaults_used.insert(defaults_used.begin() + static_cast<std::ptrdiff_t>(accept_default_at),
                         fitted_rate ? "accept rate " + fitted_rate->describe() + " (no entry for this configuration)"
                                     : fmt::format("accept rate a={} per position (EAGLE-3 paper range 0.7-0.8)",
                                                   kDefaultAcceptRate));

  EvaluateRequest req;
  req.trace = &trace;
  req.topo = topo ? &*topo : nullptr;
  req.strategies = strategies;
  req.acceptance = acceptance.report_acceptance();
  req.draft_tokens = a.draft_tokens;
  req.trace_file = trace_path;
  req.options.ranks = a.ranks;
  req.options.nccl.algo = a.nccl_algo;
  req.options.a2a = a.a2a;
  req.options.nccl.proto = a.nccl_proto;
  req.options.nccl.channels = a.nccl_channels;
  if (!a.skew_us.empty()) req.options.rank_skew_us = parse_per_rank(a.skew_us, "--skew-us");
  if (!a.rank_slowdown.empty()) req.options.rank_compute_scale = parse_per_rank(a.rank_slowdown, "--rank-slowdown");
  req.options.op_times = op_times_flag(a.op_times);
  req.options.engine = resolve_engine_options(a.engine_options, strategies, trace.meta.model);
  req.options.fuse_add_norm = !a.no_fused_add_norm;
  apply_replay_flags(a.replay, req.options);
  req.options.want_timeline = !a.timeline_out.empty() || !a.report_out.empty();  // the report draws a waterfall
  const int ranks = a.ranks > 0 ? a.ranks : trace.meta.tp;
  if (!req.options.rank_skew_us.empty() && static_cast<int>(req.options.rank_skew_us.size()) != ranks)
    throw InputError(fmt::format("--skew-us: expected {} values (one per rank), got {}", ranks,
                                 req.options.rank_skew_us.size()));
  if (!req.options.rank_compute_scale.empty() && static_cast<int>(req.options.rank_compute_scale.size()) != ranks)
    throw InputError(fmt::format("--rank-slowdown: expected {} values (one per rank), got {}", ranks,
                                 req.options.rank_compute_scale.size()));

  req.allow_lossy = a.allow_lossy;
  Report report = evaluate_strategies(*backend, req);
  report.scenario.notes.insert(report.scenario.notes.begin(), scenario_notes.begin(), scenario_notes.end());

  // Build every output before writing any, so a failure leaves no partial set of files.
  std::string json_text, csv_text, timeline_text;
  if (!a.json_out.empty()) json_text = report_to_json(report).dump(2) + "\n";
  if (!a.csv_out.empty()) csv_text = report_to_csv(report);
  if (!a.timeline_out.empty()) timeline_text = report_to_chrome_trace(report);
  const std::string report_html = a.report_out.empty() ? "" : render_html_report(report);

  // Files first, all or none, then the table: a run whose outputs cannot be written prints nothing.
  write_files_atomic({{a.json_out, json_text}, {a.csv_out, csv_text}, {a.timeline_out, timeline_text},
                      {a.report_out, report_html}});
  if (!defaults_used.empty()) {
    std::cout << "defaults:";
    for (std::size_t i = 0; i < defaults_used.size(); ++i) std::cout << (i ? "; " : " ") << defaults_used[i];
    std::cout << "\n";
  }
  std::cout << report_to_table(report, a.verbose);
}

}  // namespace

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run", "Run (simulate or replay) the verify step of a trace under one or more allreduce strategies and "
             "report verify time, comm share, tok/s and speedup over plain decoding");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("trace", a->trace, fmt::format("Trace file (default: {})", kDefaultTrace));
  cmd->add_option("--topology,-t", a->topology,
                  fmt::format("Topology preset name or file (default for sim: {})", kDefaultTopology));
  auto* strategy = cmd->add_option("--strategy,-s", a->strategies,
                  fmt::format("Comma-separated allreduce strategies, or 'all' (eaglesim's own; the engines' dispatch, "
                              "sglang and vllm, by name) (default: {})",
                              kDefaultStrategies));
  cmd->add_option("--backend,-b", a->backend, "sim (cost models) or cuda (real GPUs)")->default_str("sim");
  auto* rate = cmd->add_option("--accept-rate", a->accept_rate,
                               "Per-position acceptance rate a of the chain draft, E = (1-a^(N+1))/(1-a) (default 0.7)");
  auto* len = cmd->add_option("--accept-len", a->accept_len, "Mean accepted tokens per cycle E, in [1, N+1]");
  auto* table = cmd->add_option("--acceptance", a->acceptance_file,
                                "Measured accept lengths per speculative configuration (JSON, docs/acceptance.md): "
                                "the run's configuration's entry gives E, else the tree model does");
  auto* probs = cmd->add_option("--accept-probs", a->accept_probs,
                                "Tree model: probability that the target's token is the draft's rank-r candidate, "
                                "comma-separated by rank, '/' between depths (last depth repeats), e.g. 0.7,0.15/0.6,0.15");
  rate->excludes(len);
  len->excludes(table);
  probs->excludes(rate);
  probs->excludes(len);
  cmd->add_option("--draft-tokens,-n", a->draft_tokens,
                  "Price the trace's step as a chain of N drafts (N + 1 must be the tokens it verifies; default: the "
                  "trace's configuration)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--ranks", a->ranks, "cuda: GPUs to replay on (default: the trace's tp); sim runs the trace's tp")->check(CLI::Range(1, kMaxTp));
  cmd->add_option("--nccl-algo", a->nccl_algo, "Force the NCCL model's algorithm")->check(CLI::IsMember({"ring", "tree"}));
  cmd->add_option("--a2a", a->a2a,
                  "sim: what runs an expert-parallel trace's MoE dispatch and combine: deepep_ll (DeepEP's "
                  "low-latency kernels, at most 128 tokens a rank), deepep_normal (DeepEP's high-throughput kernels), "
                  "auto (deepep_ll while the tokens fit it, else deepep_normal, as SGLang's --deepep-mode auto), "
                  "nccl (all-to-all by grouped send/recv) or ideal (free)")
      ->check(CLI::IsMember(all_to_all_strategy_names()))
      ->capture_default_str();
  cmd->add_option("--nccl-proto", a->nccl_proto, "Force the NCCL model's protocol")
      ->check(CLI::IsMember({"LL", "LL128", "Simple"}));
  cmd->add_option("--nccl-channels", a->nccl_channels,
                  "Run NCCL on this many channels (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS; default: as NCCL's search)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--skew-us", a->skew_us, "sim: per-rank start offsets in us, e.g. 0,0,5,0,0,0,0,20");
  cmd->add_option("--rank-slowdown", a->rank_slowdown, "sim: per-rank compute slowdown factors, e.g. 1,1,1.1,1,1,1,1,1");
  cmd->add_option("--op-times", a->op_times,
                  "Compute-op durations: auto (measured if the trace was imported, else model), model, measured")
      ->check(CLI::IsMember({"auto", "model", "measured"}))
      ->default_str("auto");
  add_engine_option_flag(cmd, a->engine_options);
  add_no_fused_add_norm_flag(cmd, a->no_fused_add_norm);
  cmd->add_flag("--verbose", a->verbose,
                "Print every per-strategy note (fusion counts, kernels, timing method); by default their count");
  cmd->add_flag("--allow-lossy", a->allow_lossy,
                "Let a lossy strategy (quant: fp8 on the wire) be the best; by default it is shown and left out");
  cmd->add_flag("--ignore-memory", a->ignore_memory,
                "Price a model that does not fit in GPU memory at this TP (said in the output) instead of refusing");
  cmd->add_option("--gpu-mem-util", a->gpu_mem_util,
                  "Fraction of GPU memory weights + KV cache may use, for the memory check (as sweep)")
      ->capture_default_str();
  add_replay_flags(cmd, a->replay);
  cmd->add_option("--json", a->json_out, "Write the report as JSON (docs/report-format.md)");
  cmd->add_option("--csv", a->csv_out, "Write the report as CSV");
  cmd->add_option("--timeline", a->timeline_out, "Write the verify-step timelines (Chrome trace JSON, opens in Perfetto)");
  cmd->add_option("--report", a->report_out, "Write a self-contained HTML report (charts, waterfall, table)");
  cmd->callback([a, strategy] {
    register_builtin_backends();
    a->strategies_given = strategy->count() > 0;
    run(*a);
  });
}

}  // namespace eaglesim::cli
