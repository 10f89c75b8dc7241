#pragma once
// Where exceptions become exit codes (core/errors.hpp), for every executable: eaglesim and
// eaglesim-cuda-replay both run their work through run_with_exit_code, so a given failure exits
// with the same code and message whichever tool hit it.
#include <functional>

#include <CLI/CLI.hpp>

namespace eaglesim::cli {

// Runs `work` (which parses `app`'s command line and does the job) and returns the exit code:
//   0  it finished, or the user asked for --help / --version (CLI11 prints those)
//   2  a bad command line (CLI11 prints the message and a usage hint) or an InputError
//   3  a DeviceError
//   1  any other exception: a bug, logged as an internal error
// Error messages are logged through spdlog's default logger.
int run_with_exit_code(CLI::App& app, const std::function<void()>& work);

}  // namespace eaglesim::cli
