// Placeholder: replaced by the real bench-comm command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_bench_comm(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench-comm", "(not built yet)");
  cmd->callback([] { throw InputError("bench-comm: not available in this build yet"); });
}

}  // namespace eaglesim::cli
