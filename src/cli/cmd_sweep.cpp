// Placeholder: replaced by the real sweep command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand("sweep", "(not built yet)");
  cmd->callback([] { throw InputError("sweep: not available in this build yet"); });
}

}  // namespace eaglesim::cli
