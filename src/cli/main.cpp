// eaglesim: replay the verify step of EAGLE-3 speculative decoding, on GPUs or simulated.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "cli/exit_code.hpp"
#include "cli/stderr_logger.hpp"

int main(int argc, char** argv) {
  using namespace eaglesim;
  cli::install_stderr_logger();  // stdout carries only results (tables, JSON)

  // The CUDA part is not linked in: the first command that needs a GPU loads it
  // (core/cuda_part_loader.hpp), so planning commands run without the CUDA libraries.

  CLI::App app{"eaglesim: verify-step replay and simulation for tensor-parallel EAGLE-3 speculative decoding"};
  app.set_version_flag("--version", std::string(EAGLESIM_VERSION));
  app.require_subcommand(1);
  app.fallthrough();
  int verbosity = 0;
  std::string log_level;
  app.add_flag("-v,--verbose", verbosity, "More logging on stderr (-v info, -vv debug)");
  app.add_option("--log-level", log_level, "Log level: trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.parse_complete_callback([&] {
    if (!log_level.empty()) spdlog::set_level(spdlog::level::from_str(log_level));
    else if (verbosity >= 2) spdlog::set_level(spdlog::level::debug);
    else if (verbosity == 1) spdlog::set_level(spdlog::level::info);
  });

  cli::add_gen(app);
  cli::add_inspect(app);
  cli::add_run(app);
  cli::add_import(app);
  cli::add_sweep(app);
  cli::add_serve(app);
  cli::add_bench_comm(app);
  cli::add_calibrate(app);
  cli::add_fidelity(app);

  // `eaglesim` alone: what it can do, on stderr (stdout carries only results), as a usage error.
  if (argc == 1) {
    app.name("eaglesim");
    std::fprintf(stderr, "A subcommand is required.\n\n%s", app.help().c_str());
    return 2;
  }
  // Subcommands run inside app.parse (their callbacks), so this covers their errors too.
  return cli::run_with_exit_code(app, [&] { app.parse(argc, argv); });
}
