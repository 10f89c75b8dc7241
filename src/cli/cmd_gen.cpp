// Placeholder: replaced by the real gen command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_gen(CLI::App& app) {
  auto* cmd = app.add_subcommand("gen", "(not built yet)");
  cmd->callback([] { throw InputError("gen: not available in this build yet"); });
}

}  // namespace eaglesim::cli
