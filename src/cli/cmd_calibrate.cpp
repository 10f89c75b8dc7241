// Placeholder: replaced by the real calibrate command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_calibrate(CLI::App& app) {
  auto* cmd = app.add_subcommand("calibrate", "(not built yet)");
  cmd->callback([] { throw InputError("calibrate: not available in this build yet"); });
}

}  // namespace eaglesim::cli
