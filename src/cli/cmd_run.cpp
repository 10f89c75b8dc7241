// Placeholder: replaced by the real run command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "(not built yet)");
  cmd->callback([] { throw InputError("run: not available in this build yet"); });
}

}  // namespace eaglesim::cli
