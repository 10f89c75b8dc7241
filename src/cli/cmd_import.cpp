// Placeholder: replaced by the real import command.
#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace eaglesim::cli {

void add_import(CLI::App& app) {
  auto* cmd = app.add_subcommand("import", "(not built yet)");
  cmd->callback([] { throw InputError("import: not available in this build yet"); });
}

}  // namespace eaglesim::cli
