// eaglesim fidelity TRACE[,TRACE...] --topology CALIBRATED.json: runs each trace's verify step
// through the CUDA replay (measured) and the simulator (predicted, with the calibrated topology
// and optionally an uncalibrated preset beside it) for each strategy, and prints the error per
// strategy and op kind and whether every A/B difference keeps its sign. Needs GPUs (exit 3).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/add_norm_flag.hpp"
#include "cli/op_times_flag.hpp"
#include "cli/replay_flags.hpp"
#include "comm/cost_model.hpp"
#include "comm/strategy_facts.hpp"
#include "core/comma_list.hpp"
#include "core/errors.hpp"
#include "backend/backend.hpp"
#include "io/atomic_file.hpp"
#include "report/fidelity_printer.hpp"
#include "report/fitted_models_printer.hpp"
#include "topology/topology.hpp"
#include "trace/trace_json.hpp"

namespace eaglesim::cli {

namespace {

struct FidelityArgs {
  std::string traces;
  std::string topology;
  std::string baseline;
  std::string strategies = "nccl,oneshot,twoshot,fused,quant";
  int ranks = 0;
  ReplayFlags replay;
  std::string op_times = "model";
  bool no_fused_add_norm = false;
  double max_error_pct = 3.0;
  std::string json_out;
};

// A simulator run; nullopt with the reason when the strategy is not supported there.
std::optional<StepResult> simulate(Backend& sim, const Trace& trace, const std::string& strategy, const Topology& topo,
                                   const RunOptions& opts, std::string& why) {
  try {
    return sim.run_step(trace, trace.verify(), strategy, &topo, opts);
  } catch (const StrategyUnsupported& e) {
    why = fmt::format("sim ({}): {}", topo.name, e.what());
    return std::nullopt;
  }
}

void run_fidelity_command(const FidelityArgs& a) {
  if (a.ranks < 0) throw InputError("--ranks: expected 1 or more (0: each trace's tp)");
  if (!(a.max_error_pct > 0)) throw InputError("--max-error: expected a positive percentage");
  const OpTimes op_times = op_times_flag(a.op_times);
  const std::vector<std::string> strategies = parse_strategy_list(a.strategies);
  const Topology topo = read_topology(resolve_topology_path(a.topology));
  if (topo.calibration.empty())
    spdlog::warn("--topology {}: has no calibration tables; the simulator prices everything with its models",
                 topo.name);
  std::optional<Topology> baseline;
  if (!a.baseline.empty()) baseline = read_topology(resolve_topology_path(a.baseline));
  std::vector<std::string> paths = split_comma_list("traces", a.traces);
  std::vector<Trace> traces;
  for (const auto& p : paths) traces.push_back(read_trace(p));
  if (!a.json_out.empty()) check_writable(a.json_out);

  register_builtin_backends();
  std::unique_ptr<Backend> sim = make_backend("sim");
  std::unique_ptr<Backend> cuda = make_backend("cuda");  // DeviceError (exit 3) when not built

  std::vector<FidelityTrace> results;
  for (std::size_t ti = 0; ti < traces.size(); ++ti) {
    const Trace& trace = traces[ti];
    FidelityTrace ft;
    ft.trace = paths[ti];
    ft.ranks = a.ranks > 0 ? a.ranks : trace.meta.tp;
    RunOptions opts;
    opts.ranks = ft.ranks;
    apply_replay_flags(a.replay, opts);
    opts.op_times = op_times;
    opts.fuse_add_norm = !a.no_fused_add_norm;
    opts.kind_marginals = true;  // the per-kind comparison (domain/kind_marginals.hpp)
    opts.replay_kernels = true;  // the calibration describes the replay's kernels, which it is held against
    std::vector<std::string> run_strategies = strategies;
    if (ft.ranks == 1 && run_strategies.size() > 1) {
      ft.notes.push_back(fmt::format("1 rank: no allreduce has a peer, every strategy is the same step; ran {} only",
                                     run_strategies.front()));
      run_strategies.resize(1);
    }
    // One rank of a TP trace: the simulator prices its allreduces as free, while the replay still
    // calls the strategy's one-rank communicator (NCCL copies each buffer: about 1.2 us a call on
    // an H200, 2 % of a Kimi-K2 TP8 rank's step).
    const bool has_allreduce = std::any_of(trace.verify().ops.begin(), trace.verify().ops.end(),
                                           [](const Op& op) { return op.kind == OpKind::allreduce; });
    if (ft.ranks == 1 && has_allreduce && !is_lower_bound(run_strategies.front()))
      ft.notes.push_back(fmt::format("1 rank of a tp={} trace: the simulator prices its allreduces as free, the replay "
                                     "runs them through a one-rank {} communicator; --strategy {} compares the "
                                     "compute alone", trace.meta.tp, run_strategies.front(), lower_bound_strategy()));
    for (const auto& s : run_strategies) {
      FidelityStrategy r;
      r.strategy = s;
      std::string why;
      r.predicted = simulate(*sim, trace, s, topo, opts, why);
      if (baseline) {
        std::string why_base;
        r.baseline = simulate(*sim, trace, s, *baseline, opts, why_base);
        if (!r.baseline && why.empty()) why = why_base;
      }
      if (!r.predicted) {
        r.unsupported = why;
        ft.runs.push_back(std::move(r));
        continue;
      }
      fmt::print(stderr, "fidelity: {} {}: replaying on GPUs...\n", paths[ti], s);
      std::fflush(stderr);
      try {
        r.measured = cuda->run_step(trace, trace.verify(), s, nullptr, opts);
      } catch (const StrategyUnsupported& e) {
        r.unsupported = fmt::format("cuda: {}", e.what());
      }
      for (const auto& n : r.predicted->notes) ft.notes.push_back(fmt::format("{} sim: {}", s, n));
      if (r.measured)
        for (const auto& n : r.measured->notes) ft.notes.push_back(fmt::format("{} cuda: {}", s, n));
      ft.runs.push_back(std::move(r));
    }
    results.push_back(std::move(ft));
  }
  const FidelitySummary summary = summarize(results);
  const std::string base_name = baseline ? baseline->name : "";
  fmt::print("{}", format_fitted_models(topo));
  fmt::print("{}", format_fidelity(results, summary, topo.name, base_name, a.max_error_pct));
  std::fflush(stdout);
  if (!a.json_out.empty()) {
    nlohmann::json j = fidelity_json(results, summary, topo.name, base_name, a.max_error_pct);
    j["fitted_models"] = fitted_models_json(topo);
    write_file_atomic(a.json_out, j.dump(2) + "\n");
  }
}

}  // namespace

void add_fidelity(CLI::App& app) {
  auto a = std::make_shared<FidelityArgs>();
  auto* cmd = app.add_subcommand(
      "fidelity", "Compare the simulator (calibrated topology) with the CUDA replay on real GPUs (needs GPUs)");
  cmd->add_option("traces", a->traces, "Comma-separated trace files")->required();
  cmd->add_option("--topology", a->topology, "Calibrated topology (from eaglesim calibrate)")->required();
  cmd->add_option("--baseline-topology", a->baseline, "Uncalibrated preset to report beside it, e.g. 2x-h200-nvlink");
  cmd->add_option("--strategy", a->strategies, "Comma-separated strategies")->capture_default_str();
  cmd->add_option("--ranks", a->ranks, "GPUs (0: each trace's tp)")->capture_default_str();
  add_replay_flags(cmd, a->replay);
  add_no_fused_add_norm_flag(cmd, a->no_fused_add_norm);
  cmd->add_option("--op-times", a->op_times,
                  "Simulator compute-op times: model (calibration tables; default), auto, measured")
      ->capture_default_str();
  cmd->add_option("--max-error", a->max_error_pct, "Target |error| in percent for the verdict line")
      ->capture_default_str();
  cmd->add_option("--json", a->json_out, "Also write the results as JSON");
  cmd->callback([a] { run_fidelity_command(*a); });
}

}  // namespace eaglesim::cli
