// Placeholder: replaced by the real fidelity command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_fidelity(CLI::App& app) {
  auto* cmd = app.add_subcommand("fidelity", "(not built yet)");
  cmd->callback([] { throw InputError("fidelity: not available in this build yet"); });
}

}  // namespace eaglesim::cli
