// eaglesim calibrate: measures, on this machine's GPUs, what the simulator needs to price the
// given traces (GEMMs over token counts, attention over KV lengths, elementwise ops, the launch
// gap, allreduces in context per strategy) and writes a topology with those tables. Flags and
// traces are checked before any GPU work; without the CUDA part or a GPU it exits 3.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/add_norm_flag.hpp"
#include "cli/commands.hpp"
#include "cli/replay_flags.hpp"
#include "comm/communicator.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "calibration/calibration_plan.hpp"
#include "calibration/calibration_tables.hpp"
#include "calibration/transition_fit.hpp"
#include "calibration/base_preset.hpp"
#include "calibration/gpu_tools.hpp"
#include "calibration/sequence_overhead_fit.hpp"
#include "calibration/designed_grid.hpp"
#include "calibration/model_fit.hpp"
#include "calibration/plan_estimate.hpp"
#include "io/atomic_file.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "sweep/sweep_inputs.hpp"
#include "topology/calibration_keys.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim::cli {

namespace {

struct CalibrateArgs {
  std::string traces, models;
  int tp = 1, tokens = 4;
  std::int64_t kv_len = 2048;
  std::string weight_dtype = "bf16";
  int ranks = 0;
  std::string strategies = "nccl,oneshot,twoshot,fused,quant";
  std::string base;
  std::string output;
  int iters = 7;
  double chain_us = 300;
  double timeout_s = 30;
  bool fit_sequence = false;
  bool no_fused_add_norm = false;
  std::string grid = "coarse";
  std::string grid_models = "shipped";
  std::string grid_tp;  // empty: the calibration traces' tp
  bool dry_run = false;
  std::string attention_fit = "geometry";
};

// --grid-tp: the tensor-parallel degrees whose per-rank widths and head layouts the designed grid
// covers; empty: `traced_tp` alone.
std::vector<int> parse_grid_tp(const std::string& list, int traced_tp) {
  if (list.empty()) return {traced_tp};
  std::vector<int> tps;
  for (const std::string& item : split_comma_list("--grid-tp", list)) {
    std::size_t used = 0;
    int tp = 0;
    try {
      tp = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || tp < 1 || tp > 64)
      throw InputError(fmt::format("--grid-tp: expected tensor-parallel degrees 1..64, got '{}'", item));
    if (std::find(tps.begin(), tps.end(), tp) == tps.end()) tps.push_back(tp);
  }
  return tps;
}

// The models whose widths and head layouts the designed grid covers: every shipped target model
// ("shipped"; EAGLE-3 heads are left out, their layer is a Llama layer of the target's width),
// none ("none"), or the listed configs; each given --model is added. Each is generated in every
// weight format of the calibration traces (`formats`).
std::vector<Trace> grid_family_traces(const CalibrateArgs& a, const std::vector<int>& tps,
                                      const std::vector<DType>& formats) {
  std::vector<std::string> paths;
  if (a.grid_models == "shipped") {
    for (const std::string& name : preset_names("llm")) paths.push_back(resolve_model_path("--grid-models", name));
  } else if (a.grid_models != "none") {
    for (const std::string& item : split_comma_list("--grid-models", a.grid_models))
      paths.push_back(resolve_model_path("--grid-models", item));
  }
  if (!a.models.empty())
    for (const std::string& item : split_comma_list("--model", a.models)) paths.push_back(item);
  std::vector<Trace> traces;
  GenOptions opt;
  opt.tokens = 1;
  for (const std::string& path : paths) {
    const ModelConfig model = read_model_config(path);
    if (model.is_draft()) continue;
    for (int tp : tps) {
      opt.tp = tp;
      try {
        for (DType format : formats) {
          opt.weight_dtype = format;
          traces.push_back(generate_trace(model, opt));
        }
      } catch (const InputError& e) {
        // A model this tp cannot lay out (heads not divisible) has no widths at this tp.
        fmt::print(stderr, "calibrate: --grid-models: {} left out of the grid at tp {} ({})\n", path, tp, e.what());
      }
    }
  }
  return traces;
}

std::vector<Trace> load_traces(const CalibrateArgs& a) {
  std::vector<Trace> traces;
  if (!a.traces.empty())
    for (const auto& path : split_comma_list("--traces", a.traces)) traces.push_back(read_trace(path));
  if (!a.models.empty()) {
    GenOptions opt;
    opt.tp = a.tp;
    opt.tokens = a.tokens;
    opt.kv_len = a.kv_len;
    parse_dtype(a.weight_dtype, opt.weight_dtype);
    for (const auto& path : split_comma_list("--model", a.models)) traces.push_back(generate_trace(read_model_config(path), opt));
  }
  return traces;
}

void run_calibrate_command(const CalibrateArgs& a) {
  if (a.traces.empty() == a.models.empty())
    throw InputError("calibrate: give either --traces T1[,T2...] or --model CONFIG[,CONFIG...] (exactly one)");
  if (a.ranks < 0) throw InputError(fmt::format("--ranks: expected 1 or more, got {}", a.ranks));
  if (a.iters < 1 || a.iters > 1000) throw InputError("--iters: expected 1..1000");
  check_timeout_flag(a.timeout_s);
  if (!(a.chain_us >= 50 && a.chain_us <= 20000))
    throw InputError(fmt::format("--chain-us: expected 50..20000 (µs one measured graph runs), got {}", a.chain_us));
  const std::vector<Trace> traces = load_traces(a);
  int ranks = a.ranks;
  if (ranks == 0)
    for (const Trace& t : traces) ranks = std::max(ranks, t.meta.tp);
  CalibrationPlanOptions po;
  po.ranks = ranks;
  if (ranks > 1) po.strategies = parse_strategy_list(a.strategies);
  std::optional<Topology> base;
  if (!a.base.empty()) base = read_topology(resolve_topology_path(a.base));
  if (a.dry_run && !base)
    throw InputError("--dry-run: needs --base PRESET or FILE (without a GPU there is no GPU name to pick the preset by)");
  if (!a.dry_run) {
    if (a.output.empty()) throw InputError("--output: required (the topology JSON to write), unless --dry-run");
    check_writable(a.output);
  }
  GridDensity density{};
  if (a.attention_fit != "geometry" && a.attention_fit != "roofline")
    throw InputError(fmt::format("--attention-fit: expected geometry or roofline, got '{}'", a.attention_fit));
  if (!parse_grid_density(a.grid, density))
    throw InputError(fmt::format("--grid: expected traces, coarse or full, got '{}'", a.grid));
  {
    int grid_tp = a.models.empty() ? 1 : a.tp;
    for (const Trace& t : traces) grid_tp = std::max(grid_tp, t.meta.tp);
    const std::vector<int> tps = parse_grid_tp(a.grid_tp, grid_tp);
    if (density != GridDensity::traces) po.grid = designed_grid(grid_family_traces(a, tps, grid_weight_dtypes(traces)), density);
    po.grid_gpus = grid_tp;
  }
  CalibrationRequest q = plan_calibration(traces, po);
  q.iters = a.iters;
  q.chain_us = a.chain_us;
  q.timeout_s = a.timeout_s;
  q.fuse_add_norm = !a.no_fused_add_norm;
  q.kind_reduced_layers = kind_reduced_layers(q.compute_layers, q.fuse_add_norm);
  q.progress = [](const std::string& line) {
    fmt::print(stderr, "calibrate: {}\n", line);
    std::fflush(stderr);
  };

  // What will be measured and how long it should take: printed before a run, and all that
  // --dry-run prints.
  const auto print_plan = [&](const std::string& gpu_name) {
    std::size_t n_gemm = 0, n_attn = 0, n_elem = 0;
    for (const Op& op : q.compute)
      (op.kind == OpKind::gemm ? n_gemm : op.kind == OpKind::attention ? n_attn : n_elem)++;
    q.progress(fmt::format("{} on {} x {}: {} GEMM, {} attention, {} elementwise/other points, {} allreduce cases, "
                           "{} in their trace context, {} decoder layers, {} kernel-transition pairs, {} compute layers "
                           "(+ {} without one op kind); base preset {}",
                           traces.size() == 1 ? "1 trace" : fmt::format("{} traces", traces.size()), ranks,
                           gpu_name, n_gemm, n_attn, n_elem, q.allreduce.size(), q.allreduce_contexts.size(),
                           q.allreduce_layers.size(), q.transitions.size(), q.compute_layers.size(),
                           q.kind_reduced_layers.size(), base->name));
    const PlanEstimate e = estimate_plan(q, *base);
    q.progress(fmt::format("plan ({} grid): {} compute points + {} fused add + rmsnorm points, estimated {:.0f} s "
                           "({:.0f} s single ops, {:.0f} s layers, transitions and allreduces)",
                           a.grid, q.compute.size(), q.add_rmsnorm.size(), e.total_s(), e.compute_s, e.cases_s));
  };
  if (a.dry_run) {
    if (base->gpu_count < ranks)
      throw InputError(fmt::format("--base {}: has {} GPU(s), fewer than the {} measured on", base->name,
                                   base->gpu_count, ranks));
    print_plan(base->gpu.name + " (--dry-run: nothing measured, nothing written)");
    return;
  }

  // GPU from here on (DeviceError, exit 3, without the CUDA part or a GPU).
  const GpuInventory inv = run_gpu_inventory();
  if (ranks > inv.count)
    throw InputError(fmt::format("--ranks {}: this machine has {} GPU(s)", ranks, inv.count));
  if (!base) {
    const std::string preset = base_preset_for(inv.gpu_name, ranks);
    if (preset.empty())
      throw InputError(fmt::format("calibrate: no preset describes '{}': pass --base TOPOLOGY for its static fields",
                                   inv.gpu_name));
    base = read_topology(resolve_topology_path(preset));
  }
  if (base->gpu_count < ranks)
    throw InputError(fmt::format("--base {}: has {} GPU(s), fewer than the {} measured on", base->name,
                                 base->gpu_count, ranks));
  print_plan(inv.gpu_name);
  const CalibrationMeasurements m = run_calibrate(q);
  for (std::size_t l = 0; l < m.allreduce_layer_us.size(); ++l) {
    const AllreduceLayerCase& layer = q.allreduce_layers[l];
    q.progress(fmt::format("allreduce {} in {}: {} allreduce{} add {:.2f} us to the layer ({:.2f} us in their "
                           "context chains)", layer.strategy, layer.where, layer.contexts.size(),
                           layer.contexts.size() == 1 ? "" : "s", m.allreduce_layer_us[l],
                           layer_context_sum(layer, m)));
  }
  Topology topo = calibrated_topology(*base, m, build_calibration(q, m, traces));
  topo.calibration.fitted = fit_compute_models(q, m, topo.gpu, a.attention_fit == "geometry");
  for (auto& [key, f] : topo.calibration.fitted) {
    f.source = fmt::format("measured on {} by eaglesim calibrate ({} grid)", m.device, a.grid);
    q.progress(fmt::format("fitted {}: {:.2f} us + max(bytes / {:.0f} GB/s{}) over {} points, residual rms {:.1f} %, "
                           "max {:.1f} %",
                           key, f.fixed_us, f.bw_gbs, f.tflops > 0 ? fmt::format(", flops / {:.0f} TFLOP/s", f.tflops) : "",
                           f.points, 100 * f.rms_residual, 100 * f.max_residual));
    if (fitted_model_has_geometry(key))
      q.progress(fmt::format("fitted {}: launch geometry + waves x {:.2f} us, busiest CTA / {:.1f} GB/s + its tile "
                             "FLOPs / {:.2f} TFLOP/s, combine {:.2f} us + partials / {:.0f} GB/s",
                             key, f.wave_us, f.block_bw_gbs, f.block_tflops, f.combine_us, f.combine_gbs));
  }
  // Kinds without enough points here (no MLA model in the grid) keep the base preset's fit.
  for (const auto& [key, f] : base->calibration.fitted) topo.calibration.fitted.emplace(key, f);
  for (const LayerTransitionFit& f : fit_transitions_to_layers(q, m, topo))
    q.progress(fmt::format("compute layer {}: {:.2f} us per copy in a chain; its ops {:.2f} us by the tables, "
                           "{} transitions {:+.2f} us by the pair chains, {:+.2f} us {}",
                           f.where, f.measured_us, f.ops_us, f.pairs, f.pairs_us, f.fitted_us,
                           f.fitted ? "fitted" : "(not fitted: not measured, or an op outside the tables)"));
  // A layer fitted on the pairs only it has (stripped of its allreduces, or without one op kind).
  const auto say_own_pairs_fit = [&](const char* what, const LayerTransitionFit& f) {
    q.progress(fmt::format("{} {}: {:.2f} us per copy in a chain; its ops {:.2f} us by the tables, {} transitions "
                           "{:+.2f} us before the fit of the pairs only it has, {:+.2f} us {}",
                           what, f.where, f.measured_us, f.ops_us, f.pairs, f.pairs_us, f.fitted_us,
                           f.fitted ? "fitted" : "(not fitted: not measured, or an op outside the tables)"));
  };
  for (const LayerTransitionFit& f : fit_transitions_to_stripped_layers(q, m, topo)) say_own_pairs_fit("layer", f);
  std::set<std::string> reduced_keys;
  for (const LayerTransitionFit& f : fit_transitions_to_kind_reduced_layers(q, m, topo, reduced_keys))
    say_own_pairs_fit("compute layer", f);
  {
    std::string line;
    for (const KindTransition& k : kind_transitions_from_shapes(topo.calibration.transition_us, reduced_keys))
      line += fmt::format("{}{} {:+.2f} ({} shape pair{}{})", line.empty() ? "" : ", ", k.key, k.after_us, k.shapes,
                          k.shapes == 1 ? "" : "s",
                          std::isnan(k.before_us) ? "" : fmt::format("; pair chains {:+.2f}", k.before_us));
    if (!line.empty())
      q.progress("kernel transitions per kind pair (shapes outside the calibration): the mean of the fitted shape "
                 "entries: " + line);
  }
  if (a.fit_sequence) {
    SequenceFitOptions so;
    so.ranks = ranks;
    so.iters = a.iters;
    so.timeout_s = a.timeout_s;
    so.fuse_add_norm = q.fuse_add_norm;
    so.progress = q.progress;
    const SequenceFit fit = fit_sequence_overhead(traces, topo, so);
    topo.calibration.sequence_overhead_us = fit.overhead_us;
    q.progress(fmt::format("sequence overhead: {:+.3f} us per compute op (least squares over {} verify steps)",
                           fit.overhead_us, fit.cases.size()));
  }
  write_topology(topo, a.output);
  const Calibration& c = topo.calibration;
  fmt::print("wrote {} ({}): {} GEMM points, {} attention tables, {} elementwise tables, {} allreduce tables on {} "
             "ranks, launch gap {:.2f} us, sequence overhead {:+.3f} us per op, measured in {:.0f} s\n",
             a.output, topo.name, c.gemm.size(), c.attention.size(), c.elementwise.size(), c.allreduce.size(),
             c.ranks, c.launch_gap_us.value_or(0.0), c.sequence_overhead_us.value_or(0.0), m.seconds);
  // The keyed tables on one line each: "key value, key value, ..." (`sign`: show + on positives).
  auto print_keyed = [](const char* title, const std::map<std::string, double>& table, bool sign) {
    if (table.empty()) return;
    std::string line;
    for (const auto& [key, us] : table)
      line += fmt::format("{}{} {}", line.empty() ? "" : ", ", key,
                          sign ? fmt::format("{:+.2f}", us) : fmt::format("{:.2f}", us));
    fmt::print("{}: {}\n", title, line);
  };
  print_keyed("allreduces in their trace context (us per call)", c.allreduce_context_us, false);
  print_keyed("kernel transitions (us per op)", c.transition_us, true);
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate",
                                 "Measure this machine's GPUs and write a topology with calibration tables (needs GPUs)");
  cmd->add_option("--traces", a->traces, "Comma-separated traces whose op shapes to measure");
  cmd->add_option("--model", a->models, "Comma-separated HF config.json files to generate traces from (instead of --traces)");
  cmd->add_option("--tp", a->tp, "With --model: tensor-parallel ranks of the generated traces")->capture_default_str();
  cmd->add_option("--tokens", a->tokens, "With --model: verify-step tokens")->capture_default_str();
  cmd->add_option("--kv-len", a->kv_len, "With --model: context length")->capture_default_str();
  cmd->add_option("--weight-dtype", a->weight_dtype, "With --model: bf16, fp8 or int4")
      ->check(CLI::IsMember({"bf16", "fp8", "int4"}))
      ->capture_default_str();
  cmd->add_option("--ranks", a->ranks, "GPUs to measure allreduces on (0: the largest tp of the traces)")
      ->capture_default_str();
  cmd->add_option("--strategy", a->strategies, "Allreduce strategies to measure (when ranks > 1)")->capture_default_str();
  cmd->add_option("--base", a->base, "Preset or topology file whose static fields to keep (default: by GPU name)");
  cmd->add_option("-o,--output", a->output, "Topology JSON to write (required unless --dry-run)");
  cmd->add_flag("--dry-run", a->dry_run,
                "Print what would be measured and the estimated time, then stop: no GPU needed, nothing written "
                "(needs --base)");
  cmd->add_option("--iters", a->iters, "Timed replays per graph (median)")->capture_default_str();
  cmd->add_option("--chain-us", a->chain_us,
                  "How long one measured graph of a compute op's back-to-back copies runs (µs; 3000 instead of 300 moved "
                  "the priced steps by under 1 % on H200: docs/fidelity.md)")
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s, "Seconds a graph replay may take before the run fails")
      ->capture_default_str();
  cmd->add_flag("--fit-sequence", a->fit_sequence,
                "Also replay the traces' verify steps (free allreduces) and fit a per-op sequence overhead "
                "(experimental: docs/fidelity.md)");
  cmd->add_option("--attention-fit", a->attention_fit,
                  "Form of the fitted attention model: geometry (the kernel's launch geometry: waves, busiest CTA, "
                  "combine) or roofline (fixed + max(bytes / BW, flops / F))")
      ->capture_default_str();
  cmd->add_option("--grid", a->grid,
                  "Designed grid measured besides the traces' shapes, for the fitted models: coarse, full, or traces "
                  "(the traces' shapes only)")
      ->capture_default_str();
  cmd->add_option("--grid-models", a->grid_models,
                  "Models whose GEMM widths and head layouts the grid covers: shipped (models/llm), none, or "
                  "comma-separated names or configs (a held-out calibration names its training models)")
      ->capture_default_str();
  cmd->add_option("--grid-tp", a->grid_tp,
                  "Tensor-parallel degrees whose per-rank widths and head layouts the grid covers, e.g. 1,8 (default: "
                  "the traces' tp): one rank of TP8 has 1-8 KV heads, layouts no TP1 model has");
  add_no_fused_add_norm_flag(cmd, a->no_fused_add_norm);
  cmd->callback([a] { run_calibrate_command(*a); });
}

}  // namespace eaglesim::cli
