// eaglesim inspect TRACE [--json]: what a trace holds, per step.
#include <iostream>

#include "cli/commands.hpp"
#include "core/mpi_launch.hpp"
#include "trace/trace_json.hpp"
#include "trace/trace_stats.hpp"

namespace eaglesim::cli {

void add_inspect(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Summarise a trace: ops by kind, allreduce sizes, GEMM FLOPs and weight bytes per step");
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("trace", *path, "Trace file (eaglesim-trace JSON)")->required();
  cmd->add_flag("--json", *json, "Print JSON instead of a table");
  cmd->callback([path, json] {
    require_single_process("inspect", kNoGpuWork);
    Trace t = read_trace(*path);
    if (*json) std::cout << stats_to_json(t).dump(2) << "\n";
    else std::cout << stats_to_text(t);
  });
}

}  // namespace eaglesim::cli
