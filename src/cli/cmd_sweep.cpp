// eaglesim sweep: capacity planning over models x topologies x weight dtypes x TP x batch sizes x
// speculative configurations x strategies x acceptance, simulated. Prints the best configuration
// per model and topology against plain decoding, and per batch size, where speculation stops
// paying, lists what cannot run and why, and writes CSV / JSON / a self-contained HTML report on
// request.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/accept_probs_flag.hpp"
#include "cli/add_norm_flag.hpp"
#include "cli/commands.hpp"
#include "comm/all_to_all.hpp"
#include "comm/cost_model.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "core/mpi_launch.hpp"
#include "domain/acceptance_fit.hpp"
#include "domain/acceptance_table.hpp"
#include "io/atomic_file.hpp"
#include "io/streamed_file.hpp"
#include "model/default_eagle3_head.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "report/html_report.hpp"
#include "sweep/parallel_layout.hpp"
#include "sweep/spec_axis.hpp"
#include "sweep/sweep_inputs.hpp"
#include "sweep/sweep_output.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/thread_pool.hpp"
#include "trace/speculative.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim::cli {

namespace {

struct SweepArgs {
  std::string models;
  std::string topologies = "all";
  std::string tps = "1,2,4,8";
  std::string eps = "1";
  std::string dp_attention = "off";
  std::string a2a = "auto";
  // Unset (not empty) when not given, so that an empty list is an error naming the flag.
  std::optional<std::string> draft_tokens;  // default 1..8 when no --speculative-* list is given
  std::string batches = "1";
  std::optional<std::string> num_steps, eagle_topk, num_draft_tokens;
  std::string accept_rates;
  std::string accept_lens;
  std::string acceptance_file;
  std::string accept_probs;
  bool engine_cycle = false;
  std::string strategies = "all";
  std::string drafts = "auto";
  std::string weight_dtypes = "bf16";
  std::string kv_lens = "4096";
  double gpu_mem_util = 0.9;
  int jobs = 0;
  bool no_fused_add_norm = false;
  bool best_only = false;
  bool allow_lossy = false;
  std::string csv, json, report;
};

// --draft: "auto" (the head beside each model, else one derived from its dimensions), "none", one
// config for every model, or one per model in --model order ("none" allowed per position).
constexpr const char* kDerivedHead = "<derived>";
constexpr const char* kMtpDraft = "<mtp>";
std::vector<std::string> draft_paths(const SweepArgs& a, const std::vector<std::string>& model_paths) {
  std::vector<std::string> out(model_paths.size());
  if (a.drafts == "auto") {
    for (std::size_t i = 0; i < model_paths.size(); ++i) {
      out[i] = find_draft_beside(model_paths[i]);
      if (out[i].empty()) out[i] = kDerivedHead;
    }
    return out;
  }
  if (a.drafts == "none") return out;
  if (a.drafts == "mtp") return std::vector<std::string>(model_paths.size(), kMtpDraft);
  const std::vector<std::string> items = split_comma_list("--draft", a.drafts);
  if (items.size() != 1 && items.size() != model_paths.size())
    throw InputError(fmt::format("--draft: expected auto, none, one config or one per model ({}), got {} items",
                                 model_paths.size(), items.size()));
  for (std::size_t i = 0; i < model_paths.size(); ++i) {
    const std::string& item = items[items.size() == 1 ? 0 : i];
    out[i] = item == "none" ? "" : item == "mtp" ? kMtpDraft : resolve_model_path("--draft", item);
  }
  return out;
}

std::vector<Acceptance> acceptances(const SweepArgs& a) {
  std::vector<Acceptance> out;
  if (!a.accept_rates.empty())
    for (double v : parse_number_list("--accept-rate", a.accept_rates, 0.0, 1.0))
      out.push_back({Acceptance::Mode::rate, v});
  if (!a.accept_lens.empty())
    for (double v : parse_number_list("--accept-len", a.accept_lens, 1.0, 1e6))
      out.push_back({Acceptance::Mode::length, v});
  if (out.empty() && a.accept_probs.empty()) out.push_back({Acceptance::Mode::rate, 0.7});
  return out;
}

// The configuration axis from --draft-tokens and the --speculative-* lists (SGLang's rules).
SpecAxis spec_axis(const SweepArgs& a) {
  SpecAxisLists lists;
  const bool spec = a.num_steps || a.eagle_topk || a.num_draft_tokens;
  const std::optional<std::string> chains = !a.draft_tokens && !spec ? std::optional<std::string>("1..8") : a.draft_tokens;
  if (chains) lists.chain_draft_tokens = parse_int_axis("--draft-tokens", *chains, 1, kMaxSpecSteps);
  if (a.num_steps) lists.num_steps = parse_int_axis("--speculative-num-steps", *a.num_steps, 1, kMaxSpecSteps);
  if (a.eagle_topk) lists.eagle_topk = parse_int_axis("--speculative-eagle-topk", *a.eagle_topk, 1, kMaxSpecTopk);
  if (a.num_draft_tokens)
    lists.num_draft_tokens =
        parse_int_axis("--speculative-num-draft-tokens", *a.num_draft_tokens, 1, kMaxSpecDraftTokens);
  SpecAxis axis = build_spec_axis(lists);
  for (const SkippedSpecConfig& s : axis.skipped)
    spdlog::info("sweep: skipping num_steps {}, eagle_topk {}, num_draft_tokens {}: {}", s.config.num_steps,
                 s.config.eagle_topk, s.config.num_draft_tokens, s.reason);
  return axis;
}

void run_sweep_command(const SweepArgs& a) {
  // Fail on unusable output paths before any work.
  for (const std::string* path : {&a.csv, &a.json, &a.report})
    if (!path->empty()) check_writable(*path);
  if (a.best_only && !a.report.empty())
    throw InputError("--report: the report's explorer draws every row, which --best-only does not keep; drop one "
                     "of them (the CSV, -o, has every row either way)");

  SweepRequest rq;
  {
    std::vector<bool> dp;
    for (const std::string& item : split_comma_list("--dp-attention", a.dp_attention)) {
      if (item != "off" && item != "on")
        throw InputError(fmt::format("--dp-attention: expected off, on or off,on, got '{}'", item));
      if (std::find(dp.begin(), dp.end(), item == "on") == dp.end()) dp.push_back(item == "on");
    }
    LayoutAxis layouts = build_layout_axis(parse_int_axis("--tp", a.tps, 1, 1024), parse_int_axis("--ep", a.eps, 1, 1024), dp);
    for (const SkippedLayout& k : layouts.skipped)
      spdlog::info("sweep: skipping {}: {}", layout_label(k.layout), k.reason);
    rq.layouts = std::move(layouts.layouts);
    rq.skipped_layouts = std::move(layouts.skipped);
  }
  check_all_to_all_strategy(a.a2a);
  rq.a2a = a.a2a;
  rq.batches = parse_int_axis("--batch", a.batches, 1, kMaxGenBatch);
  SpecAxis axis = spec_axis(a);
  rq.draft_tokens.clear();
  rq.spec_configs = std::move(axis.configs);
  rq.skipped_configs = std::move(axis.skipped);
  rq.acceptances = acceptances(a);
  if (!a.accept_probs.empty()) rq.accept_probs = parse_accept_probs_flag(a.accept_probs);
  if (!a.acceptance_file.empty()) {
    rq.acceptance_table = read_acceptance_table(a.acceptance_file);
    // Without a rate of the user's, configurations the table does not measure are priced at the
    // rate its entries imply, not at an assumed default.
    if (a.accept_rates.empty() && a.accept_lens.empty() && a.accept_probs.empty())
      if (const auto fit = fit_acceptance_rate(*rq.acceptance_table)) {
        rq.acceptances = {{Acceptance::Mode::rate, fit->rate}};
        rq.notes.push_back(fmt::format("acceptance: configurations without a measurement are priced by the tree "
                                       "model at {} (E marked 'model' in the tables)",
                                       fit->describe()));
      }
  }
  rq.engine_cycle = a.engine_cycle;
  rq.strategies = parse_strategy_list(a.strategies);
  rq.weight_dtypes = parse_dtype_list("--weight-dtype", a.weight_dtypes);
  for (DType d : rq.weight_dtypes)
    if (d != DType::bf16 && d != DType::fp8 && d != DType::int4)
      throw InputError(fmt::format("--weight-dtype: expected bf16, fp8 or int4, got {}", to_string(d)));
  // Context lengths: an axis of its own, one sweep per length (a list, not a range: each length
  // is a full sweep).
  std::vector<std::int64_t> kv_lens;
  for (const std::string& item : split_comma_list("--kv-len", a.kv_lens)) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (errno != 0 || end == item.c_str() || *end != '\0' || v < 1 || v > kMaxKvLen)
      throw InputError(fmt::format("--kv-len: expected integers in [1, {}], comma-separated, got '{}'", kMaxKvLen, item));
    if (std::find(kv_lens.begin(), kv_lens.end(), v) == kv_lens.end()) kv_lens.push_back(v);
  }
  if (kv_lens.size() > 1 && (!a.json.empty() || !a.report.empty()))
    throw InputError(fmt::format("--kv-len: {} context lengths make {} sweeps; --json and --report describe one: give "
                                 "one length per run for them (the CSV, -o, has every length, with a kv_len column)",
                                 kv_lens.size(), kv_lens.size()));
  rq.gpu_mem_util = a.gpu_mem_util;
  rq.fuse_add_norm = !a.no_fused_add_norm;
  if (a.jobs < 0) throw InputError(fmt::format("-j/--jobs: expected 0 (all cores) or a positive count, got {}", a.jobs));
  rq.threads = a.jobs;
  rq.progress = true;

  std::vector<std::string> model_paths;
  for (const std::string& item : split_comma_list("--model", a.models)) {
    const std::string path = resolve_model_path("--model", item);
    if (std::find(model_paths.begin(), model_paths.end(), path) == model_paths.end()) model_paths.push_back(path);
  }
  const std::vector<std::string> drafts = draft_paths(a, model_paths);
  for (std::size_t i = 0; i < model_paths.size(); ++i) {
    SweepModel m{read_model_config(model_paths[i]), std::nullopt};
    // The sweep prices its --weight-dtype list for every model; `gen` lays a checkpoint out as
    // its quantization_config says. Say so when they differ.
    const auto& q = m.target.quantization;
    const bool same_formats = q && std::all_of(rq.weight_dtypes.begin(), rq.weight_dtypes.end(), [&](DType d) {
      return q->formats == LinearFormats::all(d);
    });
    if (q && !same_formats)
      spdlog::warn("{}: the checkpoint's quantization_config gives {} ({}); sweep prices every linear layer in "
                   "--weight-dtype ({}); gen reads the checkpoint's formats",
                   m.target.name, q->formats.describe(m.target.is_moe()), q->summary, a.weight_dtypes);
    if (drafts[i] == kMtpDraft) {
      if (m.target.mtp_layers < 1)
        throw InputError(fmt::format("--draft: mtp needs a model with a multi-token-prediction layer "
                                     "(num_nextn_predict_layers in its config); {} has none",
                                     m.target.name));
      m.mtp = true;
    } else if (drafts[i] == kDerivedHead) {
      m.draft = default_eagle3_head(m.target);
      m.draft_derived = true;
    } else if (!drafts[i].empty()) {
      m.draft = read_model_config(drafts[i]);
      if (!m.draft->is_draft())
        throw InputError(fmt::format("--draft: {} is not an EAGLE-3 head (model_type {})", drafts[i], m.draft->model_type));
      spdlog::info("{}: EAGLE-3 head {}", m.target.name, m.draft->name);
    }
    rq.models.push_back(std::move(m));
  }

  std::vector<std::string> topo_paths;
  for (const std::string& item : split_comma_list("--topology", a.topologies))
    for (const std::string& path : expand_topology_item("--topology", item))
      if (std::find(topo_paths.begin(), topo_paths.end(), path) == topo_paths.end()) topo_paths.push_back(path);
  for (const std::string& path : topo_paths) rq.topologies.push_back(read_topology(path));

  // The CSV is written as the rows are built, to a temporary renamed into place with the other
  // outputs once all are complete, so a failure still leaves no partial set.
  StreamedFile csv(a.csv);
  if (csv.wanted()) {
    csv.append(sweep_csv_header());
    rq.row_sink = [&csv](const SweepResults& res, const SweepRow& row) { csv.append(sweep_csv_line(res, row)); };
  }
  // Several lengths print only the tables, which need no rows kept.
  rq.keep_rows = !a.best_only && kv_lens.size() == 1;
  rq.allow_lossy = a.allow_lossy;
  std::string tables, json, html;
  std::size_t combinations = 0;
  double elapsed_s = 0;
  int threads = 1;
  for (std::int64_t kv : kv_lens) {
    rq.kv_len = kv;
    const SweepResults results = run_sweep(rq);
    if (kv_lens.size() > 1) tables += fmt::format("{}== context {} tokens per request\n\n", tables.empty() ? "" : "\n", kv);
    tables += sweep_to_table(results);
    if (!a.json.empty()) json = sweep_json_text(results);
    if (!a.report.empty()) html = render_sweep_html_report(results);
    combinations += results.counts.combinations;
    elapsed_s += results.elapsed_s;
    threads = results.threads;
  }
  OutputFile csv_file{a.csv, "", csv.wanted() ? csv.finish() : ""};
  write_files_atomic({csv_file, {a.json, json}, {a.report, html}});

  fmt::print("{}", tables);
  fmt::print("\nSwept {} combinations in {:.2f} s on {} threads.\n", combinations, elapsed_s, threads);
}

}  // namespace

void add_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Capacity planning: price every model x topology x TP x batch x speculative config x strategy x acceptance");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("--model", a->models, "Model configs: names in models/llm (kimi-k2-instruct) or paths, comma-separated")
      ->required();
  cmd->add_option("--topology", a->topologies,
                  "Topologies: preset names, paths or globs (\"8x-*\", \"my/*.json\"), comma-separated; all = every preset")
      ->capture_default_str();
  cmd->add_option("--tp", a->tps, "Tensor-parallel sizes: list and/or ranges (1,2,4,8 or 1..8)")->capture_default_str();
  cmd->add_option("--ep", a->eps,
                  "Expert-parallel sizes (SGLang --ep-size): list and/or ranges; each dividing a TP of --tp (MoE models)")
      ->capture_default_str();
  cmd->add_option("--dp-attention", a->dp_attention,
                  "Data-parallel attention (SGLang --enable-dp-attention, with EP = TP): off, on, or off,on for both")
      ->capture_default_str();
  cmd->add_option("--a2a", a->a2a, "All-to-all strategy of the MoE's dispatch and combine with --dp-attention on (as run --a2a)")
      ->capture_default_str();
  cmd->add_option("--draft-tokens", a->draft_tokens,
                  "Chains of N draft tokens (num_steps N, eagle_topk 1, num_draft_tokens N + 1): list and/or ranges "
                  "(default 1..8 when no --speculative-* list is given)");
  cmd->add_option("--batch", a->batches, "Concurrent requests per step: list and/or ranges (1,8,32,64)")
      ->capture_default_str();
  cmd->add_option("--speculative-num-steps", a->num_steps, "SGLang's draft steps per cycle S: list and/or ranges");
  cmd->add_option("--speculative-eagle-topk", a->eagle_topk,
                  "SGLang's candidates per expanded node K: list and/or ranges (default 1)");
  cmd->add_option("--speculative-num-draft-tokens", a->num_draft_tokens,
                  "SGLang's tokens verified per request D: list and/or ranges (default S + 1 at K = 1); "
                  "combinations SGLang would not run are skipped and counted");
  cmd->add_option("--accept-rate", a->accept_rates,
                  "Per-position acceptance rates a (chain: E = (1-a^(N+1))/(1-a); trees: the tree model), "
                  "comma-separated (default 0.7 when no --accept-len or --accept-probs)");
  cmd->add_option("--accept-len", a->accept_lens, "Mean accepted tokens per cycle E, comma-separated");
  cmd->add_option("--acceptance", a->acceptance_file,
                  "Measured accept lengths per configuration and batch (JSON, docs/acceptance.md): an entry gives E "
                  "for its configuration, else the rate or --accept-probs does");
  cmd->add_option("--accept-probs", a->accept_probs,
                  "Tree model: probability that the target's token is the draft's rank-r candidate, comma-separated "
                  "by rank, '/' between depths (one more acceptance entry)");
  cmd->add_flag("--engine-cycle", a->engine_cycle,
                "Price the engine's whole cycle: the draft-extend pass and the per-cycle ops (gen --engine-cycle)");
  cmd->add_option("--strategy", a->strategies, "Allreduce strategies, comma-separated, or all")->capture_default_str();
  cmd->add_option("--draft", a->drafts,
                  "Drafts: auto (MODEL-eagle3.json beside each model, else an EAGLE-3 head derived from its "
                  "dimensions), none, mtp (the model's own MTP layer), one config for all, or one per model")
      ->capture_default_str();
  cmd->add_option("--weight-dtype", a->weight_dtypes, "Target weight dtypes swept: bf16, fp8, int4 (comma-separated)")
      ->capture_default_str();
  cmd->add_option("--kv-len", a->kv_lens,
                  "Context lengths of every request, comma-separated (one sweep per length): attention cost and the "
                  "batch's KV cache in the memory check")
      ->capture_default_str();
  cmd->add_option("--gpu-mem-util", a->gpu_mem_util,
                  "Fraction of GPU memory weights + KV cache may use (the rest: context, activations, buffers)")
      ->capture_default_str();
  add_no_fused_add_norm_flag(cmd, a->no_fused_add_norm);
  cmd->add_option("-j,--jobs", a->jobs, "Threads (0 = all cores)")->capture_default_str();
  cmd->add_option("-o,--output", a->csv, "Write every combination as CSV (streamed: memory does not grow with it)");
  cmd->add_flag("--allow-lossy", a->allow_lossy,
                "Let a lossy strategy (quant: fp8 on the wire) be a best configuration; by default it is priced and "
                "left out of the picks");
  cmd->add_flag("--best-only", a->best_only,
                "Keep only the best configurations, not every row (memory bounded whatever the grid); the CSV "
                "still has every row, the JSON only the picks; not with --report");
  cmd->add_option("--json", a->json, "Write the results as JSON (docs/sweep.md)");
  cmd->add_option("--report", a->report, "Write a self-contained HTML report");
  cmd->callback([a] {
    require_single_process("sweep", kNoGpuWork);
    run_sweep_command(*a);
  });
}

}  // namespace eaglesim::cli
