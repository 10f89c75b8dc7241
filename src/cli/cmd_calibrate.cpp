// eaglesim calibrate: measures, on this machine's GPUs, what the simulator needs to price the
// given traces (GEMMs over token counts, attention over KV lengths, elementwise ops, the launch
// gap, allreduces in context per strategy) and writes a topology with those tables. Flags and
// traces are checked before any GPU work; without the CUDA part or a GPU it exits 3.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/add_norm_flag.hpp"
#include "cli/commands.hpp"
#include "cli/replay_flags.hpp"
#include "comm/cost_model.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "calibration/base_preset.hpp"
#include "calibration/calibration_pipeline.hpp"
#include "calibration/designed_grid.hpp"
#include "calibration/gpu_tools.hpp"
#include "calibration/model_fit.hpp"
#include "calibration/recorded_fit.hpp"
#include "io/atomic_file.hpp"
#include "model/generator.hpp"
#include "model/model_config.hpp"
#include "sweep/sweep_inputs.hpp"
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
  std::string from_recordings;
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

// The flags checked before any trace is read, in the order their messages are given.
void check_calibrate_flags(const CalibrateArgs& a) {
  if (a.traces.empty() == a.models.empty())
    throw InputError("calibrate: give either --traces T1[,T2...] or --model CONFIG[,CONFIG...] (exactly one)");
  if (a.ranks < 0) throw InputError(fmt::format("--ranks: expected 1 or more, got {}", a.ranks));
  if (a.iters < 1 || a.iters > 1000) throw InputError("--iters: expected 1..1000");
  check_timeout_flag(a.timeout_s);
  if (!(a.chain_us >= 50 && a.chain_us <= 20000))
    throw InputError(fmt::format("--chain-us: expected 50..20000 (µs one measured graph runs), got {}", a.chain_us));
}

// --ranks, else the largest tp of the traces.
int measured_ranks(const CalibrateArgs& a, const std::vector<Trace>& traces) {
  int ranks = a.ranks;
  if (ranks == 0)
    for (const Trace& t : traces) ranks = std::max(ranks, t.meta.tp);
  return ranks;
}

// --base when given; --dry-run needs it, a run needs a writable --output.
std::optional<Topology> read_base_and_check_output(const CalibrateArgs& a) {
  std::optional<Topology> base;
  if (!a.base.empty()) base = read_topology(resolve_topology_path(a.base));
  if (a.dry_run && !base)
    throw InputError("--dry-run: needs --base PRESET or FILE (without a GPU there is no GPU name to pick the preset by)");
  if (!a.dry_run) {
    if (a.output.empty()) throw InputError("--output: required (the topology JSON to write), unless --dry-run");
    check_writable(a.output);
  }
  return base;
}

// --attention-fit, --grid and the designed grid over --grid-models at --grid-tp.
void set_fit_and_grid_options(const CalibrateArgs& a, const std::vector<Trace>& traces, CalibrationRunOptions& o) {
  GridDensity density{};
  if (a.attention_fit != "geometry" && a.attention_fit != "roofline")
    throw InputError(fmt::format("--attention-fit: expected geometry or roofline, got '{}'", a.attention_fit));
  if (!parse_grid_density(a.grid, density))
    throw InputError(fmt::format("--grid: expected traces, coarse or full, got '{}'", a.grid));
  o.attention_geometry = a.attention_fit == "geometry";
  o.grid_name = a.grid;
  int grid_tp = a.models.empty() ? 1 : a.tp;
  for (const Trace& t : traces) grid_tp = std::max(grid_tp, t.meta.tp);
  const std::vector<int> tps = parse_grid_tp(a.grid_tp, grid_tp);
  if (density != GridDensity::traces)
    o.plan.grid = designed_grid(grid_family_traces(a, tps, grid_weight_dtypes(traces)), density);
  o.plan.grid_gpus = grid_tp;
}

void check_base_gpus(const Topology& base, int ranks) {
  if (base.gpu_count < ranks)
    throw InputError(fmt::format("--base {}: has {} GPU(s), fewer than the {} measured on", base.name,
                                 base.gpu_count, ranks));
}

// The base preset of a run: --base, else the preset of this machine's GPU.
Topology resolve_base(std::optional<Topology> base, const GpuInventory& inv, int ranks) {
  if (!base) {
    const std::string preset = base_preset_for(inv.gpu_name, ranks);
    if (preset.empty())
      throw InputError(fmt::format("calibrate: no preset describes '{}': pass --base TOPOLOGY for its static fields",
                                   inv.gpu_name));
    base = read_topology(resolve_topology_path(preset));
  }
  check_base_gpus(*base, ranks);
  return std::move(*base);
}

void print_calibrate_summary(const std::string& output, const CalibrationRun& run) {
  const Topology& topo = run.topology;
  const Calibration& c = topo.calibration;
  fmt::print("wrote {} ({}): {} GEMM points, {} attention tables, {} elementwise tables, {} allreduce tables on {} "
             "ranks, launch gap {:.2f} us, sequence overhead {:+.3f} us per op, measured in {:.0f} s\n",
             output, topo.name, c.gemm.size(), c.attention.size(), c.elementwise.size(), c.allreduce.size(),
             c.ranks, c.launch_gap_us.value_or(0.0), c.sequence_overhead_us.value_or(0.0), run.measured_s);
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

// --from-recordings: no GPU; the models fitted to recorded steps on --base's GPU.
void run_recorded_fit(const CalibrateArgs& a) {
  if (a.base.empty())
    throw InputError("--base: required with --from-recordings (the preset or topology of the GPU the steps were "
                     "recorded on)");
  if (a.output.empty()) throw InputError("--output: required with --from-recordings (the topology to write)");
  if (!a.traces.empty() || !a.models.empty())
    throw InputError("--from-recordings: fits recorded steps; --traces and --model (shapes to measure) do not apply");
  check_writable(a.output);
  const Topology base = read_topology(resolve_topology_path(a.base));
  std::vector<Trace> traces;
  const std::vector<std::string> files = split_comma_list("--from-recordings", a.from_recordings);
  for (const std::string& f : files) traces.push_back(read_trace(f));
  const RecordedFit fit = fit_recorded_ops(traces, files, base.gpu);
  if (fit.fitted.empty())
    throw InputError(fmt::format("--from-recordings: no kind has {} distinct recorded shapes to fit (record more "
                                 "shapes)", kMinFitPoints));
  const std::string source =
      fmt::format("fitted by eaglesim calibrate --from-recordings to {} recorded step file(s) on {}", files.size(), base.gpu.name);
  write_topology(topology_from_recorded_fit(base, fit, source), a.output);
  fmt::print("wrote {}: {} models fitted to {} recorded ops\n", a.output, fit.fitted.size(), fit.ops);
  for (const auto& [key, n] : fit.points) {
    auto it = fit.fitted.find(key);
    if (it == fit.fitted.end()) {
      fmt::print("  {:<28} {:>3} shapes: too few to fit (priced by the base's model)\n", key, n);
      continue;
    }
    const FittedModel& m = it->second;
    if (m.step_us > 0)  // the grid-bound form (a persistent kernel): its busiest CTA's terms
      fmt::print("  {:<28} {:>3} shapes: fixed {:.2f} us + tiles per CTA x {:.2f} us + KV steps x {:.2f} us + its K/V "
                 "bytes / {:.1f} GB/s, rms residual {:.1f} %, max {:.1f} %\n",
                 key, n, m.fixed_us, m.wave_us, m.step_us, m.block_bw_gbs, 100 * m.rms_residual, 100 * m.max_residual);
    else
      fmt::print("  {:<28} {:>3} shapes: fixed {:.2f} us, {:.0f} GB/s, {:.0f} TFLOP/s, rms residual {:.1f} %, max {:.1f} %\n",
                 key, n, m.fixed_us, m.bw_gbs, m.tflops, 100 * m.rms_residual, 100 * m.max_residual);
  }
}

void run_calibrate_command(const CalibrateArgs& a) {
  if (!a.from_recordings.empty()) {
    run_recorded_fit(a);
    return;
  }
  check_calibrate_flags(a);
  const std::vector<Trace> traces = load_traces(a);
  const int ranks = measured_ranks(a, traces);
  CalibrationRunOptions o;
  o.plan.ranks = ranks;
  if (ranks > 1) o.plan.strategies = parse_strategy_list(a.strategies);
  std::optional<Topology> base = read_base_and_check_output(a);
  set_fit_and_grid_options(a, traces, o);
  o.iters = a.iters;
  o.chain_us = a.chain_us;
  o.timeout_s = a.timeout_s;
  o.fuse_add_norm = !a.no_fused_add_norm;
  o.fit_sequence = a.fit_sequence;
  o.progress = [](const std::string& line) {
    fmt::print(stderr, "calibrate: {}\n", line);
    std::fflush(stderr);
  };
  const CalibrationRequest q = plan_calibration_request(traces, o);
  if (a.dry_run) {
    check_base_gpus(*base, ranks);
    report_calibration_plan(q, traces.size(), base->gpu.name + " (--dry-run: nothing measured, nothing written)",
                            *base, a.grid);
    return;
  }

  // GPU from here on (DeviceError, exit 3, without the CUDA part or a GPU).
  const GpuInventory inv = run_gpu_inventory();
  if (ranks > inv.count)
    throw InputError(fmt::format("--ranks {}: this machine has {} GPU(s)", ranks, inv.count));
  const Topology base_topo = resolve_base(std::move(base), inv, ranks);
  report_calibration_plan(q, traces.size(), inv.gpu_name, base_topo, a.grid);
  const CalibrationRun run = calibrate_topology(q, traces, base_topo, o);
  write_topology(run.topology, a.output);
  print_calibrate_summary(a.output, run);
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
  cmd->add_option("--from-recordings", a->from_recordings,
                  "Comma-separated imported traces (eaglesim import kineto) of an engine's recorded steps: fit the "
                  "models to their ops instead of measuring (no GPU; needs --base and -o)");
  cmd->callback([a] { run_calibrate_command(*a); });
}

}  // namespace eaglesim::cli
