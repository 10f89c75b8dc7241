// eaglesim: replay the verify step of EAGLE-3 speculative decoding, on GPUs or simulated.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "core/errors.hpp"

#ifdef EAGLESIM_HAVE_CUDA
#include "cuda/register.hpp"
#endif

int main(int argc, char** argv) {
  using namespace eaglesim;
  // Logs go to stderr so that stdout carries only results (tables, JSON).
  auto logger = spdlog::stderr_color_mt("eaglesim");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%^%l%$: %v");
  spdlog::set_level(spdlog::level::warn);

#ifdef EAGLESIM_HAVE_CUDA
  cuda::register_cuda_part();
#endif

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
  cli::add_bench_comm(app);
  cli::add_calibrate(app);
  cli::add_fidelity(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and usage hint to stderr
    return kExitInput;
  } catch (const InputError& e) {
    spdlog::error("{}", e.what());
    return kExitInput;
  } catch (const DeviceError& e) {
    spdlog::error("{}", e.what());
    return kExitDevice;
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    return kExitBug;
  }
  return kExitOk;
}
