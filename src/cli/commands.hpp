#pragma once
// Each subcommand lives in its own cmd_*.cpp and registers itself on the app here. The callback
// does the work and throws (InputError -> exit 2, DeviceError -> exit 3); main() maps errors to
// exit codes and logs them, so commands never call exit().
#include <CLI/CLI.hpp>

namespace eaglesim::cli {

void add_gen(CLI::App& app);
void add_inspect(CLI::App& app);
void add_run(CLI::App& app);
void add_import(CLI::App& app);
void add_sweep(CLI::App& app);
void add_serve(CLI::App& app);
void add_bench_comm(CLI::App& app);
void add_calibrate(CLI::App& app);
void add_fidelity(CLI::App& app);

}  // namespace eaglesim::cli
